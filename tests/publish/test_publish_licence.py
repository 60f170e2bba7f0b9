"""An unconfirmed licence (issue 20): the dry run of `publish` and of `publish-benchmark` shows what would be
uploaded and then ends in the one-line refusal (exit 2, nothing written at -o); `--push` refuses before any data
is read or the hub is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SPECS, assert_one_line_error, run_cli

BIOSSES = str(SPECS / "biosses.yaml")
REFUSAL = "data licence gpl-3.0 is not confirmed for publication"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from specrun.cli import main

    out = tmp_path_factory.mktemp("licence-run")
    assert main([BIOSSES, "--data-dir", str(data_dir), "--adapter", "hashing", "--output", str(out), "-q"]) == 0
    return next(out.rglob("results.json"))


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any step towards the hub fails the test."""
    import specrun.publish

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the hub was asked")

    monkeypatch.setattr(specrun.publish, "check_hub_reachable", never)
    monkeypatch.setattr(specrun.publish, "upload", never)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")


def test_publish_dry_run_shows_the_files_then_refuses(run: Path, tmp_path: Path, no_network: None,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run_cli(["publish", str(run), "--benchmark", "specrun/biosses", "--repo", "someone/model",
                              "-o", str(out_dir)], capsys)
    assert_one_line_error(code, err, contains=REFUSAL)
    assert "--confirm-licence REASON" in err
    assert out.startswith("dry run: would upload to model repo someone/model:")
    assert "--- .eval_results/biosses.yaml (" in out and "--- model-index.yaml (" in out
    assert "task_id: test-spearman_zero_shot" in out
    assert out.rstrip().endswith("nothing was uploaded; --push is refused until the data licence is confirmed "
                                 f"(--confirm-licence REASON); nothing was written to -o {out_dir}")
    assert not out_dir.exists() and list(tmp_path.iterdir()) == []


def test_publish_push_refuses_before_the_hub(run: Path, no_network: None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["publish", str(run), "--benchmark", "specrun/biosses", "--repo", "someone/model",
                              "--push"], capsys)
    assert_one_line_error(code, err, contains=REFUSAL)
    assert out == ""


def test_publish_benchmark_dry_run_shows_the_files_then_refuses(tmp_path: Path, data_dir: Path, no_network: None,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run_cli(["publish-benchmark", BIOSSES, "--repo", "specrun/biosses", "--data-dir",
                              str(data_dir), "-o", str(out_dir)], capsys)
    assert_one_line_error(code, err, contains=REFUSAL)
    assert out.startswith("dry run: would upload to dataset repo specrun/biosses:")
    assert "--- README.md (" in out and "--- eval.yaml (" in out and "--- data/test.parquet (" in out
    assert "> Licence to confirm" in out  # the card's banner, as the unconfirmed card shows it
    assert "nothing was uploaded; --push is refused until the data licence is confirmed" in out
    assert not out_dir.exists()


def test_publish_benchmark_push_refuses_before_reading_data(tmp_path: Path, no_network: None,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["publish-benchmark", BIOSSES, "--repo", "specrun/biosses", "--data-dir",
                              str(tmp_path / "no-data-here"), "--push"], capsys)
    assert_one_line_error(code, err, contains=REFUSAL)
    assert out == ""


def test_confirmation_lets_the_dry_run_write(run: Path, tmp_path: Path, no_network: None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["publish", str(run), "--benchmark", "specrun/biosses", "--confirm-licence", "ok",
                              "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert out.rstrip().endswith("nothing was uploaded; pass --push to upload")
    assert (tmp_path / "out" / ".eval_results" / "biosses.yaml").is_file()
