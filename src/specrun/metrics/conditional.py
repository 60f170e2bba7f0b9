"""Conditional STS: Spearman over both conditions of every sentence pair, and pairwise accuracy (are the two
conditions ordered like the gold?)."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS
from specrun.metrics.correlation import spearman


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


METRICS.register("conditional_spearman", MetricEntry(
    CONDITIONAL, conditional_spearman, hub_id="spearmanr",
    count=lambda pa, pb, ga, gb, va, vb: int(np.sum(va > 0) + np.sum(vb > 0))))
METRICS.register("pairwise_accuracy", MetricEntry(
    CONDITIONAL, pairwise_accuracy, hub_id="accuracy",
    count=lambda pa, pb, ga, gb, va, vb: int(np.sum(_decided(ga, gb, va, vb)))))
