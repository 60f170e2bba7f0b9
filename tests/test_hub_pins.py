"""Per-file sha256 pins of a hub dataset read by `datasets` (issue 46 item 4): `files:` of an hf_dataset source,
written from a local copy by `import mteb --data-dir` and `fingerprint --write`, checked before a copy is read: a
changed, truncated, swapped, missing or unpinned data file is one line naming it, its pinned and its found sha256;
online, the pinned files are downloaded and checked the same way (the download is monkeypatched: no hub here)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.spec import load_spec
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.mteb.snapshots import hub_snapshot

SHA = "0" * 64


def _rows(seed: int, n: int = 40) -> dict[str, list[Any]]:
    words = ["cat", "dog", "bird", "fish", "tree", "rock", "wind", "rain", "sun", "moon", "sea", "hill"]
    return {"sentence1": [f"{words[(i * 7 + seed) % 12]} {words[i % 12]} sat {i + seed}" for i in range(n)],
            "sentence2": [f"{words[(i * 5 + seed) % 12]} {words[(i * 3) % 12]} ran {i}" for i in range(n)],
            "score": [float((i * 7 + seed) % 6) for i in range(n)]}


def _copy(data: Path, parts: int = 1) -> Path:
    """<data>/sts12: the test split in `parts` files read through one pattern, and a train split the spec does
    not read (never pinned)."""
    folder = hub_snapshot(data / "sts12", {**{f"test-{i}": _rows(i) for i in range(parts)}, "train": _rows(9)})
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      "    path: data/test-*.parquet\n  - split: train\n    path: data/train.parquet\n"
                                      "---\n", encoding="utf-8")
    return folder


def _pinned(tmp_path: Path, capsys: pytest.CaptureFixture[str], parts: int = 1) -> tuple[Path, Path]:
    """STS12 imported with --data-dir from a copy: the spec (fingerprint and `files:` written) and the data."""
    data = tmp_path / "data"
    _copy(data, parts)
    code, out, err = run_cli(["import", "mteb", "STS12", "-o", str(tmp_path / "imported"), "--data-dir", str(data)],
                             capsys)
    assert code == 0, err
    return Path(out.strip()), data


def _run(spec: Path, data: Path | None, tmp_path: Path) -> list[str]:
    return [str(spec), *(["--data-dir", str(data)] if data else []), "--adapter", "hashing", "-q",
            "--output", str(tmp_path / "results")]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_import_with_a_copy_pins_the_files_the_config_reads_and_the_spec_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys, parts=2)
    source = load_plain(spec.read_text(encoding="utf-8"))["sources"]["sts12"]
    copy = data / "sts12" / "data"
    assert source["files"] == {"data/test-0.parquet": _sha(copy / "test-0.parquet"),
                               "data/test-1.parquet": _sha(copy / "test-1.parquet")}  # train: not read, not pinned
    assert load_spec(spec).spec.sources["sts12"].files == source["files"]
    code, out, err = run_cli(["validate", str(spec)], capsys)
    assert code == 0 and ": ok (" in out + err, err
    results = run_ok(_run(spec, data, tmp_path), capsys)
    assert results.scores["test"]["spearman_zero_shot"].n == 80
    # the provenance and the report name each pinned file read, with its pin (a new-user trial found both blank)
    assert results.provenance.data["test"].files == source["files"]
    report = next((tmp_path / "results").rglob("report.md")).read_text(encoding="utf-8")
    assert all(f"file {name} (sha256 {pin})" in report for name, pin in source["files"].items())
    assert "not pinned by the spec" not in report


def _flip_a_byte(copy: Path) -> str:
    path = copy / "data" / "test-1.parquet"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))
    return "data/test-1.parquet"


def _truncate(copy: Path) -> str:
    path = copy / "data" / "test-0.parquet"
    path.write_bytes(path.read_bytes()[:-10])
    return "data/test-0.parquet"


def _swap(copy: Path) -> str:
    first, second = copy / "data" / "test-0.parquet", copy / "data" / "test-1.parquet"
    held = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(held)
    return "data/test-0.parquet"


@pytest.mark.parametrize("tamper", [_flip_a_byte, _truncate, _swap])
def test_a_changed_pinned_file_is_refused_naming_it_and_both_digests(
        tamper: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys, parts=2)
    pins = load_spec(spec).spec.sources["sts12"].files
    assert pins is not None
    changed = tamper(data / "sts12")
    code, _, err = run_cli(_run(spec, data, tmp_path), capsys)
    line = assert_one_line_error(code, err, contains=f"sts12/{changed}: expected sha256 {pins[changed]}, found "
                                                     f"{_sha(data / 'sts12' / changed)}")
    assert "sources.sts12.files" in line
    assert not (tmp_path / "results").exists()  # nothing half-written


def test_a_missing_pinned_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys, parts=2)
    (data / "sts12" / "data" / "test-1.parquet").unlink()
    code, _, err = run_cli(_run(spec, data, tmp_path), capsys)
    assert_one_line_error(code, err, contains="sts12/data/test-1.parquet: expected sha256 ")
    assert "found no such file in the copy" in err


def test_a_data_file_the_config_reads_but_no_pin_names_is_refused(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys, parts=1)
    extra = data / "sts12" / "data" / "test-1.parquet"  # matches the config's data/test-*.parquet
    shutil.copyfile(data / "sts12" / "data" / "test-0.parquet", extra)
    code, _, err = run_cli(_run(spec, data, tmp_path), capsys)
    assert_one_line_error(code, err, contains=f"sts12/data/test-1.parquet: expected sha256 none (not pinned, but "
                                              f"the config's splits read it), found {_sha(extra)}")


def test_a_pin_of_a_file_the_config_no_longer_reads_is_refused(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys, parts=2)
    readme = data / "sts12" / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("test-*", "test-0"), encoding="utf-8")
    code, _, err = run_cli(_run(spec, data, tmp_path), capsys)
    assert_one_line_error(code, err, contains="sts12/data/test-1.parquet: expected sha256 ")
    assert "no longer read" in err


def test_an_unpinned_spec_runs_as_before_and_fingerprint_write_pins_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, data = _pinned(tmp_path, capsys)
    document = load_plain(spec.read_text(encoding="utf-8"))
    pins = document["sources"]["sts12"].pop("files")
    spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    assert run_ok(_run(spec, data, tmp_path), capsys).scores["test"]["spearman_zero_shot"].n == 40
    code, out, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data), "--write"], capsys)
    assert code == 0, err
    assert f"sts12:data/test-0.parquet: {pins['data/test-0.parquet']}" in out
    assert "updated sources.sts12.files" in err
    assert load_plain(spec.read_text(encoding="utf-8"))["sources"]["sts12"]["files"] == pins


@pytest.mark.parametrize(("files", "message"), [
    ({"../outside.parquet": SHA}, "is not a path inside the dataset repo"),
    ({"data/test.parquet": "abc"}, "sources.sts12.files"),
])
def test_validate_refuses_a_pin_that_is_no_pin(files: dict[str, str], message: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec, _ = _pinned(tmp_path, capsys)
    document = load_plain(spec.read_text(encoding="utf-8"))
    document["sources"]["sts12"]["files"] = files
    spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli(["validate", str(spec)], capsys)
    assert_one_line_error(code, err, contains=message)


def test_files_beside_a_file_format_mirror_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, _ = _pinned(tmp_path, capsys)
    document = load_plain(spec.read_text(encoding="utf-8"))
    document["sources"]["sts12"]["mirror"] = {"format": "parquet", "files": {"test": "data/test-0.parquet"}}
    spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli(["validate", str(spec)], capsys)
    assert_one_line_error(code, err, contains="format parquet reads one file per split: drop `files`")


def _fake_hub(monkeypatch: pytest.MonkeyPatch, copy: Path, asked: list[str], keep: bool = False,
              forced: list[str] | None = None) -> None:
    """hf_hub_download served from `copy` (the repo at the commit), the hub reachable; `keep`: a file already in
    the folder is kept, whatever its bytes, unless `force_download` (listed in `forced`), as the real one keeps a
    file it trusts (its metadata, or its own cache)."""
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError

    import specrun.core.network
    from specrun.data import hub_files

    def download(repo_id: str, filename: str, *, repo_type: str, revision: str, local_dir: Path,
                 force_download: bool = False) -> str:
        assert (repo_id, repo_type, len(revision)) == ("mteb/sts12-sts", "dataset", 40)
        asked.append(filename)
        if force_download and forced is not None:
            forced.append(filename)
        if not (copy / filename).is_file():
            raise EntryNotFoundError(filename)
        target = Path(local_dir) / filename
        if keep and target.is_file() and not force_download:
            return str(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(copy / filename, target)
        return str(target)

    def listing(source: Any, folder: Path) -> list[str]:  # datasets' hf:// resolution of the config's patterns
        return sorted(path.relative_to(copy).as_posix() for path in copy.rglob("*.parquet"))

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(hub_files, "config_files_on_hub", listing)
    monkeypatch.setattr(specrun.core.network, "hub_unreachable", lambda: None)


def test_online_the_pinned_files_are_downloaded_and_checked_before_datasets_reads_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECRUN_DATA_DIR", raising=False)  # online: no default data dir (CI sets one)
    spec, data = _pinned(tmp_path, capsys, parts=2)
    asked: list[str] = []
    _fake_hub(monkeypatch, data / "sts12", asked)
    assert run_ok([*_run(spec, None, tmp_path), "--no-cache"], capsys).scores["test"]["spearman_zero_shot"].n == 80
    assert asked == ["README.md", "data/test-0.parquet", "data/test-1.parquet", "data/train.parquet"]
    _flip_a_byte(data / "sts12")  # the hub now serves other bytes than those pinned
    code, _, err = run_cli([*_run(spec, None, tmp_path), "--no-cache"], capsys)
    assert_one_line_error(code, err, contains="data/test-1.parquet: expected sha256 ")
    assert "specrun: note: mteb/sts12-sts@" in err  # what is done is said


def test_a_damaged_download_is_downloaded_again_and_only_a_fresh_one_that_fails_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A pinned file cut short in the cache's downloads folder (which the hub's download may keep) is downloaded
    afresh, with the card, and nothing else; the run goes on with the same numbers. A hub that now serves other
    bytes is refused after that one fresh download. Each run is a new process' (its memos are cleared)."""
    from specrun.data import hub_files

    monkeypatch.delenv("SPECRUN_DATA_DIR", raising=False)
    spec, data = _pinned(tmp_path, capsys, parts=2)
    asked: list[str] = []
    forced: list[str] = []
    _fake_hub(monkeypatch, data / "sts12", asked, keep=True, forced=forced)
    args = [*_run(spec, None, tmp_path), "--cache-dir", str(tmp_path / "cache")]
    first = run_ok(args, capsys)
    (damaged,) = (tmp_path / "cache").rglob("test-1.parquet")
    damaged.write_bytes(damaged.read_bytes()[:-9])  # a download cut short
    (unpinned,) = (tmp_path / "cache").rglob("train.parquet")
    unpinned_state = unpinned.stat().st_mtime_ns
    for memo in (hub_files._FETCHED, hub_files._VERIFIED):
        memo.clear()
    code, _, err = run_cli([*args, "--output", str(tmp_path / "again")], capsys)
    assert code == 0, err
    assert "fails its pins; downloading README.md, data/test-1.parquet afresh" in err
    assert forced == ["README.md", "data/test-1.parquet"]  # the damaged file and the card, nothing else
    assert unpinned.stat().st_mtime_ns == unpinned_state
    again = next((tmp_path / "again").rglob("results.json")).read_text(encoding="utf-8")
    assert json.loads(again)["scores"] == json.loads(first.model_dump_json())["scores"]
    assert _sha(damaged) == _sha(data / "sts12" / "data" / "test-1.parquet")
    damaged.write_bytes(b"cut")
    _flip_a_byte(data / "sts12")  # and the hub now serves other bytes than those pinned
    for memo in (hub_files._FETCHED, hub_files._VERIFIED):
        memo.clear()
    forced.clear()
    code, _, err = run_cli([*args, "--output", str(tmp_path / "third")], capsys)
    assert_one_line_error(code, err, contains="data/test-1.parquet: expected sha256 ")
    assert forced == ["README.md", "data/test-1.parquet"] and not (tmp_path / "third").exists()


