"""Pair classification measures as MTEB's AbsTaskPairClassification computes them, count-weighted: average
precision of a similarity against binary labels (scikit-learn's), the best accuracy and the best F1 over every
threshold between two distinct scores of the units, the maxima of those over the similarity functions (MTEB's
`max_*`), and accuracy and F1 at a threshold fixed beforehand (chosen on a threshold split, as JMTEB), on the
scores of the protocol's similarity (`threshold_score`).

All are written on the units sorted once by score, with ties grouped (a threshold never splits tied scores, as
MTEB's search skips them): a resample's cumulative counts per group give every threshold at once."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS
from specrun.search.thresholds import FUNCTIONS, THRESHOLD_SCORE, best_accuracy, best_f1, grouped, score_output


def average_precision(score: np.ndarray, label: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """scikit-learn's average_precision_score: sum over thresholds of (recall step) x precision. Every score tied
    is undefined (NaN), as the best accuracy: scikit-learn's number there is the positive rate, whatever the
    vectors (a constant prediction)."""
    positives, units, _, _ = grouped(score, label, weights)
    total = positives[..., -1:]
    drawn = (np.diff(units, axis=-1, prepend=0.0) > 0).sum(axis=-1)  # groups of tied scores a resample drew
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(units > 0, positives / np.where(units > 0, units, 1), 0.0)
        steps = np.diff(positives, axis=-1, prepend=0.0) / total
    return np.where((total[..., 0] > 0) & (drawn > 1), (steps * precision).sum(axis=-1), np.nan)


def _decided(score: np.ndarray, label: np.ndarray, threshold: np.ndarray,
             weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    positive = score > threshold
    w = np.asarray(weights, dtype=np.float64)
    tp = (w * (positive & (label == 1))).sum(axis=-1)
    fp = (w * (positive & (label == 0))).sum(axis=-1)
    fn = (w * (~positive & (label == 1))).sum(axis=-1)
    return tp, fp, fn


def accuracy_at_threshold(score: np.ndarray, label: np.ndarray, threshold: np.ndarray,
                          weights: np.ndarray) -> np.ndarray:
    positive = score > threshold
    w = np.asarray(weights, dtype=np.float64)
    return (w * (positive == (label == 1))).sum(axis=-1) / w.sum(axis=-1)


def f1_at_threshold(score: np.ndarray, label: np.ndarray, threshold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    tp, fp, fn = _decided(score, label, threshold, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)


def _maximum(statistic):  # type: ignore[no-untyped-def]
    def over_functions(*arrays: np.ndarray, weights: np.ndarray) -> np.ndarray:
        *scores, label = arrays
        values = np.array([statistic(s, label, weights) for s in scores])
        with np.errstate(invalid="ignore"):  # a function whose scores are all tied is left out; all tied: NaN
            return np.where(np.isnan(values).all(axis=0), np.nan, np.nanmax(np.where(np.isnan(values), -np.inf,
                                                                                   values), axis=0))
    return over_functions


# A threshold or a similarity function chosen on the units themselves is optimistic on them, and a resample's choice
# is optimistic again: the best-threshold and best-function measures get the centred interval (bench/coverage.py:
# at 100 pairs max AP covered 0.913 by percentile, 0.930 centred; the best accuracy at 5,000, 0.932 and 0.941)
for _function in FUNCTIONS:
    _inputs = (score_output(_function), "pair_label")
    _suffix = "" if _function == "cosine" else f"_{_function}"
    METRICS.register(f"pair_ap{_suffix}", MetricEntry(_inputs, average_precision, hub_id=f"{_function}_ap"))
    METRICS.register(f"pair_best_accuracy{_suffix}", MetricEntry(_inputs, best_accuracy, interval="centred",
                                                                 hub_id=f"{_function}_accuracy"))
    METRICS.register(f"pair_best_f1{_suffix}", MetricEntry(_inputs, best_f1, hub_id=f"{_function}_f1",
                                                           interval="centred"))
_ALL = (*(score_output(f) for f in FUNCTIONS), "pair_label")
METRICS.register("pair_max_ap", MetricEntry(_ALL, _maximum(average_precision), hub_id="max_ap", interval="centred"))
METRICS.register("pair_max_accuracy", MetricEntry(_ALL, _maximum(best_accuracy), hub_id="max_accuracy",
                                                  interval="centred"))
METRICS.register("pair_max_f1", MetricEntry(_ALL, _maximum(best_f1), hub_id="max_f1", interval="centred"))
_FIXED_ACC = (THRESHOLD_SCORE, "pair_label", "accuracy_threshold")  # the protocol's similarity, as its thresholds
_FIXED_F1 = (THRESHOLD_SCORE, "pair_label", "f1_threshold")
METRICS.register("pair_accuracy_at_threshold", MetricEntry(_FIXED_ACC, accuracy_at_threshold, hub_id="accuracy"))
METRICS.register("pair_f1_at_threshold", MetricEntry(_FIXED_F1, f1_at_threshold, hub_id="f1"))
