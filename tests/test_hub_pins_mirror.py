"""Per-file sha256 pins of an hf_dataset source with `mirror` files, read by its format (MTEB's retrieval layout,
read by `mteb_retrieval` from a copy of the hub repo): `files:` covers every regular file below the split's folder,
README.md included (it decides which files each config reads), none below a dot-name; written by `import mteb
--data-dir` and `fingerprint --write`, checked before the format reads a byte. A changed, truncated, missing or
unpinned file, or an edited card, is one line naming it with both digests; an unpinned spec runs as before."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.spec import load_spec
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.readers.test_mteb_retrieval_run import make_mteb_repo

PARTS = ["README.md", "corpus/test.parquet", "qrels/test.parquet", "queries/test.jsonl"]


def _pinned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """SciFact imported with --data-dir from an MTEB retrieval snapshot at <data>/scifact/: the spec and the data."""
    data = tmp_path / "data"
    make_mteb_repo(data).rename(data / "scifact")
    (data / "scifact" / ".cache").mkdir()  # what huggingface_hub's local_dir download leaves: never pinned
    (data / "scifact" / ".cache" / "state.lock").write_text("x", encoding="utf-8")
    code, out, err = run_cli(["import", "mteb", "SciFact", "-o", str(tmp_path / "imported"), "--data-dir",
                              str(data)], capsys)
    assert code == 0, err
    return Path(out.strip()), data


def _run(spec: Path, data: Path, tmp_path: Path, output: str = "results") -> list[str]:
    return [str(spec), "--data-dir", str(data), "--adapter", "hashing", "-q", "--output", str(tmp_path / output)]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refused(spec: Path, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], contains: str) -> str:
    code, _, err = run_cli(_run(spec, data, tmp_path, "refused"), capsys)
    line = assert_one_line_error(code, err, contains=contains)
    assert not (tmp_path / "refused").exists()  # nothing written
    return line


def test_import_with_a_snapshot_pins_every_file_of_the_copy_and_the_spec_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys)
    source = load_plain(spec.read_text(encoding="utf-8"))["sources"]["scifact"]
    assert source["mirror"]["format"] == "mteb_retrieval"
    assert source["files"] == {part: _sha(data / "scifact" / part) for part in PARTS}  # .cache: not pinned
    assert load_spec(spec).spec.sources["scifact"].files == source["files"]
    code, out, err = run_cli(["validate", str(spec)], capsys)
    assert code == 0 and ": ok (" in out + err, err
    results = run_ok(_run(spec, data, tmp_path), capsys)
    assert results.scores["test"]["ndcg_at_10"].n > 0
    assert results.provenance.data["test"].files == source["files"]  # every file checked before the read
    report = next((tmp_path / "results").rglob("report.md")).read_text(encoding="utf-8")
    assert all(f"file {name} (sha256 {pin})" in report for name, pin in source["files"].items())


def _flip_a_byte(copy: Path) -> str:
    _flip_a_byte_of(copy / "corpus" / "test.parquet")
    return "corpus/test.parquet"


def _truncate(copy: Path) -> str:
    path = copy / "qrels" / "test.parquet"
    path.write_bytes(path.read_bytes()[:-10])
    return "qrels/test.parquet"


def _edit_the_card(copy: Path) -> str:
    readme = copy / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("queries/test.jsonl", "queries/*.jsonl"),
                      encoding="utf-8")
    return "README.md"


@pytest.mark.parametrize("tamper", [_flip_a_byte, _truncate, _edit_the_card])
def test_a_changed_pinned_file_is_refused_naming_it_and_both_digests(
        tamper: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys)
    pins = load_spec(spec).spec.sources["scifact"].files
    assert pins is not None
    changed = tamper(data / "scifact")
    line = _refused(spec, data, tmp_path, capsys, f"scifact/{changed}: expected sha256 {pins[changed]}, found "
                                                  f"{_sha(data / 'scifact' / changed)}")
    assert "sources.scifact.files" in line


def test_a_missing_pinned_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys)
    (data / "scifact" / "queries" / "test.jsonl").unlink()
    line = _refused(spec, data, tmp_path, capsys, "scifact/queries/test.jsonl: expected sha256 ")
    assert line.endswith("found no such file in the copy; if this copy is the one meant, remove `files:` and run "
                         "`specrun fingerprint SPEC --data-dir D --write`")


def test_an_unpinned_file_under_a_config_folder_is_refused(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys)
    extra = data / "scifact" / "corpus" / "test-2.parquet"
    shutil.copyfile(data / "scifact" / "corpus" / "test.parquet", extra)
    _refused(spec, data, tmp_path, capsys, "scifact/corpus/test-2.parquet: expected sha256 none (not pinned, but "
                                           f"format mteb_retrieval may read it), found {_sha(extra)}")


def test_files_below_a_dot_name_are_neither_pinned_nor_checked(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys)
    (data / "scifact" / ".cache" / "state.lock").write_text("changed", encoding="utf-8")
    (data / "scifact" / ".gitattributes").write_text("*.parquet filter=lfs\n", encoding="utf-8")
    assert run_ok(_run(spec, data, tmp_path), capsys).scores["test"]["ndcg_at_10"].n > 0


def test_an_unpinned_spec_runs_as_before_and_fingerprint_write_pins_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys)
    document = load_plain(spec.read_text(encoding="utf-8"))
    pins = document["sources"]["scifact"].pop("files")
    spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    assert run_ok(_run(spec, data, tmp_path), capsys).scores["test"]["ndcg_at_10"].n > 0
    code, out, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data), "--write"], capsys)
    assert code == 0, err
    assert f"scifact:README.md: {pins['README.md']}" in out
    assert "updated sources.scifact.files" in err
    assert load_plain(spec.read_text(encoding="utf-8"))["sources"]["scifact"]["files"] == pins


def test_online_the_pinned_files_are_downloaded_checked_and_read_by_the_format(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --data-dir: each pinned file of the repo at the commit (hf_hub_download served from the copy),
    checked, then read by `mteb_retrieval` as a local copy; other bytes on the hub are refused in one line."""
    import huggingface_hub

    monkeypatch.delenv("SPECRUN_DATA_DIR", raising=False)  # online: no default data dir (CI sets one)

    import specrun.core.network

    spec, data = _pinned(tmp_path, capsys)
    asked: list[str] = []

    def download(repo_id: str, filename: str, *, repo_type: str, revision: str, local_dir: Path,
                 force_download: bool = False) -> str:
        assert (repo_type, len(revision)) == ("dataset", 40)
        asked.append(filename)
        target = Path(local_dir) / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data / "scifact" / filename, target)
        return str(target)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(specrun.core.network, "hub_unreachable", lambda: None)
    online = [str(spec), "--adapter", "hashing", "-q", "--no-cache", "--cache-dir", str(tmp_path / "cache")]
    assert run_ok([*online, "--output", str(tmp_path / "online")], capsys).scores["test"]["ndcg_at_10"].n > 0
    assert asked == PARTS
    _flip_a_byte(data / "scifact")  # the hub now serves other bytes than those pinned
    code, _, err = run_cli([*online, "--output", str(tmp_path / "refused")], capsys)
    assert_one_line_error(code, err, contains="scifact/corpus/test.parquet: expected sha256 ")
    assert "specrun: note: mteb/scifact@" in err