def test_a_fresh_download_that_cannot_be_made_is_one_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub gone between the first fetch and the fresh download of a damaged file: one line naming the file
    and the local-copy way out, exit 2, no results folder; the next run with the hub back heals the copy."""
    import huggingface_hub

    from specrun.data import hub_files

    monkeypatch.delenv("SPECRUN_DATA_DIR", raising=False)
    spec, data = _pinned(tmp_path, capsys, parts=2)
    _fake_hub(monkeypatch, data / "sts12", [], keep=True)
    args = [*_run(spec, None, tmp_path), "--cache-dir", str(tmp_path / "cache")]
    first = run_ok(args, capsys)
    (damaged,) = (tmp_path / "cache").rglob("test-1.parquet")
    damaged.write_bytes(b"cut")
    served = huggingface_hub.hf_hub_download

    def offline_when_forced(*args: Any, force_download: bool = False, **kwargs: Any) -> str:
        if force_download:
            raise ConnectionError("the hub went away")
        return served(*args, **kwargs)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline_when_forced)
    for memo in (hub_files._FETCHED, hub_files._VERIFIED):
        memo.clear()
    code, _, err = run_cli([*args, "--output", str(tmp_path / "offline")], capsys)
    assert_one_line_error(code, err, contains="cannot download mteb/sts12-sts@")
    assert "README.md (the hub went away); pass --data-dir DIR" in err and not (tmp_path / "offline").exists()
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", served)
    for memo in (hub_files._FETCHED, hub_files._VERIFIED):
        memo.clear()
    healed = run_ok([*args, "--output", str(tmp_path / "healed")], capsys)
    assert healed.scores == first.scores


def test_a_fresh_download_touches_no_other_pin_set_of_the_folder(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sources of one repo at one commit pinning other files share the download folder: B's damaged file is
    downloaded afresh alone, and A's checked copy stays readable in the same process."""
    from specrun.core.errors import SpecError
    from specrun.core.workspace import Workspace
    from specrun.data import hub_files
    from specrun.spec import HubDataset

    class Plan:
        def error(self, key: object, message: str) -> SpecError:
            return SpecError(message)

    copy = _copy(tmp_path / "data", parts=2)
    common = {"type": "hf_dataset", "path": "mteb/sts12-sts", "revision": "a" * 40, "licence": "x",
              "columns": {"a": "sentence1"}}
    a, b = (HubDataset(**common, data_files={"test": name}, files={name: _sha(copy / name)})  # type: ignore[arg-type]
            for name in ("data/test-0.parquet", "data/test-1.parquet"))
    forced: list[str] = []
    _fake_hub(monkeypatch, copy, [], keep=True, forced=forced)
    monkeypatch.setattr(hub_files, "config_files_on_hub", lambda source, folder: sorted(source.files))
    workspace = Workspace.resolve(str(tmp_path / "cache"))
    folder = hub_files.pinned_copy(Plan(), "a", a, None, workspace)  # type: ignore[arg-type]
    assert hub_files.pinned_copy(Plan(), "b", b, None, workspace) == folder  # type: ignore[arg-type]
    for memo in (hub_files._FETCHED, hub_files._VERIFIED):
        memo.clear()
    (folder / "data/test-1.parquet").write_bytes(b"cut")
    kept = (folder / "data/test-0.parquet").stat().st_mtime_ns
    hub_files.pinned_copy(Plan(), "a", a, None, workspace)  # type: ignore[arg-type]
    hub_files.pinned_copy(Plan(), "b", b, None, workspace)  # type: ignore[arg-type]
    assert forced == ["README.md", "data/test-1.parquet"]
    assert hub_files.pinned_copy(Plan(), "a", a, None, workspace) == folder  # type: ignore[arg-type]
    assert (folder / "data/test-0.parquet").stat().st_mtime_ns == kept


