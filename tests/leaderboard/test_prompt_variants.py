"""`leaderboard --prompt-variants worst|mean`: a model's prompt variants are one row, scored in every resample by
the worst (or mean) variant; checked against plain loops (scipy per resample, one variant at a time)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from specrun.results.verify import load_verified
from tests.conftest import SPECS, assert_one_line_error, biosses_twin, run_cli
from tests.leaderboard.test_leaderboard import loop_indices, plain_statistic, plain_statistics

BIOSSES = str(SPECS / "biosses.yaml")


@pytest.fixture(scope="module")
def variant_runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from specrun.cli import main

    root = tmp_path_factory.mktemp("variants")
    prompt_set = root / "prompts.yaml"
    prompt_set.write_text(yaml.safe_dump({"variants": {"plain": {}, "a": {"prompt": "protein gene cell: "},
                                                       "b": {"prompt": "zzz qqq: "}}}))
    common = [BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--no-cache", "--output",
              str(root / "out")]
    assert main([*common, "--prompt-set", str(prompt_set)]) == 0
    assert main([*common, "--adapter", "hashing", "--max-length", "8"]) == 0  # another configuration
    return root / "out"


@pytest.mark.parametrize("how", ["worst", "mean"])
def test_a_models_variants_are_one_row_scored_by_their_worst_or_mean(how: str, variant_runs: Path,
                                                                     tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["leaderboard", str(variant_runs), "-o", str(tmp_path), "--prompt-variants", how], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "leaderboard.json").read_text())
    assert len(board["models"]) == 2 and board["overall"]["prompt_variants"] == how
    grouped = next(m for m in board["models"] if m["prompt_variants"])
    assert len(grouped["prompt_variants"]) == 3 and f"({how} of 3 prompt variants)" in grouped["label"]
    files = sorted(p for p in variant_runs.rglob("results.json") if "max-length" not in str(p))
    arrays = [load_verified(p).units[("test", "zero_shot")][1] for p in files]
    resamples, seed, n = 1000, 20261006, len(arrays[0]["gold"])
    reduce = np.min if how == "worst" else np.mean
    for spec_board in board["specs"]:
        for entry in spec_board["boards"]:
            metric = entry["metric"].removesuffix("_zero_shot")
            row = next(r for r in entry["rows"] if r["model"] == grouped["label"])
            observed = reduce([plain_statistic(metric, a, np.arange(n)) for a in arrays])
            assert row["score"] == pytest.approx(observed, abs=1e-12)
            indices = loop_indices(n, resamples, seed)
            per_resample = reduce(np.stack([plain_statistics(metric, a, indices) for a in arrays]), axis=0)
            assert row["ci_low"] == pytest.approx(float(np.percentile(per_resample, 2.5)), abs=1e-9)
            assert row["ci_high"] == pytest.approx(float(np.percentile(per_resample, 97.5)), abs=1e-9)
            assert math.isfinite(row["diff_low"])


def test_a_spec_without_one_of_the_variants_is_refused(variant_runs: Path, tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main

    other = tmp_path / "twin"
    common = [str(biosses_twin(tmp_path / "specs")), "-q", "--adapter", "hashing", "--data-dir", str(data_dir),
              "--no-cache", "--output", str(other)]
    assert main([*common, "--prompt", "protein gene cell: "]) == 0 and main(common) == 0
    code, _, err = run_cli(["leaderboard", str(variant_runs), str(other), "-o", str(tmp_path / "b"),
                            "--prompt-variants", "worst"], capsys)
    line = assert_one_line_error(code, err, contains="biosses-twin: --prompt-variants worst ranks")
    assert "zzz qqq" in line  # the variant it lacks


def test_each_keeps_every_variant_its_own_row(variant_runs: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["leaderboard", str(variant_runs), "-o", str(tmp_path)], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "leaderboard.json").read_text())
    assert len(board["models"]) == 4 and not any(m["prompt_variants"] for m in board["models"])
