"""`fingerprint --write` (issue 20): writes through a symlink to its target, keeps the file's mode, line endings
and BOM, refuses a read-only spec and a spec edited while it ran, each in one line with the file as it was."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import SPECS, assert_one_line_error, run_cli

REAL = "sha256:cdddd391744f36e5f08d8247e128fae0fbd210b2430201fd6523e89a8cccce36"
STALE = "sha256:" + "0" * 64


def stale_spec(folder: Path) -> Path:
    """BIOSSES with its test fingerprint zeroed: --write has one value to change."""
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8")
    assert REAL in text
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "biosses.yaml"
    path.write_text(text.replace(REAL, STALE), encoding="utf-8")
    return path


def write(spec: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _out, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data_dir), "--no-cache", "--write"],
                              capsys)
    return code, err


def test_a_symlinked_spec_is_written_through_to_its_target(tmp_path: Path, data_dir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    target = stale_spec(tmp_path / "real")
    link = tmp_path / "specs" / "biosses.yaml"
    link.parent.mkdir()
    link.symlink_to(target)
    code, err = write(link, data_dir, capsys)
    assert code == 0 and "updated test" in err, err
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert REAL in target.read_text(encoding="utf-8") and STALE not in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in target.parent.iterdir()) == ["biosses.yaml"]  # no temporary file left
    assert sorted(p.name for p in link.parent.iterdir()) == ["biosses.yaml"]


def test_the_files_mode_is_kept(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = stale_spec(tmp_path)
    spec.chmod(0o640)
    code, err = write(spec, data_dir, capsys)
    assert code == 0 and "updated test" in err, err
    assert stat.S_IMODE(spec.stat().st_mode) == 0o640 and REAL in spec.read_text(encoding="utf-8")


def test_a_read_only_spec_is_refused_not_replaced(tmp_path: Path, data_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec = stale_spec(tmp_path)
    before = spec.read_bytes()
    spec.chmod(0o444)
    code, err = write(spec, data_dir, capsys)
    assert_one_line_error(code, err, contains="is read-only (mode 0444); nothing was written")
    assert spec.read_bytes() == before and stat.S_IMODE(spec.stat().st_mode) == 0o444
    assert os.listdir(tmp_path) == ["biosses.yaml"]


def test_crlf_line_endings_and_a_bom_are_kept(tmp_path: Path, data_dir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    spec = stale_spec(tmp_path)
    text = spec.read_text(encoding="utf-8")
    spec.write_bytes(codecs.BOM_UTF8 + text.replace("\n", "\r\n").encode("utf-8"))
    code, err = write(spec, data_dir, capsys)
    assert code == 0 and "updated test" in err, err
    expected = codecs.BOM_UTF8 + text.replace(STALE, REAL).replace("\n", "\r\n").encode("utf-8")
    assert spec.read_bytes() == expected
    code, err = write(spec, data_dir, capsys)
    assert code == 0 and "already up to date" in err and spec.read_bytes() == expected


def test_mixed_line_endings_are_refused(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = stale_spec(tmp_path)
    mixed = spec.read_bytes().replace(b"\n", b"\r\n", 3)
    spec.write_bytes(mixed)
    code, err = write(spec, data_dir, capsys)
    assert_one_line_error(code, err, contains="mixes CRLF and LF line endings")
    assert spec.read_bytes() == mixed


def test_a_spec_edited_while_it_ran_is_refused(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Edited after it was read (the fingerprints are of the old version), even with its fingerprint already
    right: neither 'up to date' nor a write over the edit."""
    import specrun.data

    spec = stale_spec(tmp_path)
    spec.write_text(spec.read_text(encoding="utf-8").replace(STALE, REAL), encoding="utf-8")
    load_split = specrun.data.load_split
    edited = spec.read_text(encoding="utf-8") + "# edited meanwhile\n"

    def load_and_edit(*args: object, **kwargs: object) -> object:
        spec.write_text(edited, encoding="utf-8")
        return load_split(*args, **kwargs)

    monkeypatch.setattr(specrun.data, "load_split", load_and_edit)
    code, err = write(spec, data_dir, capsys)
    assert_one_line_error(code, err, contains="changed since its fingerprints were computed")
    assert "up to date" not in err and spec.read_text(encoding="utf-8") == edited


def test_an_edit_just_before_the_rename_is_kept(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import specrun.core.files

    spec = stale_spec(tmp_path)
    edited = spec.read_text(encoding="utf-8") + "# edited meanwhile\n"
    write_atomic = specrun.core.files.write_atomic

    def edit_then_write(path: Path, content: str | bytes, **kwargs: object) -> None:
        spec.write_text(edited, encoding="utf-8")
        write_atomic(path, content, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(specrun.core.files, "write_atomic", edit_then_write)
    code, err = write(spec, data_dir, capsys)
    assert_one_line_error(code, err, contains="changed since its fingerprints were computed")
    assert spec.read_text(encoding="utf-8") == edited and os.listdir(tmp_path) == ["biosses.yaml"]


def test_an_imported_spec_gains_its_pins_and_loses_no_line(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """--write on an imported spec rewrote its wrapped notice, description and caveats as lines of 300 characters,
    and left a header saying it had no fingerprint (a new-user trial): long texts are now folded blocks, which the
    round trip keeps, and the header says what stays true. The rewrite only inserts lines."""
    import difflib

    from tests.mteb.snapshots import hub_snapshot

    rows = {"sentence1": [f"a cat sat {i}" for i in range(30)], "sentence2": [f"a dog ran {i}" for i in range(30)],
            "score": [float(i % 5) for i in range(30)]}
    hub_snapshot(tmp_path / "data" / "sts12", {"test": rows})
    code, _out, err = run_cli(["import", "mteb", "STS12", "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    spec = tmp_path / "imported" / "sts12.yaml"
    before = spec.read_text(encoding="utf-8").splitlines()
    assert before[1] == ("# The hub is read at its commit; `specrun fingerprint SPEC --data-dir DIR --write` pins a "
                         "local copy.")
    assert sum(": >-" in line for line in before) >= 3  # notice, description, caveats
    code, err = write(spec, tmp_path / "data", capsys)
    assert code == 0, err
    after = spec.read_text(encoding="utf-8").splitlines()
    changes = {tag for tag, *_ in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()}
    assert changes == {"equal", "insert"}, "\n".join(difflib.unified_diff(before, after, lineterm=""))
    assert any(line.strip().startswith("fingerprint: sha256:") for line in after)