def test_pins_every_subset_shares_go_once_and_those_that_differ_per_subset(tmp_path: Path) -> None:
    """One config read by every subset: the source's own `files:`; a config per subset: each subset's, and the
    spec's own entry goes (it would merge into each subset's pins)."""
    from specrun.cli.fingerprint import shared_pins
    from specrun.spec import write_fingerprints

    spec = tmp_path / "spec.yaml"
    spec.write_text("# kept\nsources:\n  s:\n    type: hf_dataset\n    files:\n      old.parquet: " + SHA + "\n"
                    "subsets:\n  a:\n  b:\n    title: B\n", encoding="utf-8")
    one, other = {"x.parquet": "1" * 64}, {"y.parquet": "2" * 64}
    changed = write_fingerprints(spec, {}, files=shared_pins({}, {"a": {"s": one}, "b": {"s": other}}))
    written = load_plain(spec.read_text(encoding="utf-8"))
    assert "files" not in written["sources"]["s"] and spec.read_text(encoding="utf-8").startswith("# kept\n")
    assert written["subsets"] == {"a": {"sources": {"s": {"files": one}}},
                                  "b": {"title": "B", "sources": {"s": {"files": other}}}}
    assert changed == ["sources.s.files", "a/sources.s.files", "b/sources.s.files"]
    changed = write_fingerprints(spec, {}, files=shared_pins({}, {"a": {"s": one}, "b": {"s": dict(one)}}))
    written = load_plain(spec.read_text(encoding="utf-8"))
    assert written["sources"]["s"]["files"] == one
    assert written["subsets"] == {"a": {}, "b": {"title": "B"}}
    assert changed == ["sources.s.files", "a/sources.s.files", "b/sources.s.files"]


def test_a_file_datasets_resolves_on_the_hub_is_named_by_its_path_in_the_repo(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`datasets` resolves patterns on the hub as hf://datasets/OWNER/NAME@REVISION/PATH (huggingface_hub's
    HfFileSystem); the download asks for PATH."""
    from specrun.data.hub_files import hub_repo_path

    spec, _ = _pinned(tmp_path, capsys)
    source = load_spec(spec).spec.sources["sts12"]
    assert hub_repo_path(f"hf://datasets/mteb/sts12-sts@{source.revision}/data/test-00000-of-00001.parquet",
                      source) == "data/test-00000-of-00001.parquet"  # type: ignore[arg-type]
