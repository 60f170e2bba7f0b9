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
from specrun.protocols import RANK_CUTOFFS


class MetricError(SpecrunError):
    """A metric is undefined on what the model produced (NaN, constant prediction, degenerate resamples)."""


@dataclass(frozen=True)
class Metric:
    inputs: tuple[str, ...]
    statistic: Callable[..., np.ndarray]  # statistic(*inputs, axis=-1) reduces the last axis
    must_vary: tuple[str, ...] = ()  # inputs whose constancy makes the metric undefined (correlations)
    vectorized: bool = True  # False: scipy calls the statistic once per resample
    count: Callable[..., int] | None = None  # units the value is computed on, when not all of them


def pearson(prediction: np.ndarray, gold: np.ndarray, axis: int = -1) -> np.ndarray:
    return stats.pearsonr(prediction, gold, axis=axis).statistic


def spearman(prediction: np.ndarray, gold: np.ndarray, axis: int = -1) -> np.ndarray:
    # scipy.stats.spearmanr reads a 2-D input as many variables, not as a batch of resamples. Pearson of
    # average ranks is Spearman's definition (ties included) and vectorises over the bootstrap axis.
    ranked_pred = stats.rankdata(prediction, axis=axis)
    ranked_gold = stats.rankdata(gold, axis=axis)
    return stats.pearsonr(ranked_pred, ranked_gold, axis=axis).statistic


def mean(values: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(values, axis=axis)


def _valid_rows(pa: np.ndarray, pb: np.ndarray, ga: np.ndarray, gb: np.ndarray, va: np.ndarray,
                vb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = np.concatenate([va, vb]) > 0
    return np.concatenate([pa, pb])[keep], np.concatenate([ga, gb])[keep]


def conditional_spearman(pa: np.ndarray, pb: np.ndarray, ga: np.ndarray, gb: np.ndarray, va: np.ndarray,
                         vb: np.ndarray, axis: int = -1) -> float:
    """Spearman over every valid row (both conditions of each sentence pair)."""
    prediction, gold = _valid_rows(pa, pb, ga, gb, va, vb)
    return stats.spearmanr(prediction, gold).statistic


def _decided(ga: np.ndarray, gb: np.ndarray, va: np.ndarray, vb: np.ndarray) -> np.ndarray:
    return (va > 0) & (vb > 0) & (ga != gb)


def pairwise_accuracy(pa: np.ndarray, pb: np.ndarray, ga: np.ndarray, gb: np.ndarray, va: np.ndarray,
                      vb: np.ndarray, axis: int = -1) -> float:
    """Share of sentence pairs whose two conditions are ordered like the gold: (sim_a - sim_b)(y_a - y_b) > 0.
    Pairs with equal gold or an invalid row are not counted."""
    decided = _decided(ga, gb, va, vb)
    if not decided.any():
        return np.nan
    return float(np.mean(((pa - pb) * (ga - gb))[decided] > 0))


CONDITIONAL = ("prediction_a", "prediction_b", "gold_a", "gold_b", "valid_a", "valid_b")

METRICS: dict[str, Metric] = {
    "pearson": Metric(("prediction", "gold"), pearson, must_vary=("prediction", "gold")),
    "spearman": Metric(("prediction", "gold"), spearman, must_vary=("prediction", "gold")),
    "map": Metric(("ap",), mean),
    "mrr": Metric(("rr",), mean),
    **{f"{kind}_at_{k}": Metric((f"{kind}_at_{k}",), mean) for kind in ("precision", "recall") for k in RANK_CUTOFFS},
    "ndcg_at_10": Metric(("ndcg_at_10",), mean),
    "conditional_spearman": Metric(CONDITIONAL, conditional_spearman, vectorized=False,
                                   count=lambda pa, pb, ga, gb, va, vb: int(np.sum(va > 0) + np.sum(vb > 0))),
    "pairwise_accuracy": Metric(CONDITIONAL, pairwise_accuracy, vectorized=False,
                                count=lambda pa, pb, ga, gb, va, vb: int(np.sum(_decided(ga, gb, va, vb)))),
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
    n_units = len(data[0])
    for key, values in zip(metric.inputs, data, strict=True):
        if not np.all(np.isfinite(values)):
            raise MetricError(f"{name}: {key} has {int(np.sum(~np.isfinite(values)))} non-finite value(s)")
        if key in metric.must_vary and np.ptp(values) == 0:
            raise MetricError(f"{name}: {key} is constant over all {n_units} units ({values[0]!r}); "
                              "the correlation is undefined")
    if n_units < 3:
        raise MetricError(f"{name}: {n_units} unit(s); at least 3 are needed for an interval")
    n = metric.count(*data) if metric.count else n_units
    with warnings.catch_warnings():
        # a constant input gives NaN: reported below as undefined, never averaged away
        warnings.simplefilter("ignore")
        value = float(metric.statistic(*data, axis=-1))
        if not np.isfinite(value):
            raise MetricError(f"{name}: undefined on these {n} unit(s) (constant input or nothing to count)")
        result = stats.bootstrap(data, metric.statistic, n_resamples=resamples, confidence_level=confidence,
                                 method="percentile", paired=True, vectorized=metric.vectorized,
                                 rng=np.random.default_rng(seed))
    degenerate = int(np.sum(~np.isfinite(result.bootstrap_distribution)))
    if degenerate:
        raise MetricError(f"{name}: {degenerate} of {resamples} bootstrap resamples are degenerate "
                          f"(constant input); the interval is undefined on {n} units")
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return Estimate(value=value, ci_low=low, ci_high=high, n=n)
