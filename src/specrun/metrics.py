"""Metrics stage: each metric is a statistic over the protocol's per-unit arrays, with a seeded percentile
bootstrap that resamples units (pairs, queries, sentence pairs) via scipy.stats.bootstrap.

Every metric is written in a count-weighted form, metric(*arrays, weights): a bootstrap resample is the data
with unit j taken weights[j] times, and the plain value is weights = 1. scipy.stats.bootstrap draws the unit
indices and gives the percentile interval; turning indices into counts lets one sort of the data serve all
resamples (a resample's ranks follow from the counts), which keeps 1000 resamples of Spearman over 10,000
pairs well under a second. scipy's own spearmanr cannot do this: it reads a 2-D input as many variables.

A new metric is one function plus one registration (`registry.METRICS.register(name, Metric(...))`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specrun import registry
from specrun.errors import SpecrunError
from specrun.types import RANK_CUTOFFS, Score

BOOTSTRAP_BATCH = 250  # resamples held in memory at once: 250 x units x 8 bytes per array


class MetricError(SpecrunError):
    """A metric is undefined on what the model produced (NaN, constant prediction, degenerate resamples)."""


@dataclass(frozen=True)
class Metric:
    """A registered metric and its metadata: what it reads, which way is better, what the hub calls it."""

    inputs: tuple[str, ...]  # output arrays of a protocol; a protocol kind that produces them all can feed it
    statistic: Callable[..., np.ndarray]  # statistic(*inputs, weights) with weights (..., units) -> (...)
    must_vary: tuple[str, ...] = ()  # inputs whose constancy makes the metric undefined (correlations)
    count: Callable[..., int] | None = None  # units the value is computed on, when not all of them
    direction: str = "higher"  # which way is better, the default of a spec's `direction`
    hub_id: str = ""  # the hub's metric type (pearsonr, spearmanr, accuracy, map, ...); "" = the metric's name


def unit_counts(index: np.ndarray, n: int) -> np.ndarray:
    """(..., n) resampled unit indices -> (..., n) float multiplicities of each unit."""
    flat = index.reshape(-1, n)
    offsets = (np.arange(flat.shape[0]) * n)[:, None]
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.size).reshape(flat.shape)
    return counts.reshape(index.shape).astype(np.float64)


def sorted_ranks(ordered: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties share the mean) of values sorted ascending, unit j counted weights[..., j] times."""
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    if len(starts) == len(ordered):  # no ties: a unit's copies take ranks below+1 .. below+w, mean cum - (w-1)/2
        ranks = np.cumsum(weights, axis=-1)
        ranks -= 0.5 * weights
        ranks += 0.5
        return ranks
    group_weight = np.add.reduceat(weights, starts, axis=-1)
    rank_of_group = np.cumsum(group_weight, axis=-1) - (group_weight - 1) / 2
    return np.repeat(rank_of_group, np.diff(np.r_[starts, len(ordered)]), axis=-1)


def weighted_pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pearson r of x and y with each unit counted weights[..., j] times (x, y broadcast against weights)."""
    x, y = np.broadcast_to(x, weights.shape), np.broadcast_to(y, weights.shape)
    total = weights.sum(axis=-1)
    wx, wy = weights * x, weights * y
    sum_x, sum_y = wx.sum(axis=-1), wy.sum(axis=-1)
    # sums of products in one pass each; in float64 the cancellation below costs ~1e-16 relative for ranks < 2^24
    raw_xx, raw_yy = np.einsum("...i,...i->...", wx, x), np.einsum("...i,...i->...", wy, y)
    sxy = np.einsum("...i,...i->...", wx, y) - sum_x * sum_y / total
    sxx, syy = raw_xx - sum_x * sum_x / total, raw_yy - sum_y * sum_y / total
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sxy / np.sqrt(sxx * syy)
    # a constant input leaves only rounding in sxx or syy: undefined, not a number near 0
    return np.where((sxx <= 1e-12 * raw_xx) | (syy <= 1e-12 * raw_yy), np.nan, r)


def pearson(prediction: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return weighted_pearson(prediction, gold, weights)


def spearman(prediction: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    # Pearson of average ranks, all in the prediction's sorted order (Pearson ignores the order of units)
    by_prediction = np.argsort(prediction, kind="stable")
    by_gold = np.argsort(gold, kind="stable")
    weights_p = np.take(weights, by_prediction, axis=-1)
    ranks_p = sorted_ranks(prediction[by_prediction], weights_p)
    ranks_g = sorted_ranks(gold[by_gold], np.take(weights, by_gold, axis=-1))
    position_in_gold_order = np.argsort(by_gold)
    return weighted_pearson(ranks_p, np.take(ranks_g, position_in_gold_order[by_prediction], axis=-1), weights_p)


def mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return (weights * values).sum(axis=-1) / weights.sum(axis=-1)


def conditional_spearman(pa: np.ndarray, pb: np.ndarray, ga: np.ndarray, gb: np.ndarray, va: np.ndarray,
                         vb: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Spearman over every valid row (both conditions of each sentence pair; invalid rows weigh nothing)."""
    row_weights = np.concatenate([weights * va, weights * vb], axis=-1)
    return spearman(np.concatenate([pa, pb]), np.concatenate([ga, gb]), row_weights)


