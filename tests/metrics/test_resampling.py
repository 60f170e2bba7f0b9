"""The one resampling driver gives scipy.stats.bootstrap's numbers (the draws and the percentile interval specrun
used before it had its own driver), and estimates, compare and the leaderboard draw the same resamples."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from specrun.metrics import BOOTSTRAP_BATCH, METRICS, draw_indices, estimate, unit_counts
from specrun.metrics.resampling import distribution, percentile_interval


@pytest.mark.parametrize("name", ["pearson", "spearman", "map"])
@pytest.mark.parametrize("n, resamples, confidence, seed", [(7, 100, 0.95, 0), (120, 1000, 0.9, 20261006),
                                                            (33, 251, 0.99, 5)])
def test_estimate_equals_scipy_bootstrap(name: str, n: int, resamples: int, confidence: float, seed: int) -> None:
    rng = np.random.default_rng(n)
    gold = np.round(rng.random(n) * 5, 1)
    arrays = {"prediction": gold + rng.standard_normal(n), "gold": gold, "ap": rng.random(n)}
    metric = METRICS[name]
    data = [arrays[key] for key in metric.inputs]
    reference = stats.bootstrap((np.arange(n),), lambda index, axis=-1: metric.statistic(
        *data, weights=unit_counts(index, n)), n_resamples=resamples, confidence_level=confidence,
        method="percentile", vectorized=True, batch=BOOTSTRAP_BATCH, rng=np.random.default_rng(seed))
    score = estimate(name, arrays, resamples=resamples, confidence=confidence, seed=seed)
    assert (score.ci_low, score.ci_high) == (reference.confidence_interval.low, reference.confidence_interval.high)
    values = distribution(lambda weights: metric.statistic(*data, weights=weights), n, resamples, seed)
    np.testing.assert_array_equal(values, reference.bootstrap_distribution)


def test_draws_are_seeded_batched_and_shared() -> None:
    first = np.concatenate(list(draw_indices(9, 600, 3)))
    assert first.shape == (600, 9) and np.array_equal(first, np.concatenate(list(draw_indices(9, 600, 3))))
    assert [len(batch) for batch in draw_indices(9, 600, 3)] == [250, 250, 100]
    assert not np.array_equal(first, np.concatenate(list(draw_indices(9, 600, 4))))


def test_percentile_interval_of_a_plain_loop() -> None:
    values = np.random.default_rng(1).standard_normal(1000)
    low, high = percentile_interval(values, 0.9)
    assert low == pytest.approx(np.percentile(values, 5), abs=1e-12)
    assert high == pytest.approx(np.percentile(values, 95), abs=1e-12)


def test_a_run_not_drawn_counts_for_nothing_even_when_undefined() -> None:
    from specrun.metrics.resampling import mean_over_runs

    values = np.array([[0.5, np.nan, 0.7], [0.5, np.nan, 0.7]])
    assert mean_over_runs(values, np.array([[2.0, 0.0, 1.0], [0.0, 1.0, 2.0]])).tolist()[0] == pytest.approx(
        (2 * 0.5 + 0.7) / 3)
    assert np.isnan(mean_over_runs(values, np.array([[0.0, 1.0, 2.0]]))[0])  # a drawn undefined run is NaN


def test_the_last_draws_are_kept_read_only_and_equal_a_fresh_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every metric of a split draws the same multiplicities: the second draw of the same units, resamples and
    seed is the kept one (equal to counting a fresh draw, served as a copy a statistic may write into); another
    seed is drawn; a draw over RECENT_DRAW_BYTES is made each time; the oldest go first; clear_recent forgets."""
    from specrun.metrics import clear_recent, draw_weights, resampling

    made: list[tuple[int, int, int]] = []
    real = resampling.draw_indices
    monkeypatch.setattr(resampling, "draw_indices", lambda n, r, s: made.append((n, r, s)) or real(n, r, s))
    clear_recent()
    fresh = [unit_counts(index, 40) for index in real(40, 600, 3)]
    for _ in range(2):
        kept = list(draw_weights(40, 600, 3))
        assert len(kept) == len(fresh) and all(np.array_equal(a, b) for a, b in zip(kept, fresh, strict=True))
        for weights in kept:  # a statistic that normalises its weights in place spoils no later draw
            weights /= weights.sum(axis=-1, keepdims=True)
    assert made == [(40, 600, 3)]
    list(draw_weights(40, 600, 4))
    assert made[-1] == (40, 600, 4)
    monkeypatch.setattr(resampling, "RECENT_DRAW_BYTES", 40 * 600 * 8)  # room for one draw of these
    list(draw_weights(41, 600, 3))  # too large: drawn, not kept
    list(draw_weights(41, 600, 3))
    assert made[-2:] == [(41, 600, 3)] * 2
    list(draw_weights(41, 600, 3))
    list(draw_weights(40, 600, 5))  # kept: the oldest go until one draw's bytes remain
    list(draw_weights(40, 600, 3))
    assert made[-2:] == [(40, 600, 5), (40, 600, 3)]
    clear_recent()
    list(draw_weights(40, 600, 3))
    assert made[-1] == (40, 600, 3) and len(made) == 8


def test_threads_drawing_the_same_units_at_once_get_a_fresh_draw_each() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from specrun.metrics import clear_recent, draw_weights

    clear_recent()
    fresh = np.concatenate([unit_counts(index, 30) for index in draw_indices(30, 700, 9)])
    with ThreadPoolExecutor(4) as pool:
        drawn = list(pool.map(lambda _: np.concatenate(list(draw_weights(30, 700, 9))), range(8)))
    assert all(np.array_equal(d, fresh) for d in drawn)
