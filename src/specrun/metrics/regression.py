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


def kendall_tau(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """scipy's kendalltau (tau-b) of each run on the repeated items of each resample: no count-weighted form of
    tau-b is simpler than repeating the items, and scipy's is O(n log n)."""
    from scipy import stats  # imported here: scipy.stats costs a second at start-up

    runs = _runs(predicted, gold)
    flat = np.atleast_2d(np.asarray(weights)).astype(np.int64)
    out = np.empty((len(flat), runs.shape[1]))
    for b, counts in enumerate(flat):
        index = np.repeat(np.arange(len(gold)), counts)
        for r in range(runs.shape[1]):
            out[b, r] = stats.kendalltau(runs[index, r], gold[index]).statistic
    return out.reshape(*np.shape(weights)[:-1], runs.shape[1])


for _name, _statistic, _direction in (("kendall_tau", kendall_tau, "higher"),
                                      ("regression_spearman", regression_spearman, "higher"),
                                      ("rmse", rmse, "lower"), ("mae", mae, "lower"), ("r2", r2, "higher")):
    METRICS.register(_name, MetricEntry(INPUTS, _statistic, direction=_direction, per_run=True,
                                        hub_id=_name.removeprefix("regression_")))
