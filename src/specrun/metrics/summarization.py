"""Summarization: the mean over texts of their per-text Spearman and Pearson (`protocols.summarization`),
texts without a correlation left out and not counted."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS


def mean_over_valid(values: np.ndarray, valid: np.ndarray, weights: np.ndarray) -> np.ndarray:
    counted = weights * valid
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counted * values).sum(axis=-1) / counted.sum(axis=-1)


def _count(values: np.ndarray, valid: np.ndarray) -> int:
    return int(np.sum(valid > 0))


METRICS.register("summary_spearman", MetricEntry(("text_spearman", "valid"), mean_over_valid, count=_count,
                                                 hub_id="cosine_spearman"))
METRICS.register("summary_pearson", MetricEntry(("text_pearson", "valid"), mean_over_valid, count=_count,
                                                hub_id="cosine_pearson"))
