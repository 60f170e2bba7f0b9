"""Downloading a git file at its commit (no mirror): pooch fetches it into the cache and checks the sha256 the
spec pins; a cached file is re-hashed, a tampered one fetched again, a wrong one refused. Served from a local
HTTP server on the loopback address."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from specrun.core.errors import SpecrunError
from specrun.core.plain_yaml import load_plain
from specrun.data import load_split
from tests.conftest import SPECS, plan_of

ROWS = "sentence1\tsentence2\tscore\n" + "".join(f"s{i} one\ts{i} two\t{i % 5}\n" for i in range(6))


@pytest.fixture()
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, list[str]]]:
    """A loopback HTTP server for <root>/<repo>/<revision>/<path>; the URL pattern of the data stage points at it."""
    root = tmp_path / "served"
    root.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            requests.append(self.path)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    monkeypatch.setattr("specrun.data._sources.GIT_RAW_URL",
                        f"http://127.0.0.1:{httpd.server_address[1]}/{{repo}}/{{revision}}/{{path}}")
    monkeypatch.setenv("SPECRUN_CACHE_DIR", str(tmp_path / "cache"))
    try:
        yield root, requests
    finally:
        httpd.shutdown()


def spec_for(tmp_path: Path, sha256: str) -> Path:
    document = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))
    document["sources"]["biosses"] = {
        "type": "git_file", "path": "owner/pairs", "revision": "c" * 40, "licence": "cc0-1.0", "format": "tsv",
        "files": {"train": {"path": "data/pairs.tsv", "sha256": sha256}},
        "columns": {"text1": "sentence1", "text2": "sentence2", "gold": "score"}, "ids": {"prefix": "p-", "width": 2}}
    document["splits"]["test"].pop("fingerprint")
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def test_download_checked_cached_and_refetched(tmp_path: Path, server: tuple[Path, list[str]]) -> None:
    root, requests = server
    served = root / "owner/pairs" / ("c" * 40) / "data"
    served.mkdir(parents=True)
    (served / "pairs.tsv").write_text(ROWS, encoding="utf-8")
    spec = spec_for(tmp_path, hashlib.sha256(ROWS.encode()).hexdigest())
    items = load_split(plan_of(spec), "test", None).items
    assert [item.id for item in items] == [f"p-{i:02d}" for i in range(6)] and len(requests) == 1
    load_split(plan_of(spec), "test", None)
    assert len(requests) == 1  # the cached copy was re-hashed and used
    cached = next((tmp_path / "cache" / "git").rglob("*pairs.tsv"))
    cached.write_text(ROWS.replace("s1 one", "s1 ONE"), encoding="utf-8")
    again = load_split(plan_of(spec), "test", None).items
    assert len(requests) == 2 and again[1].fields["text1"] == "s1 one"  # tampered copy fetched again


def test_download_that_does_not_match_its_pin(tmp_path: Path, server: tuple[Path, list[str]]) -> None:
    root, _ = server
    served = root / "owner/pairs" / ("c" * 40) / "data"
    served.mkdir(parents=True)
    (served / "pairs.tsv").write_text(ROWS, encoding="utf-8")
    spec = spec_for(tmp_path, "0" * 64)
    with pytest.raises(SpecrunError) as raised:
        load_split(plan_of(spec), "test", None)
    line = raised.value.one_line()
    assert "pairs.tsv" in line and "0000000000" in line, line
    assert not list((tmp_path / "cache").rglob("*pairs.tsv"))  # nothing unverified is kept


def test_download_offline_names_the_flag(tmp_path: Path, server: tuple[Path, list[str]]) -> None:
    spec = spec_for(tmp_path, "0" * 64)  # nothing is served at that path: 404
    with pytest.raises(SpecrunError) as raised:
        load_split(plan_of(spec), "test", None)
    assert "pass --data-dir DIR" in raised.value.one_line()


@pytest.mark.slow  # a fresh process
def test_no_cache_downloads_go_to_a_temporary_folder_removed_at_exit(tmp_path: Path,
                                                                     server: tuple[Path, list[str]]) -> None:
    """--no-cache: the file is fetched and checked as usual, but into a temporary folder, never the cache; the
    folder goes with `close` (the run's end) or, at the latest, with the process (atexit)."""
    import subprocess
    import sys

    from specrun.core.workspace import Workspace

    root, requests = server
    served = root / "owner/pairs" / ("c" * 40) / "data"
    served.mkdir(parents=True)
    (served / "pairs.tsv").write_text(ROWS, encoding="utf-8")
    spec = spec_for(tmp_path, hashlib.sha256(ROWS.encode()).hexdigest())
    workspace = Workspace.resolve(no_cache=True)
    items = load_split(plan_of(spec), "test", None, workspace=workspace).items
    assert [item.id for item in items] == [f"p-{i:02d}" for i in range(6)] and len(requests) == 1
    scratch = workspace.downloads()
    assert list(scratch.rglob("*pairs.tsv")) and not (tmp_path / "cache").exists()  # SPECRUN_CACHE_DIR untouched
    workspace.close()
    assert not scratch.exists()

    code = ("from specrun.core.workspace import Workspace; w = Workspace.resolve(no_cache=True); p = w.downloads(); "
            "(p / 'f').write_text('x'); print(p)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    left = Path(done.stdout.strip())
    assert left.name.startswith("specrun-downloads-") and not left.exists()


def test_a_folder_source_downloads_each_pinned_file(tmp_path: Path, server: tuple[Path, list[str]],
                                                   data_dir: Path) -> None:
    """Tatoeba's jpn-eng subset without a mirror: each file of `contents` fetched and checked; a tampered one
    refused."""
    import shutil

    root, requests = server
    served = root / "facebookresearch/LASER" / "74bc6ae7ffb7cba670fe0f428d0ede9f666fb821" / "data/tatoeba/v1"
    served.mkdir(parents=True)
    for lang in ("jpn", "eng"):
        shutil.copy(data_dir / "tatoeba" / f"tatoeba.jpn-eng.{lang}", served)
    from specrun.plan import make_plan
    from specrun.spec import load_spec, subset_specs

    plan = make_plan(subset_specs(load_spec(SPECS / "tatoeba.yaml"), ["jpn-eng"])[0])
    items = load_split(plan, "test", None).items
    assert len(items) == 1000 and len(requests) == 2
    assert items[0].fields["source"] == (data_dir / "tatoeba" / "tatoeba.jpn-eng.jpn").read_text(
        encoding="utf-8").split("\n")[0]
    (served / "tatoeba.jpn-eng.eng").write_text("tampered\n" * 1000, encoding="utf-8")
    for cached in (tmp_path / "cache").rglob("tatoeba.jpn-eng.eng"):
        cached.unlink()
    with pytest.raises(SpecrunError) as raised:
        load_split(plan, "test", None)
    assert "b42129b34e1b" in raised.value.one_line()
