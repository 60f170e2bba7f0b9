"""Conditional STS on a fixture of the re-annotated C-STS shape, against an independent computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from specrun.metrics import METRICS
from specrun.protocols.conditional_sts import fill
from tests.conftest import reference_model, run_cli, run_ok
from tests.fixtures import CSTS_ROWS, fixture_spec, make_csts


def independent(rows: list[tuple[str, str, str, int]]) -> tuple[float, float, int, int]:
    model = reference_model()
    s1 = model.encode([f"{c}: {a}" for a, _, c, _ in rows]).astype(np.float64)
    s2 = model.encode([f"{c}: {b}" for _, b, c, _ in rows]).astype(np.float64)
    cond = model.encode([c for _, _, c, _ in rows]).astype(np.float64)
    u, v = s1 - cond, s2 - cond
    sims = np.round(np.sum(u * v, axis=1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)), 12)
    labels = np.array([r[3] for r in rows], dtype=float)
    valid = labels != -1
    rho = stats.spearmanr(sims[valid], labels[valid]).statistic
    correct = counted = 0
    for i in range(0, len(rows), 2):
        y1, y2 = labels[i], labels[i + 1]
        if y1 == -1 or y2 == -1 or y1 == y2:
            continue
        counted += 1
        correct += (sims[i] - sims[i + 1]) * (y1 - y2) > 0
    return rho, correct / counted, int(valid.sum()), counted


@pytest.mark.slow  # the real model: the full suite runs it
def test_csts_fixture_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_csts(data)
    spec = fixture_spec("csts", tmp_path, data)
    results = run_ok([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out"), "-q"], capsys)
    rho, accuracy, n_rows, n_pairs = independent(CSTS_ROWS)
    spearman = results.scores["validation"]["spearman_conditional"]
    acc = results.scores["validation"]["accuracy_conditional"]
    assert spearman.value == pytest.approx(rho, abs=1e-6) and spearman.n == n_rows == 23
    # 12 pairs: one has a -1 row, one a tie in the labels (the identical-condition pair is counted)
    assert acc.value == pytest.approx(accuracy, abs=1e-12) and acc.n == n_pairs == 10
    assert results.provenance.uncertainty.unit == {"conditional": "sentence pairs"}


def test_accuracy_ignores_ties_and_invalid_rows_by_hand() -> None:
    arrays = {
        "prediction_a": np.array([0.9, 0.2, 0.5, 0.7, 0.4]), "prediction_b": np.array([0.1, 0.8, 0.5, 0.1, 0.3]),
        "gold_a": np.array([5.0, 1.0, 3.0, 4.0, 4.0]), "gold_b": np.array([1.0, 4.0, 2.0, 4.0, 1.0]),
        "valid_a": np.ones(5), "valid_b": np.array([1.0, 1.0, 1.0, 1.0, 0.0]),
    }
    # pair 0 right, pair 1 right, pair 2 equal sims -> wrong, pair 3 equal gold -> not counted, pair 4 invalid
    metric = METRICS["pairwise_accuracy"]
    data = [arrays[name] for name in metric.inputs]
    assert metric.statistic(*data, weights=np.ones(5)) == pytest.approx(2 / 3) and metric.count(*data) == 3


def test_template_fills_once() -> None:
    assert fill("{condition}: {sentence}", "a {condition} b", "c") == "c: a {condition} b"


@pytest.mark.parametrize("rows, expected", [
    (CSTS_ROWS[:3], "3 rows; conditional rows come in adjacent pairs"),
    ([CSTS_ROWS[0], (CSTS_ROWS[1][0], "Another sentence.", "the colour", 1)], "differ in text2"),
])
def test_malformed_pairs(rows, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad"
    make_csts(bad, rows)
    spec = fixture_spec("csts", tmp_path, bad)  # pinned to the bad rows: the kind's refusal is what is left
    code, _, err = run_cli([str(spec), "--data-dir", str(bad), "--output", str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "out").exists()
