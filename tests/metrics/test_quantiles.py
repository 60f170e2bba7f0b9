"""The bootstrap's quantiles are scipy.stats.quantile's to the last bit, on the fast path (finite float64) and off
it (NaN, float32, several columns), so an interval never moves with the path taken."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from specrun.metrics.resampling import percentile_interval, quantiles


def test_finite_distributions_give_scipy_s_bits_at_every_size_tie_and_level() -> None:
    rng = np.random.default_rng(3)
    for trial in range(600):
        n = int(rng.integers(1, 6)) if trial % 3 == 0 else int(rng.integers(6, 2500))
        values = rng.standard_normal(n)
        if trial % 4 == 0:
            values = np.round(values * 3) / 3  # ties
        if trial % 5 == 0:
            values = 0.5 + values * 1e-9  # a narrow distribution
        levels = rng.random(int(rng.integers(1, 6)))  # one level included: scipy then keeps no axis
        if trial % 7 == 0:
            levels = np.array([0.0, 0.025, 0.5, 0.975, 1.0])
        ours, theirs = quantiles(values, levels), stats.quantile(values, levels, axis=-1)
        assert np.shape(ours) == np.shape(theirs)
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("values", [np.array([0.2, np.nan, 0.4, 0.1]), np.array([0.3, 0.1, 0.2], dtype=np.float32),
                                    np.arange(12.0).reshape(3, 4)])
def test_other_distributions_go_to_scipy(values: np.ndarray) -> None:
    levels = np.array([0.1, 0.9], dtype=values.dtype)
    expected = stats.quantile(values, levels if values.ndim == 1 else levels[None, :], axis=-1)
    np.testing.assert_array_equal(quantiles(values, levels if values.ndim == 1 else levels[None, :]), expected)


def test_the_percentile_interval_is_scipy_bootstrap_s_on_the_same_distribution() -> None:
    rng = np.random.default_rng(5)
    data = rng.standard_normal(40)
    found = stats.bootstrap((data,), np.mean, n_resamples=999, method="percentile", confidence_level=0.9,
                            random_state=np.random.default_rng(1), vectorized=True)
    distribution = found.bootstrap_distribution
    assert percentile_interval(distribution, 0.9) == (found.confidence_interval.low, found.confidence_interval.high)
