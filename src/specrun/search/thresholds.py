"""Similarity scores against binary labels, sorted once with ties grouped: every threshold between two distinct
scores at once (a threshold never splits tied scores, as MTEB's search skips them). The pair classification
protocol chooses its thresholds here and its metrics score every resample here."""

from __future__ import annotations

import numpy as np

from specrun.core.types import SIMILARITIES

FUNCTIONS = SIMILARITIES  # a score column each; euclidean and manhattan as negated distances
THRESHOLD_SCORE = "threshold_score"  # each pair's score under the protocol's similarity: what fixed thresholds cut


def score_output(function: str) -> str:
    return f"{function}_score"


def grouped(score: np.ndarray, label: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                   np.ndarray, np.ndarray]:
    """Units sorted by score, highest first, ties grouped: (..., groups) cumulative positives and units through
    each group, the distinct scores (groups,), and the totals (..., 1) of positives and units."""
    order = np.argsort(-score, kind="stable")
    ordered = score[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    w = np.take(np.asarray(weights, dtype=np.float64), order, axis=-1)
    positives = np.add.reduceat(w * label[order], starts, axis=-1).cumsum(axis=-1)
    units = np.add.reduceat(w, starts, axis=-1).cumsum(axis=-1)
    return positives, units, ordered[starts], units[..., -1:]


def splits(score: np.ndarray, label: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                  np.ndarray, np.ndarray]:
    """Per split after a group (..., groups): accuracy, F1 and whether the split is one MTEB considers (units on
    both sides, so never all-positive or all-negative), and the distinct scores."""
    positives, units, distinct, total = grouped(score, label, weights)
    all_positive = positives[..., -1:]
    negatives_after = (total - all_positive) - (units - positives)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = (positives + negatives_after) / total
        precision = positives / units
        recall = positives / all_positive
        f1 = np.where(positives > 0, 2 * precision * recall / (precision + recall), 0.0)
    valid = (units > 0) & (units < total)
    return accuracy, f1, valid, distinct


def best_accuracy(score: np.ndarray, label: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The best accuracy over the splits between distinct scores; undefined (NaN) when every score is tied: no
    threshold separates them, and 0.0 there read as worse than the trivial classifier."""
    accuracy, _, valid, _ = splits(score, label, weights)
    return np.where(valid.any(axis=-1), np.where(valid, accuracy, 0.0).max(axis=-1), np.nan)


def best_f1(score: np.ndarray, label: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The best F1 over those splits; undefined (NaN) when every score is tied, as best_accuracy."""
    _, f1, valid, _ = splits(score, label, weights)
    return np.where(valid.any(axis=-1), np.where(valid, f1, 0.0).max(axis=-1), np.nan)


def best_thresholds(score: np.ndarray, label: np.ndarray) -> tuple[float, float]:
    """The thresholds MTEB reports for the best accuracy and the best F1 on these units: the midpoint between
    the last score taken as positive and the next (the first best, as its strict '>'); -1 / 0 when none."""
    accuracy, f1, valid, distinct = splits(score, label, np.ones(len(score)))
    chosen = []
    for values, fallback in ((accuracy, -1.0), (f1, 0.0)):
        masked = np.where(valid, values, 0.0)
        k = int(np.argmax(masked))
        chosen.append(float((distinct[k] + distinct[k + 1]) / 2) if masked[k] > 0 else fallback)
    return chosen[0], chosen[1]