def test_a_damaged_mirror_download_is_downloaded_again(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A pinned file of an online `mirror` source cut short in the cache (which the hub's download keeps, as the
    real one keeps a file its metadata vouches for) is downloaded again once, and the run has the same numbers."""
    import huggingface_hub

    import specrun.core.network

    monkeypatch.delenv("SPECRUN_DATA_DIR", raising=False)
    spec, data = _pinned(tmp_path, capsys)
    asked: list[str] = []

    def download(repo_id: str, filename: str, *, repo_type: str, revision: str, local_dir: Path,
                 force_download: bool = False) -> str:
        asked.append(f"{filename} afresh" if force_download else filename)
        target = Path(local_dir) / filename
        if force_download or not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data / "scifact" / filename, target)
        return str(target)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(specrun.core.network, "hub_unreachable", lambda: None)
    online = [str(spec), "--adapter", "hashing", "-q", "--cache-dir", str(tmp_path / "cache")]
    first = run_ok([*online, "--output", str(tmp_path / "first")], capsys)
    (damaged,) = (tmp_path / "cache").rglob("corpus/test.parquet")
    damaged.write_bytes(damaged.read_bytes()[:-5])
    asked.clear()
    code, _, err = run_cli([*online, "--output", str(tmp_path / "again")], capsys)
    assert code == 0, err
    assert "fails its pins" in err  # checked, refused; the damaged file and the card fetched afresh, then all kept
    assert asked == [*PARTS, "README.md afresh", "corpus/test.parquet afresh", *PARTS]
    again = run_ok([*online, "--output", str(tmp_path / "third")], capsys)
    assert again.scores == first.scores and _sha(damaged) == _sha(data / "scifact" / "corpus" / "test.parquet")


def test_subsets_reading_one_copy_share_one_pin_set_under_the_source(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """EuroPIRQRetrieval: three subsets, each its `<subset>-` configs of one repo; every file of the copy is what
    each may read, so the pins go once under the source, and each subset's run checks them."""
    from tests.readers.test_mteb_retrieval import make_repo

    data = tmp_path / "data"
    for subset in ("en", "fi", "pt"):
        make_repo(data / f"part-{subset}", prefix=f"{subset}-")
    (data / "europirqretrieval").mkdir()
    lines = ["---", "configs:"]
    for subset in ("en", "fi", "pt"):
        part = data / f"part-{subset}"
        lines += (part / "README.md").read_text(encoding="utf-8").split("---")[1].strip().splitlines()[1:]
        for path in sorted(part.rglob("*.parquet")):
            target = data / "europirqretrieval" / path.relative_to(part)
            target.parent.mkdir(parents=True, exist_ok=True)
            path.rename(target)
    (data / "europirqretrieval" / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")
    code, out, err = run_cli(["import", "mteb", "EuroPIRQRetrieval", "-o", str(tmp_path / "imported"),
                              "--data-dir", str(data)], capsys)
    assert code == 0, err
    spec = Path(out.strip())
    document = load_plain(spec.read_text(encoding="utf-8"))
    copy = data / "europirqretrieval"
    assert document["sources"]["europirqretrieval"]["files"] == {
        path.relative_to(copy).as_posix(): _sha(path) for path in copy.rglob("*") if path.is_file()}
    assert not [name for name, override in document["subsets"].items()
                if "files" in ((override or {}).get("sources") or {}).get("europirqretrieval", {})]
    code, out, err = run_cli(_run(spec, data, tmp_path), capsys)
    assert code == 0 and len(out.split()) == 3, (out, err)  # each subset's results, each read checked
    _flip_a_byte_of(copy / "fi-corpus" / "test.parquet")
    _refused(spec, data, tmp_path, capsys, "europirqretrieval/fi-corpus/test.parquet: expected sha256 ")


def _flip_a_byte_of(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))