def _decided(ga: np.ndarray, gb: np.ndarray, va: np.ndarray, vb: np.ndarray) -> np.ndarray:
    return (va > 0) & (vb > 0) & (ga != gb)


def pairwise_accuracy(pa: np.ndarray, pb: np.ndarray, ga: np.ndarray, gb: np.ndarray, va: np.ndarray,
                      vb: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Share of sentence pairs whose two conditions are ordered like the gold: (sim_a - sim_b)(y_a - y_b) > 0.
    Pairs with equal gold or an invalid row are not counted."""
    decided = weights * _decided(ga, gb, va, vb)
    correct = ((pa - pb) * (ga - gb)) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        return (decided * correct).sum(axis=-1) / decided.sum(axis=-1)


CONDITIONAL = ("prediction_a", "prediction_b", "gold_a", "gold_b", "valid_a", "valid_b")

METRICS = registry.METRICS
for _name, _metric in {
    "pearson": Metric(("prediction", "gold"), pearson, must_vary=("prediction", "gold"), hub_id="pearsonr"),
    "spearman": Metric(("prediction", "gold"), spearman, must_vary=("prediction", "gold"), hub_id="spearmanr"),
    "map": Metric(("ap",), mean, hub_id="map"),
    "mrr": Metric(("rr",), mean, hub_id="mrr"),
    **{f"{kind}_at_{k}": Metric((f"{kind}_at_{k}",), mean, hub_id=f"{kind}_at_{k}")
       for kind in ("precision", "recall") for k in RANK_CUTOFFS},
    "ndcg_at_10": Metric(("ndcg_at_10",), mean, hub_id="ndcg_at_10"),
    "conditional_spearman": Metric(CONDITIONAL, conditional_spearman, hub_id="spearmanr",
                                   count=lambda pa, pb, ga, gb, va, vb: int(np.sum(va > 0) + np.sum(vb > 0))),
    "pairwise_accuracy": Metric(CONDITIONAL, pairwise_accuracy, hub_id="accuracy",
                                count=lambda pa, pb, ga, gb, va, vb: int(np.sum(_decided(ga, gb, va, vb)))),
}.items():
    METRICS.register(_name, _metric)


def value(name: str, arrays: dict[str, np.ndarray]) -> float:
    """The metric on all units (every weight 1)."""
    metric = METRICS[name]
    data = [np.asarray(arrays[key], dtype=np.float64) for key in metric.inputs]
    return float(metric.statistic(*data, weights=np.ones(len(data[0]))))


def estimate(name: str, arrays: dict[str, np.ndarray], *, resamples: int, confidence: float,
             seed: int) -> Score:
    """The metric on all units plus its percentile bootstrap interval; the same seed gives the same interval."""
    metric = METRICS[name]
    data = [np.asarray(arrays[key], dtype=np.float64) for key in metric.inputs]
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
    point = float(metric.statistic(*data, weights=np.ones(n_units)))
    if not np.isfinite(point):
        raise MetricError(f"{name}: undefined on these {n} unit(s) (constant input or nothing to count)")

    def resampled(index: np.ndarray, axis: int = -1) -> np.ndarray:
        return metric.statistic(*data, weights=unit_counts(index, n_units))

    from scipy import stats  # imported here: a run whose estimates are all cached never needs it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples give NaN: counted and reported below
        result = stats.bootstrap((np.arange(n_units),), resampled, n_resamples=resamples,
                                 confidence_level=confidence, method="percentile", vectorized=True,
                                 batch=BOOTSTRAP_BATCH, rng=np.random.default_rng(seed))
    degenerate = int(np.sum(~np.isfinite(result.bootstrap_distribution)))
    if degenerate:
        raise MetricError(f"{name}: {degenerate} of {resamples} bootstrap resamples are degenerate "
                          f"(constant input); the interval is undefined on {n} units")
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return Score(value=point, ci_low=low, ci_high=high, n=n)

from specrun import corpus_metrics  # noqa: E402,F401  registers the corpus protocol's metrics
