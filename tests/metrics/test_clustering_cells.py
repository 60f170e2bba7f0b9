"""Few documents per class x cluster cell (issue 45 item 10): the jackknife's standard error and the widened
centred interval against hand computations, the report's sentence below the threshold, and a clustering run's
report that says it for a small fixture and not for a large one (bench/coverage_clustering_cells.py measures)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specrun.metrics import intervals
from specrun.metrics.clustering import FEW_PER_CELL, few_per_cell_note, per_cell, v_measure
from tests.protocols.test_kinds_cli import run as run_spec
from tests.protocols.test_kinds_cli import sentence, spec, write_jsonl


def mean_of(x: np.ndarray) -> intervals.Statistic:
    return lambda weights: np.atleast_2d(weights) @ x / np.atleast_2d(weights).sum(axis=-1)


def test_jackknife_sd_of_a_mean_is_its_standard_error_by_hand() -> None:
    x = np.array([1.0, 2.0, 2.0, 4.0, 7.0, 7.0, 7.0])
    n = len(x)
    left_out = np.array([(x.sum() - v) / (n - 1) for v in x])
    by_hand = np.sqrt((n - 1) / n * np.sum((left_out - left_out.mean()) ** 2))
    assert by_hand == pytest.approx(x.std(ddof=1) / np.sqrt(n))
    assert intervals.jackknife_sd(mean_of(x), n) == pytest.approx(by_hand, abs=1e-12)
    # units alike in every input leave the same value out: one evaluation per group gives the same
    assert intervals.jackknife_sd(mean_of(x), n, np.unique(x, return_inverse=True)[1]) == pytest.approx(by_hand)


def test_jackknife_groups_of_a_clustering_are_its_filled_cells() -> None:
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 3, 40).astype(float)
    clusters = np.where(rng.random(40) < 0.7, gold, rng.integers(0, 3, 40)).astype(float)[:, None]

    def statistic(weights: np.ndarray) -> np.ndarray:
        return v_measure(clusters, gold, weights)[..., 0]

    cells = np.unique(gold * 10 + clusters[:, 0], return_inverse=True)[1]
    assert intervals.jackknife_sd(statistic, 40, cells) == pytest.approx(intervals.jackknife_sd(statistic, 40))


def test_widened_stretches_the_centred_interval_about_the_value_and_never_narrows_it() -> None:
    values = np.array([0.2, 0.3, 0.3, 0.4, 0.5, 0.6, 0.9])
    low, high = intervals.interval("centred", 0.45, values, 0.9)
    spread = values.std(ddof=1)
    assert intervals.widened(0.45, values, 0.9, 2 * spread) == pytest.approx(
        (0.45 - 2 * (0.45 - low), 0.45 + 2 * (high - 0.45)))
    assert intervals.widened(0.45, values, 0.9, spread / 3) == pytest.approx((low, high))
    rng = np.random.default_rng(0)
    for _ in range(200):
        values = rng.normal(rng.normal(), rng.uniform(0.01, 1), 50) ** int(rng.integers(1, 4))
        point = float(rng.normal())
        low, high = intervals.widened(point, values, 0.95, float(rng.uniform(0, 2)))
        assert low <= point <= high


def test_the_sentence_below_the_threshold() -> None:
    assert per_cell(300, 10) == 3.0
    note = few_per_cell_note("test v", "v_measure", 300, 10)
    assert note is not None and "test v: 300 documents in 10 classes" in note and "3.0 per class x cluster" in note
    assert "V-measure covered 0.923 of the expected value (measured at 3 per cell" in note
    assert "covered 0.917" in (few_per_cell_note("test n", "nmi", 90, 7) or "")  # 1.8 per cell: nearest 2
    assert few_per_cell_note("test v", "v_measure", int(FEW_PER_CELL * 100), 10) is None
    assert few_per_cell_note("test a", "ari", 300, 10) is None  # ARI's resampled spread held


def report_of(tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: int, per_label: int) -> str:
    rng = np.random.default_rng(labels)
    rows = [{"text": sentence(rng), "label": f"topic{i % labels}"} for i in range(labels * per_label)]
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", rows)
    path = spec(tmp_path, "clustering", {"text": "text", "label": "label"}, {"v": "v_measure", "r": "ari"},
                options={"n_runs": 1})
    run_spec(path, tmp_path, capsys)
    return next((tmp_path / "out").rglob("report.md")).read_text(encoding="utf-8")


def test_a_small_clustering_run_is_flagged_under_the_results_table(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    report = report_of(tmp_path, capsys, labels=4, per_label=8)  # 32 documents, 16 cells: 2.0 per cell
    assert "test v: 32 documents in 4 classes and as many clusters are 2.0 per class x cluster cell" in report
    assert "test r:" not in report


def test_a_large_clustering_run_is_not_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = report_of(tmp_path, capsys, labels=2, per_label=40)  # 80 documents, 4 cells: 20 per cell
    assert "per class x cluster cell" not in report


@pytest.mark.slow  # several processes: the full suite runs it
def test_the_cells_bench_measures_a_small_version(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "bench" / "coverage_clustering_cells.py"
    done = subprocess.run([sys.executable, str(script), "--reps", "30", "--draws", "250", "--cases", "10:300",
                           "--json", str(tmp_path / "cells.json")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    table = json.loads((tmp_path / "cells.json").read_text(encoding="utf-8"))["table"]
    assert [(row["metric"], row["reps"], row["per_cell"]) for row in table] == [
        ("v_measure", 30, 3.0), ("nmi", 30, 3.0), ("ari", 30, 3.0)]
    for row in table:
        assert row["jackknife"]["width_ratio"] >= 1.0 and row["jackknife"]["coverage"] >= row["centred"]["coverage"]
        assert 0.7 < row["jack_sd_ratio"] < 1.4, row
