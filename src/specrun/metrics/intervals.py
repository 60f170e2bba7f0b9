"""How a bootstrap distribution becomes an interval: the methods a spec's `uncertainty.interval` names.

Every method reads the same resamples (the one driver, `resampling.distribution`), so they differ only in what they
make of them; `bench/coverage.py` measures how often each covers the value it is meant to cover.

- percentile: the (1 - c)/2 and (1 + c)/2 quantiles of the resampled values (scipy.stats.bootstrap's percentile).
- basic: those quantiles reflected about the value, 2 v - q (scipy's basic, "reverse percentile"): corrects a
  resampling bias, for the statistic's value on the whole population, and may leave out the value itself.
- centred: the percentile interval moved by value - median of the resamples, so that its middle resample sits on
  the value. A plug-in statistic of a sample (mutual information, a threshold chosen on the same units) is biased
  upward, and a resample of that sample is biased upward again by about as much: the percentile interval then lies
  above the value (77 classes on 3,080 documents: a V-measure of 0.7812 in [0.7848, 0.7997]). Moved back by the
  resamples' own bias, it covers what the benchmark's statistic gives on average at this number of units, and
  always holds the value.
- bca: bias-corrected and accelerated, computed by scipy.stats.bootstrap itself on these resamples (its jackknife
  calls the statistic on every leave-one-unit-out sample: n evaluations).
- centred_t_runs: the centred interval, never narrower than the Student-t interval over the per-run values (value
  +- t(R-1) x sd(runs) / sqrt(R)), for a value that is the mean over R runs that are independent replicate units
  (the clustering kind's `sets`). The two-level bootstrap draws R runs out of R, so it sees (R-1)/R of the variance
  between them and reads it with normal quantiles: with 5-10 sets unlike each other, centred covered 0.84-0.89
  (bench/coverage_sets.py). Here the centred interval is stretched about the value as `widened` stretches it, to
  the spread the t half-width implies, and each side is then at least that half-width. It reads the resamples and
  the per-run values (`Resampled.each`), both recomputed from the predictions.

Each method also reads the resamples as a distribution of plausible values (`plausible`: reflected for basic,
moved for centred), whose percentile interval is its interval; `compare` reports P(A better) as the share of
plausible differences on A's side of 0, and the leaderboard ranks plausible scores (bca reads the resamples as
they are)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from specrun.core.contracts import INTERVAL_METHODS
from specrun.core.errors import MetricError
from specrun.metrics.resampling import BOOTSTRAP_BATCH, percentile_interval
from specrun.metrics.weighted import unit_counts

__all__ = ["INTERVAL_METHODS", "ROUNDING", "ROUNDING_FLOOR", "ahead", "beats", "centring", "interval", "jackknife_sd",
           "plausible", "widened"]

# Two values this close are one: a paired difference or a rank decided by rounding would differ between two exact
# computations of the same number (two models tied in a resample: 0.0 in one order of the sums, 1e-16 in another).
# Relative to the values compared (an rmse of 1e4 rounds at 1e-12, one of 1e-13 is all below it), with a floor for
# values near 0 (a correlation near 0 is a sum of terms of order 1)
ROUNDING = 1e-12
ROUNDING_FLOOR = 1e-15


def ahead(difference: np.ndarray | float, scale: np.ndarray | float = 0.0) -> np.ndarray:
    """Where a (higher-is-better) difference of values of about `scale` is one beyond their rounding: a win,
    never a tie (NaN is none)."""
    size = np.abs(np.asarray(scale, dtype=np.float64))
    return np.asarray(difference) > ROUNDING * np.where(np.isfinite(size), size, 0.0) + ROUNDING_FLOOR


def beats(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """Where a is above b beyond rounding (-inf, an absent model, below every number and tied with itself)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return ahead(a - b, np.maximum(np.abs(a), np.abs(b)))

Statistic = Callable[[np.ndarray], np.ndarray]  # unit weights (batch, units) -> (batch,) values


def plausible(method: str, point: float | np.ndarray, values: np.ndarray, *, each: np.ndarray | None = None,
              confidence: float = 0.95) -> np.ndarray:
    """The resampled values (axis 0; one column per statistic) as the method reads them: a distribution whose
    percentile interval is the method's interval (bca reads the resamples as they are, at levels of its own;
    centred_t_runs, one statistic only, stretches the centred values about the value by its two ratios at
    `confidence`, from the per-run values `each`)."""
    if method == "basic":
        return 2 * np.asarray(point) - values
    if method == "centred":
        return values + centring(point, values)
    if method == "centred_t_runs":
        moved = values + centring(point, values)
        below, above = t_runs_ratios(float(point), values, _runs(each), confidence)
        return np.where(moved < point, point + below * (moved - point), point + above * (moved - point))
    return values


def centring(point: float | np.ndarray, values: np.ndarray) -> np.ndarray:
    """What the centred method adds to the resamples (axis 0): the value minus their median."""
    return np.asarray(point) - np.median(values, axis=0)


