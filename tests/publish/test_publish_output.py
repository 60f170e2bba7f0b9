"""`publish -o` and `publish-benchmark -o` write all their files or none (issue 20): a failure on the second file
leaves nothing at -o (and no hidden temporary beside it); into an existing folder the files it replaced come back."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from tests.conftest import SPECS, assert_one_line_error, files_under, run_cli

BIOSSES = str(SPECS / "biosses.yaml")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from specrun.cli import main

    out = tmp_path_factory.mktemp("output-run")
    assert main([BIOSSES, "--data-dir", str(data_dir), "--adapter", "hashing", "--output", str(out), "-q"]) == 0
    return next(out.rglob("results.json"))


def fail_second_file(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The second file written fails as a full disk would."""
    import specrun.outputs.fs

    written: list[str] = []
    write_file = specrun.outputs.fs.write_new_file

    def failing(path: Path, content: str | bytes) -> None:
        written.append(path.name)
        if len(written) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        write_file(path, content)

    monkeypatch.setattr(specrun.outputs.fs, "write_new_file", failing)
    return written


def benchmark_args(out: Path, data_dir: Path) -> list[str]:
    return ["publish-benchmark", BIOSSES, "--confirm-licence", "ok", "--data-dir", str(data_dir), "-o", str(out)]


def test_publish_benchmark_failing_on_the_second_file_leaves_nothing(
        tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    written = fail_second_file(monkeypatch)
    out = tmp_path / "new" / "benchmark"
    code, _out, err = run_cli(benchmark_args(out, data_dir), capsys)
    assert_one_line_error(code, err, contains="No space left on device; nothing was written there")
    assert len(written) == 2 and files_under(tmp_path) == [] and not (tmp_path / "new").exists()


def test_publish_failing_on_the_second_file_leaves_nothing(run: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    written = fail_second_file(monkeypatch)
    out = tmp_path / "out"
    code, _out, err = run_cli(["publish", str(run), "--benchmark", "specrun/biosses", "--confirm-licence", "ok",
                               "-o", str(out)], capsys)
    assert_one_line_error(code, err, contains=f"-o {out}: cannot write")
    assert len(written) == 2 and list(tmp_path.iterdir()) == []


def test_into_an_existing_folder_a_failure_puts_the_old_files_back(tmp_path: Path, data_dir: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """README.md goes in first, then eval.yaml meets a folder of that name: README.md is the old one again and
    no data/ folder is left."""
    out = tmp_path / "out"
    (out / "eval.yaml").mkdir(parents=True)
    (out / "eval.yaml" / "keep").write_text("mine", encoding="utf-8")
    (out / "README.md").write_text("old card", encoding="utf-8")
    (out / "notes.txt").write_text("unrelated", encoding="utf-8")
    code, _out, err = run_cli(benchmark_args(out, data_dir), capsys)
    assert_one_line_error(code, err, contains="cannot write eval.yaml")
    assert files_under(out) == ["README.md", "eval.yaml/keep", "notes.txt"]
    assert (out / "README.md").read_text(encoding="utf-8") == "old card"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_into_an_existing_folder_the_files_are_replaced_and_others_kept(tmp_path: Path, data_dir: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("old card", encoding="utf-8")
    (out / "notes.txt").write_text("unrelated", encoding="utf-8")
    code, _out, err = run_cli(benchmark_args(out, data_dir), capsys)
    assert code == 0, err
    assert files_under(out) == ["README.md", "data/test.parquet", "eval.yaml", "notes.txt"]
    assert (out / "README.md").read_text(encoding="utf-8").startswith("---\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_linked_folder_gets_the_files_and_stays_a_link(tmp_path: Path, data_dir: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    code, _out, err = run_cli(benchmark_args(link, data_dir), capsys)
    assert code == 0, err
    assert link.is_symlink() and files_under(real) == ["README.md", "data/test.parquet", "eval.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_a_linked_subfolder_inside_the_output_is_never_written_through(tmp_path: Path, data_dir: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """-o OUT already holds `data -> elsewhere`: writing OUT/data/test.parquet would land outside OUT. One line,
    nothing written elsewhere, OUT as it was."""
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "data").symlink_to(elsewhere, target_is_directory=True)
    code, _out, err = run_cli(benchmark_args(out, data_dir), capsys)
    assert "a link out of the folder" in assert_one_line_error(code, err)
    assert files_under(elsewhere) == [] and files_under(out) == ["data"]
