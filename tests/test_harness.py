"""The test harness' own promises (tests/conftest.py): hypothesis keeps no example database and writes nothing
into the checkout, and the quick-test check knows which programs a quick test may not start."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import hypothesis
import hypothesis.configuration
import pytest

from tests.conftest import _MEMORY, ROOT, _heavy_program, _memory_folder, pytest_ignore_collect


def test_hypothesis_keeps_no_database_and_its_folder_is_outside_the_checkout() -> None:
    assert hypothesis.settings.default.database is None
    folder = Path(hypothesis.configuration.storage_directory().path).resolve()
    assert ROOT.resolve() not in (folder, *folder.parents), folder


def test_the_programs_a_quick_test_may_not_start() -> None:
    python = sys.executable
    assert _heavy_program([python, "-c", "pass"], {}) == python
    assert _heavy_program([os.fsencode(python), "-m", "specrun"], {}) == python
    assert _heavy_program(Path(python), {}) == python
    assert _heavy_program("python3 -c pass", {"shell": True}) == "python3"
    assert _heavy_program(["/usr/bin/chromium", "--headless"], {}) == "/usr/bin/chromium"
    assert _heavy_program(["x"], {"executable": python}) == python
    for allowed in (["mount", "-t", "tmpfs"], ["umount", "-l", "/x"], "ls -l", []):
        assert _heavy_program(allowed, {"shell": isinstance(allowed, str)}) is None, allowed


def test_the_quick_loop_skips_only_modules_whose_every_test_is_slow() -> None:
    """A module marked slow as a whole is not imported by `-m "not slow"` (nor skipped by any other run); one
    with a quick test is."""
    class Option:
        def __init__(self, markexpr: str) -> None:
            self.markexpr = markexpr

    class Config:
        def __init__(self, markexpr: str) -> None:
            self.option = Option(markexpr)

    ray, mixed = ROOT / "tests" / "encoders" / "test_ray.py", ROOT / "tests" / "test_harness.py"
    assert pytest_ignore_collect(ray, Config("not slow")) is True  # type: ignore[arg-type]
    for path, markexpr in ((mixed, "not slow"), (ray, "slow"), (ray, ""), (ROOT / "tests" / "conftest.py", "not slow")):
        assert pytest_ignore_collect(path, Config(markexpr)) is None  # type: ignore[arg-type]


def test_temporary_files_go_to_a_memory_folder_only_where_one_has_room_and_none_was_chosen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    assert _memory_folder(str(tmp_path), room=0) == str(tmp_path)
    assert _memory_folder(str(tmp_path), room=1 << 62) is None  # no room
    assert _memory_folder(str(tmp_path / "absent"), room=0) is None
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert _memory_folder(str(tmp_path), room=0) is None  # the caller's choice wins
    if _MEMORY is not None:  # this session's folders are there
        assert Path(tempfile.gettempdir()) == Path(_MEMORY) and Path(_MEMORY) in tmp_path.parents