def interval(method: str, point: float, values: np.ndarray, confidence: float, *,
             statistic: Statistic | None = None, n_units: int = 0,
             each: np.ndarray | None = None) -> tuple[float, float]:
    """The method's interval from the resampled values (1-D) and the value on all units; bca also needs the
    statistic of unit weights and the number of units, for its jackknife; centred_t_runs the per-run values."""
    if method not in INTERVAL_METHODS:
        raise MetricError(f"unknown interval method {method!r}; one of {', '.join(INTERVAL_METHODS)}")
    if method == "centred_t_runs":
        low, high = interval("centred", point, values, confidence)
        below, above = t_runs_ratios(point, values, _runs(each), confidence)
        return point - below * (point - low) - _floor(low, point, each, confidence), \
            point + above * (high - point) + _floor(point, high, each, confidence)
    if method == "bca":
        if statistic is None or n_units < 2:
            raise MetricError("bca needs the statistic and at least 2 units for its jackknife")
        return _bca(point, values, confidence, statistic, n_units)
    low, high = percentile_interval(values, confidence)
    if method == "basic":
        return 2 * point - high, 2 * point - low
    if method == "centred":
        shift = float(centring(point, values))
        # the median lies between the two quantiles, so the moved interval holds the value; min/max undo rounding
        return min(low + shift, point), max(high + shift, point)
    return low, high


def _bca(point: float, values: np.ndarray, confidence: float, statistic: Statistic,
         n_units: int) -> tuple[float, float]:
    """scipy.stats.bootstrap's BCa interval on these resamples: scipy is handed the unit indices as the sample and
    the resamples as a previous bootstrap result (n_resamples=0), so it draws nothing and computes z0 from them
    and the acceleration from its own jackknife of the statistic."""
    import warnings

    from scipy import stats

    def of_indices(index: np.ndarray, axis: int = -1) -> np.ndarray:
        index = np.asarray(index)
        return np.asarray(statistic(unit_counts(np.atleast_2d(index), n_units))).reshape(index.shape[:-1])

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = stats.bootstrap((np.arange(n_units),), of_indices, n_resamples=0, vectorized=True,
                                 bootstrap_result=SimpleNamespace(bootstrap_distribution=np.asarray(values)),
                                 confidence_level=confidence, method="BCa", batch=BOOTSTRAP_BATCH)
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):
        raise MetricError(f"the BCa interval is undefined here (the {len(values)} resamples lie on one side of the "
                          f"value {point!r}, or do not vary); choose another uncertainty.interval")
    return low, high


def jackknife_sd(statistic: Statistic, n_units: int, groups: np.ndarray | None = None) -> float:
    """The jackknife's standard error of the statistic (leave one unit out). A bootstrap resample of a clustering
    can fill no class x cluster cell the sample left empty, so with few documents per cell its spread falls short
    of the true one; leaving a unit out empties a cell it holds alone, so the jackknife sees that variation.
    `groups` numbers units alike in every input (the same gold class and clusters): they leave the same value
    out, so one evaluation per group (a clustering: one per filled cell) stands for all of them."""
    kinds = np.arange(n_units) if groups is None else np.asarray(groups)
    if len(kinds) != n_units or n_units < 2:
        raise MetricError(f"the jackknife needs a group for each of at least 2 units, got {len(kinds)} for {n_units}")
    first, counts = np.unique(kinds, return_index=True, return_counts=True)[1:]
    left = []
    for start in range(0, len(first), BOOTSTRAP_BATCH):
        chunk = first[start:start + BOOTSTRAP_BATCH]
        weights = np.ones((len(chunk), n_units))
        weights[np.arange(len(chunk)), chunk] = 0.0
        left.append(np.asarray(statistic(weights), dtype=np.float64).reshape(-1))
    out = np.concatenate(left)
    mean = float(np.sum(counts * out) / n_units)
    return float(np.sqrt((n_units - 1) / n_units * np.sum(counts * (out - mean) ** 2)))


def widened(point: float, values: np.ndarray, confidence: float, sd: float) -> tuple[float, float]:
    """The centred interval with each side stretched about the value by sd / the resamples' sd when that is above
    1 (never narrowed): the resamples' shape and centre, a spread no smaller than `sd` (the jackknife's)."""
    low, high = interval("centred", point, values, confidence)
    spread = float(np.std(values, ddof=1))
    ratio = max(1.0, sd / spread) if spread > 0 else 1.0
    return point - ratio * (point - low), point + ratio * (high - point)


def t_half_width(each: np.ndarray, confidence: float) -> float:
    """t(R-1, (1 + c)/2) x sd(runs, ddof 1) / sqrt(R): the Student-t half-width over R per-run values."""
    from scipy import stats

    runs = _runs(each)
    return float(stats.t.ppf((1 + confidence) / 2, len(runs) - 1) * np.std(runs, ddof=1) / np.sqrt(len(runs)))


def t_runs_ratios(point: float, values: np.ndarray, each: np.ndarray, confidence: float) -> tuple[float, float]:
    """How far centred_t_runs stretches each side of the centred interval about the value: `widened`'s ratio
    (the t half-width / z as the sd), raised on a side shorter than the t half-width to reach it."""
    from scipy import stats

    low, high = interval("centred", point, values, confidence)
    half = t_half_width(each, confidence)
    spread = float(np.std(values, ddof=1))
    ratio = max(1.0, half / float(stats.norm.ppf((1 + confidence) / 2)) / spread) if spread > 0 else 1.0
    below = max(ratio, half / (point - low)) if point > low else ratio
    above = max(ratio, half / (high - point)) if high > point else ratio
    return below, above


def _floor(low: float, high: float, each: np.ndarray | None, confidence: float) -> float:
    """What a side of no length (most resamples equal to the value) still needs to reach the t half-width."""
    return t_half_width(_runs(each), confidence) if high <= low else 0.0


def _runs(each: np.ndarray | None) -> np.ndarray:
    values = np.asarray([] if each is None else each, dtype=np.float64).reshape(-1)
    if len(values) < 2:
        raise MetricError(f"centred_t_runs needs the values of at least 2 runs (the sets), got {len(values)}")
    return values
