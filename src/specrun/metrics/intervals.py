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

__all__ = ["INTERVAL_METHODS", "centring", "interval", "jackknife_sd", "plausible", "widened"]

Statistic = Callable[[np.ndarray], np.ndarray]  # unit weights (batch, units) -> (batch,) values


def plausible(method: str, point: float | np.ndarray, values: np.ndarray) -> np.ndarray:
    """The resampled values (axis 0; one column per statistic) as the method reads them: a distribution whose
    percentile interval is the method's interval (bca reads the resamples as they are, at levels of its own)."""
    if method == "basic":
        return 2 * np.asarray(point) - values
    if method == "centred":
        return values + centring(point, values)
    return values


def centring(point: float | np.ndarray, values: np.ndarray) -> np.ndarray:
    """What the centred method adds to the resamples (axis 0): the value minus their median."""
    return np.asarray(point) - np.median(values, axis=0)


def interval(method: str, point: float, values: np.ndarray, confidence: float, *,
             statistic: Statistic | None = None, n_units: int = 0) -> tuple[float, float]:
    """The method's interval from the resampled values (1-D) and the value on all units; bca also needs the
    statistic of unit weights and the number of units, for its jackknife."""
    if method not in INTERVAL_METHODS:
        raise MetricError(f"unknown interval method {method!r}; one of {', '.join(INTERVAL_METHODS)}")
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
