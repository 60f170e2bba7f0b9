"""Metrics stage: each metric is a vectorised statistic over the protocol's per-unit arrays, with a seeded
percentile bootstrap that resamples units (pairs, queries) via scipy.stats.bootstrap.

A new metric is one function plus one line in METRICS.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from specrun.errors import SpecrunError


class MetricError(SpecrunError):
    """A metric is undefined on what the model produced (NaN, constant prediction, degenerate resamples)."""


@dataclass(frozen=True)
class Metric:
    inputs: tuple[str, ...]
    statistic: Callable[..., np.ndarray]  # statistic(*inputs, axis=-1): reduces the last axis
    needs_variation: bool = False  # undefined when an input is constant (correlations)


def pearson(prediction: np.ndarray, gold: np.ndarray, axis: int = -1) -> np.ndarray:
    return stats.pearsonr(prediction, gold, axis=axis).statistic


def spearman(prediction: np.ndarray, gold: np.ndarray, axis: int = -1) -> np.ndarray:
    # scipy.stats.spearmanr reads a 2-D input as many variables, not as a batch of resamples. Pearson of
    # average ranks is Spearman's definition (ties included) and vectorises over the bootstrap axis.
    ranked_pred = stats.rankdata(prediction, axis=axis)
    ranked_gold = stats.rankdata(gold, axis=axis)
    return stats.pearsonr(ranked_pred, ranked_gold, axis=axis).statistic


METRICS: dict[str, Metric] = {
    "pearson": Metric(inputs=("prediction", "gold"), statistic=pearson, needs_variation=True),
    "spearman": Metric(inputs=("prediction", "gold"), statistic=spearman, needs_variation=True),
}


@dataclass(frozen=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float
    n: int


def estimate(name: str, arrays: dict[str, np.ndarray], *, resamples: int, confidence: float,
             seed: int) -> Estimate:
    """The metric on all units plus its percentile bootstrap interval; the same seed gives the same interval."""
    metric = METRICS[name]
    data = tuple(np.asarray(arrays[key], dtype=np.float64) for key in metric.inputs)
    n = len(data[0])
    for key, values in zip(metric.inputs, data, strict=True):
        if not np.all(np.isfinite(values)):
            raise MetricError(f"{name}: {key} has {int(np.sum(~np.isfinite(values)))} non-finite value(s)")
        if metric.needs_variation and np.ptp(values) == 0:
            raise MetricError(f"{name}: {key} is constant over all {n} units ({values[0]!r}); "
                              "the correlation is undefined")
    if n < 3:
        raise MetricError(f"{name}: {n} unit(s); at least 3 are needed for an interval")
    value = float(metric.statistic(*data, axis=-1))
    with warnings.catch_warnings():
        # a resample that happens to be constant gives NaN; counted and reported below, never averaged away
        warnings.simplefilter("ignore")
        result = stats.bootstrap(data, metric.statistic, n_resamples=resamples, confidence_level=confidence,
                                 method="percentile", paired=True, vectorized=True,
                                 rng=np.random.default_rng(seed))
    degenerate = int(np.sum(~np.isfinite(result.bootstrap_distribution)))
    if degenerate:
        raise MetricError(f"{name}: {degenerate} of {resamples} bootstrap resamples are degenerate "
                          f"(constant input); the interval is undefined on {n} units")
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return Estimate(value=value, ci_low=low, ci_high=high, n=n)
