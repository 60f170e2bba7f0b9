"""Similarity scores against binary labels, sorted once, highest first: every threshold at once. MTEB's search
(AbsTaskPairClassification._find_best_acc_and_threshold and _f1_) walks the pairs sorted by score one at a time,
ties in the data's order, and considers the split after each pair but the last, a split inside a run of tied
scores included; `splits` does the same, so a best accuracy or F1 on tied scores with mixed labels is MTEB's
(optimistic: no threshold separates tied pairs, and it depends on their order). Average precision groups ties, as
scikit-learn does (`grouped`). The pair classification protocol chooses its thresholds here and its metrics score
every resample here."""

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


def splits(score: np.ndarray, label: np.ndarray, weights: np.ndarray, copies: bool = True) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per split after each unit in MTEB's order (score, highest first; ties in the data's order) (..., units):
    accuracy, F1 and whether MTEB considers the split (units on both sides, and two distinct scores at least:
    all tied, no threshold means anything), and the scores in that order. A unit a resample drew k times is k
    rows to MTEB, with a split after each copy; both measures move one way along the copies (one label), so
    beside the split after all k only those after the first and before the last copy can be best (`copies`: they
    follow, (..., 3 units) in all; the split after all k may be none, at either end of the order)."""
    order = np.argsort(-score, kind="stable")
    ordered = score[order]
    w = np.take(np.asarray(weights, dtype=np.float64), order, axis=-1)
    labels = label[order]
    positives = (w * labels).cumsum(axis=-1)
    units = w.cumsum(axis=-1)
    total, all_positive = units[..., -1:], positives[..., -1:]
    tied = not (len(ordered) and ordered[0] != ordered[-1])
    points = [(positives, units, w > 0)]
    if copies:  # after the first copy, and before the last, of a unit drawn more than once
        points += [(positives - w * labels + labels, units - w + 1, w > 1), (positives - labels, units - 1, w > 1)]
    measured = [(*_measures(p, u, total, all_positive), (u > 0) & (u < total) & drawn & (not tied))
                for p, u, drawn in points]
    accuracy, f1, valid = (np.concatenate(parts, axis=-1) for parts in zip(*measured, strict=True))
    return accuracy, f1, valid, ordered


def _measures(positives: np.ndarray, units: np.ndarray, total: np.ndarray,
              all_positive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy and F1 of the split that takes `units` units, `positives` of them positive, as positive."""
    negatives_after = (total - all_positive) - (units - positives)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = (positives + negatives_after) / total
        precision = positives / units
        recall = positives / all_positive
        f1 = np.where(positives > 0, 2 * precision * recall / (precision + recall), 0.0)
    return accuracy, f1


def best_accuracy(score: np.ndarray, label: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The best accuracy over MTEB's splits; undefined (NaN) when every score is tied: no threshold separates
    them, and 0.0 there read as worse than the trivial classifier."""
    accuracy, _, valid, _ = splits(score, label, weights)
    return np.where(valid.any(axis=-1), np.where(valid, accuracy, 0.0).max(axis=-1), np.nan)


def best_f1(score: np.ndarray, label: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The best F1 over those splits; undefined (NaN) when every score is tied, as best_accuracy."""
    _, f1, valid, _ = splits(score, label, weights)
    return np.where(valid.any(axis=-1), np.where(valid, f1, 0.0).max(axis=-1), np.nan)


def best_thresholds(score: np.ndarray, label: np.ndarray) -> tuple[float, float]:
    """The thresholds MTEB reports for the best accuracy and the best F1 on these units: the midpoint between
    the last score taken as positive and the next (the first best, as its strict '>'); -1 / 0 when none."""
    accuracy, f1, valid, ordered = splits(score, label, np.ones(len(score)), copies=False)
    chosen = []
    for values, fallback in ((accuracy, -1.0), (f1, 0.0)):
        masked = np.where(valid, values, 0.0)
        k = int(np.argmax(masked))
        chosen.append(float((ordered[k] + ordered[k + 1]) / 2) if masked[k] > 0 else fallback)
    return chosen[0], chosen[1]


