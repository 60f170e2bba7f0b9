"""Regression measures per experiment (predicted_value is (items, runs)), count-weighted: Kendall's tau-b and
Spearman against the gold numbers, RMSE, MAE and R², as MTEB's AbsTaskRegression reports them."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS
from specrun.metrics.correlation import spearman

INPUTS = ("predicted_value", "gold_value")


def _runs(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    return predicted.reshape(len(gold), -1)


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(items, runs) values -> (..., runs) means with weights (..., items)."""
    return np.einsum("...n,nr->...r", weights, values) / np.asarray(weights).sum(axis=-1)[..., None]


def rmse(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return np.sqrt(_weighted_mean((_runs(predicted, gold) - gold[:, None]) ** 2, weights))


def mae(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return _weighted_mean(np.abs(_runs(predicted, gold) - gold[:, None]), weights)


def r2(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    residual = _weighted_mean((_runs(predicted, gold) - gold[:, None]) ** 2, weights)
    mean = (np.asarray(weights) * gold).sum(axis=-1) / np.asarray(weights).sum(axis=-1)
    spread = (np.asarray(weights) * (gold - mean[..., None]) ** 2).sum(axis=-1) / np.asarray(weights).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1 - residual / spread[..., None]


def regression_spearman(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    runs = _runs(predicted, gold)
    return np.stack([spearman(runs[:, r], gold, weights) for r in range(runs.shape[1])], axis=-1)


PAIRWISE_ITEMS = 1024  # up to this many items, tau-b is counted pair by pair with a matrix product per run


def kendall_tau(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each run on the repeated items of each resample, as scipy's kendalltau computes it. Up to
    PAIRWISE_ITEMS items, from exact integer counts for a whole batch of resamples at once (scipy's per call
    overhead was 0.3 ms, 3 s for 1,000 resamples x 10 runs of 40 items); above it, scipy on the repeated items
    (O(n log n) a call, where the pairs would cost n x n)."""
    runs = _runs(predicted, gold)
    flat = np.atleast_2d(np.asarray(weights)).astype(np.int64)
    if len(gold) <= PAIRWISE_ITEMS and np.isfinite(runs).all() and np.isfinite(gold).all():
        gold_signs, gold_ties = np.sign(gold[:, None] - gold[None, :]), _tied_pairs(gold, flat)  # once for every run
        out = np.stack([_pairwise_tau_b(runs[:, r], gold_signs, gold_ties, flat) for r in range(runs.shape[1])],
                       axis=-1)
    else:
        out = _scipy_tau_b(runs, gold, flat)
    return out.reshape(*np.shape(weights)[:-1], runs.shape[1])


def _scipy_tau_b(runs: np.ndarray, gold: np.ndarray, flat: np.ndarray) -> np.ndarray:
    from scipy import stats  # imported here: scipy.stats costs a second at start-up

    out = np.empty((len(flat), runs.shape[1]))
    for b, counts in enumerate(flat):
        index = np.repeat(np.arange(len(gold)), counts)
        for r in range(runs.shape[1]):
            out[b, r] = stats.kendalltau(runs[index, r], gold[index]).statistic
    return out


def _pairwise_tau_b(x: np.ndarray, y_signs: np.ndarray, y_ties: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(batch,) tau-b of x against y (given by the signs of its pairs' differences and its tied pairs) with each
    row of `counts` repeating the items. Concordant minus discordant pairs is half of w' S w with S[i, j] =
    sign(x_i - x_j) sign(y_i - y_j) (repeats of one item are tied, 0; at most PAIRWISE_ITEMS^2 entries, 8 MB); the
    ties are the pairs within each group of equal x (of equal y). Every count is a whole number below 2^53, exact
    in float64 whatever order BLAS adds in, so the last step is scipy's own, on the same integers: the same bits."""
    total = counts.sum(axis=1)
    weights = counts.astype(np.float64)
    signed = weights @ (np.sign(x[:, None] - x[None, :]) * y_signs)
    con_minus_dis = np.rint((signed * weights).sum(axis=1)).astype(np.int64) // 2
    pairs = total * (total - 1) // 2
    x_ties = _tied_pairs(x, counts)
    undefined = (x_ties == pairs) | (y_ties == pairs)
    safe = lambda ties: np.where(undefined, 1, pairs - ties)  # noqa: E731
    tau = con_minus_dis / np.sqrt(safe(x_ties)) / np.sqrt(safe(y_ties))
    return np.where(undefined, np.nan, np.minimum(1.0, np.maximum(-1.0, tau)))


def _tied_pairs(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(batch,) pairs of the repeated items with equal values: each group of equal values, C(its count, 2)."""
    _, group = np.unique(values, return_inverse=True)
    order = np.argsort(group, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0])
    per_group = np.add.reduceat(counts[:, order], starts, axis=1)
    return (per_group * (per_group - 1) // 2).sum(axis=1)


for _name, _statistic, _direction in (("kendall_tau", kendall_tau, "higher"),
                                      ("regression_spearman", regression_spearman, "higher"),
                                      ("rmse", rmse, "lower"), ("mae", mae, "lower"), ("r2", r2, "higher")):
    METRICS.register(_name, MetricEntry(INPUTS, _statistic, direction=_direction, per_run=True,
                                        hub_id=_name.removeprefix("regression_")))
