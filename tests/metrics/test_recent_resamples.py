"""A process draws a metric's bootstrap once per inputs (metrics.estimate's recent resamples): a run that writes
results.json and then verifies it, a suite run that verifies its members, a board after runs in one process. What
is kept is the computation's own copy, read-only, keyed by every byte that decides it; a large input is never
kept (no memory that grows with the corpus)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specrun.metrics import clear_recent, estimate
from specrun.metrics.resampling import distribution
from specrun.results.verify import load_verified
from tests.conftest import SPECS, run_ok

ESTIMATE = importlib.import_module("specrun.metrics.estimate")  # the module; `specrun.metrics.estimate` is also a name


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of bootstrap distributions drawn, one entry per draw (its unit count)."""
    drawn: list[int] = []
    original: Callable[..., np.ndarray] = ESTIMATE.distribution

    def counted(statistic: Callable[[np.ndarray], np.ndarray], n_units: int, *args: Any, **kwargs: Any) -> Any:
        drawn.append(n_units)
        return original(statistic, n_units, *args, **kwargs)

    monkeypatch.setattr(ESTIMATE, "distribution", counted)
    clear_recent()
    return drawn


def pairs(seed: int, n: int = 60) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = rng.random(n)
    return {"prediction": gold + rng.standard_normal(n), "gold": gold}


def fresh(name: str, arrays: dict[str, np.ndarray], resamples: int, seed: int) -> np.ndarray:
    """The distribution computed directly, outside the kept ones."""
    metric = ESTIMATE.METRICS[name]
    data = [np.asarray(arrays[key], dtype=np.float64) for key in metric.inputs]
    return distribution(lambda weights: metric.statistic(*data, weights=weights), len(data[0]), resamples, seed)


def test_the_same_inputs_draw_once_and_anything_else_draws_again(draws: list[int]) -> None:
    arrays = pairs(20261207)
    first = ESTIMATE.resample("spearman", arrays, resamples=300, seed=1)
    again = ESTIMATE.resample("spearman", {k: v.copy() for k, v in arrays.items()}, resamples=300, seed=1)
    assert again is first and draws == [60]
    assert not first.values.flags.writeable and not first.each.flags.writeable  # shared: nobody edits them
    with pytest.raises(ValueError, match="read-only"):
        first.values[0] = 0.0
    for name, changed, resamples, seed in [("spearman", {"gold": arrays["gold"][::-1].copy()}, 300, 1),
                                           ("spearman", {}, 301, 1), ("spearman", {}, 300, 2),
                                           ("pearson", {}, 300, 1)]:
        inputs = {**arrays, **changed}
        other = ESTIMATE.resample(name, inputs, resamples=resamples, seed=seed)
        assert other is not first
        np.testing.assert_array_equal(other.values, fresh(name, inputs, resamples, seed))
    assert len(draws) == 5
    score = estimate("spearman", arrays, resamples=300, confidence=0.95, seed=1, interval="bca")
    assert len(draws) == 5 and score.value == first.point
    clear_recent()
    assert ESTIMATE.resample("spearman", arrays, resamples=300, seed=1) is not first and len(draws) == 6


def test_a_callers_later_edit_reaches_neither_the_kept_draws_nor_their_statistic(draws: list[int]) -> None:
    arrays = pairs(20261208)
    before = {k: v.copy() for k, v in arrays.items()}
    kept = ESTIMATE.resample("pearson", arrays, resamples=200, seed=3)
    arrays["prediction"][:] = arrays["gold"]  # the caller reuses its buffer
    np.testing.assert_array_equal(kept.values, fresh("pearson", before, 200, 3))
    ones = np.ones((1, 60))
    assert kept.statistic(ones)[0] == pytest.approx(np.corrcoef(before["prediction"], before["gold"])[0, 1])
    edited = ESTIMATE.resample("pearson", arrays, resamples=200, seed=3)
    assert edited is not kept and edited.point == pytest.approx(1.0) and len(draws) == 2


def test_inputs_over_the_budget_are_never_kept(draws: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ESTIMATE, "RECENT_BYTES", 2 * 60 * 8 - 1)  # one byte short of the two inputs
    arrays = pairs(20261209)
    first = ESTIMATE.resample("pearson", arrays, resamples=100, seed=0)
    again = ESTIMATE.resample("pearson", arrays, resamples=100, seed=0)
    assert again is not first and len(draws) == 2
    np.testing.assert_array_equal(again.values, first.values)


def test_a_run_verified_in_the_same_process_draws_nothing_again(draws: list[int], tmp_path: Path, data_dir: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Without any cache on disk: the run draws each metric's bootstrap (BIOSSES: 100 pairs), reading its
    results back (verification recomputes every interval) draws none, and gives the numbers the run wrote."""
    results = run_ok([str(SPECS / "biosses.yaml"), "-q", "--adapter", "hashing", "--prompt", "recent: ", "--no-cache",
                      "--data-dir", str(data_dir), "--output", str(tmp_path / "out")], capsys)
    drawn = len(draws)
    assert drawn >= 2 and set(draws) == {100}
    verified = load_verified(next((tmp_path / "out").rglob("results.json")))
    assert len(draws) == drawn
    assert verified.results.scores == results.scores
