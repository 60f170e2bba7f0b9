"""--traceback and SPECRUN_DEBUG=1 re-raise instead of printing the one line, for bug reports; without them an
error stays one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from specrun.cli import main
from specrun.core.errors import SpecError
from tests.conftest import assert_one_line_error, run_cli, run_subprocess


def test_one_line_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([str(tmp_path / "missing.yaml")], capsys)
    assert_one_line_error(code, err, contains="missing.yaml")


@pytest.mark.parametrize("where", ["first", "last"])
def test_the_flag_re_raises_wherever_it_stands(where: str, tmp_path: Path) -> None:
    spec = str(tmp_path / "missing.yaml")
    with pytest.raises(SpecError, match="cannot read a spec"):
        main(["--traceback", spec] if where == "first" else [spec, "--traceback"])


def test_the_variable_re_raises_and_zero_does_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SPECRUN_DEBUG", "1")
    with pytest.raises(SpecError):
        main([str(tmp_path / "missing.yaml")])
    monkeypatch.setenv("SPECRUN_DEBUG", "0")
    code, _, err = run_cli([str(tmp_path / "missing.yaml")], capsys)
    assert_one_line_error(code, err)


@pytest.mark.slow  # a fresh process
def test_a_process_prints_the_traceback(tmp_path: Path) -> None:
    done = run_subprocess([str(tmp_path / "missing.yaml"), "--traceback"])
    assert done.returncode == 1 and "Traceback" in done.stderr and "SpecError" in done.stderr
