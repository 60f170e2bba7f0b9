"""The one resampling driver: which units each bootstrap resample draws, and the percentile interval of a
distribution. Estimates, `compare` and the leaderboard all draw through `draw_indices`, so resample b is the same
units everywhere by construction (a paired comparison scores both models on exactly the resamples each model's
own interval used).

The draws are numpy's `default_rng(seed).integers(0, n, (batch, n))`, batch by batch, and the interval is
`scipy.stats.quantile` at (1 - confidence) / 2 and its complement: the same numbers `scipy.stats.bootstrap(...,
method="percentile", batch=BOOTSTRAP_BATCH, rng=default_rng(seed))` gives, which is what specrun used before it
had its own driver (tests/metrics/test_resampling.py checks the two against each other).

A protocol with several runs (classification's experiments, k-means runs) is resampled at two levels: the units as
above, and with them, per resample, `runs` runs drawn with replacement from a second stream of the same seed
(`draw_runs`); a resample's value is the mean of the per-run values over the drawn runs, as the point value is the
mean over all runs. So the interval carries both the choice of units and the choice of fit."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator

import numpy as np

from specrun.core.recent import Recent
from specrun.metrics.weighted import unit_counts

BOOTSTRAP_BATCH = 250  # resamples held in memory at once: 250 x units x 8 bytes per array


def draw_indices(n_units: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """(batch, n_units) resampled unit indices, batch by batch; the same seed gives the same draws."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, BOOTSTRAP_BATCH):
        yield rng.integers(0, n_units, (min(BOOTSTRAP_BATCH, resamples - start), n_units), dtype=np.int64)


RUN_STREAM = 1  # the run draws come from default_rng([seed, RUN_STREAM]): the unit draws stay what they were


RECENT_DRAW_BYTES = 32 * 2**20  # the drawn multiplicities kept for the next metric on the same units and seed
_DRAWN: Recent[list[np.ndarray]] = Recent()


def draw_weights(n_units: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """(batch, n_units) unit multiplicities of each resample: what a count-weighted statistic takes. Every metric
    of a split draws the same ones (the same units, resamples and seed): the last draws, RECENT_DRAW_BYTES in all,
    are kept read-only and served again as copies (a statistic, a plugin's too, may write into its weights);
    larger draws are made batch by batch each time."""
    key = (n_units, resamples, seed)
    if n_units * resamples * 8 > RECENT_DRAW_BYTES:
        for index in draw_indices(n_units, resamples, seed):
            yield unit_counts(index, n_units)
        return
    kept = _DRAWN.get(key)
    if kept is None:
        kept = [unit_counts(index, n_units) for index in draw_indices(n_units, resamples, seed)]
        for weights in kept:
            weights.flags.writeable = False
        _DRAWN.put(key, kept, sum(weights.nbytes for weights in kept), total=RECENT_DRAW_BYTES)
    for weights in kept:
        yield weights.copy()  # a copy of 250 x n numbers is about 1 % of drawing them


def forget_draws() -> None:
    """Forget the kept multiplicities: the next draw of each is made again (metrics.clear_recent calls this)."""
    _DRAWN.clear()


def draw_runs(n_runs: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """(batch, n_runs) multiplicities of each run in each resample (n_runs drawn with replacement), in the same
    batches as `draw_weights`."""
    rng = np.random.default_rng([seed, RUN_STREAM])
    for start in range(0, resamples, BOOTSTRAP_BATCH):
        index = rng.integers(0, n_runs, (min(BOOTSTRAP_BATCH, resamples - start), n_runs), dtype=np.int64)
        yield unit_counts(index, n_runs)


def draws(n_units: int, n_runs: int, resamples: int, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """(unit weights, run weights or None) batch by batch: the draws of every resampled statistic."""
    runs = draw_runs(n_runs, resamples, seed) if n_runs else None
    for weights in draw_weights(n_units, resamples, seed):
        yield weights, None if runs is None else next(runs)


def mean_over_runs(values: np.ndarray, run_weights: np.ndarray | None) -> np.ndarray:
    """(..., runs) per-run values -> (...) their mean with the drawn multiplicities (None: every run once)."""
    if run_weights is None:
        return values.mean(axis=-1)
    drawn = run_weights > 0  # a run not drawn counts for nothing, even where it is undefined (NaN)
    return np.where(drawn, values * run_weights, 0.0).sum(axis=-1) / run_weights.sum(axis=-1)


def distribution(statistic: Callable[[np.ndarray], np.ndarray], n_units: int, resamples: int,
                 seed: int, n_runs: int = 0) -> np.ndarray:
    """statistic(weights) of every resample, (resamples, ...); degenerate resamples stay NaN for the caller.
    With n_runs, statistic returns (batch, n_runs) per-run values, combined over the runs each resample draws."""
    parts = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for weights, run_weights in draws(n_units, n_runs, resamples, seed):
            values = np.asarray(statistic(weights))
            parts.append(values if not n_runs else mean_over_runs(values, run_weights))
    return np.concatenate(parts, axis=0)


def quantiles(values: np.ndarray, levels: float | np.ndarray) -> np.ndarray:
    """Quantiles of a distribution (axis 0) as scipy.stats.bootstrap takes them (scipy.stats.quantile). A finite
    float64 distribution takes scipy's own arithmetic for its default method (`_linear_quantiles`), without its
    input checks: 0.04 ms a call against 0.4 ms, thousands of calls in a board."""
    levels = np.asarray(levels, dtype=values.dtype)
    if values.dtype == np.float64 and values.ndim == levels.ndim == 1 and len(values) \
            and ((levels >= 0) & (levels <= 1)).all() and np.isfinite(values).all():
        return _linear_quantiles(values, levels)
    from scipy import stats  # imported here: a run whose estimates are all cached never needs it

    quantile = getattr(stats, "quantile", None)
    if quantile is None:  # scipy < 1.15 computed the interval with numpy's percentile
        return np.percentile(values, levels * 100, axis=0)
    return quantile(values, levels, axis=-1)


def _linear_quantiles(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """scipy.stats.quantile(values, levels, method="linear") of finite 1-D values: its Hyndman-Fan formula, step
    for step in the same dtype (index j + 1 = floor(p n + 1 - p), weight g its fraction), so the same bits; a test
    holds it to scipy's on ties, tiny and large samples and every level."""
    ordered = np.sort(values)
    n = len(ordered)
    position = levels * n + (1 - levels)
    upper = position // 1
    lower = upper - 1
    weight = np.where(lower < 0, 0.0, position % 1)
    lower, upper = np.clip(lower, 0.0, n - 1), np.clip(upper, 0.0, n - 1)
    found = (1 - weight) * ordered[lower.astype(np.int64)] + weight * ordered[upper.astype(np.int64)]
    return found.reshape(()) if len(levels) == 1 else found  # scipy keeps no axis for one level


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile bootstrap interval of a distribution (axis 0), as scipy.stats.bootstrap computes it."""
    alpha = np.asarray((1 - confidence) / 2, dtype=values.dtype)
    low, high = quantiles(values, np.stack((alpha, 1 - alpha), axis=-1))
    return float(low), float(high)
