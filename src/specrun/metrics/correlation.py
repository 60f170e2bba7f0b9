"""Pearson and Spearman of a prediction against a gold score, count-weighted (ties share their mean rank)."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS
from specrun.metrics.weighted import sorted_ranks, weighted_pearson


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


METRICS.register("pearson", MetricEntry(("prediction", "gold"), pearson, must_vary=("prediction", "gold"),
                                        hub_id="pearsonr"))
METRICS.register("spearman", MetricEntry(("prediction", "gold"), spearman, must_vary=("prediction", "gold"),
                                         hub_id="spearmanr"))
