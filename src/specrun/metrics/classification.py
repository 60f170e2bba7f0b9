"""Classification measures as scikit-learn computes them (accuracy, macro and weighted F1, precision and recall,
AP of a binary task), count-weighted and one value per experiment: predicted_class is (items, runs).

Written on class counts (true positives, predicted and actual per class) so that one sparse product gives them
for a whole batch of resamples; scikit-learn's scorers take one sample at a time. A class counts in a macro mean
when it is among the gold or the predicted labels of the (resampled) items, as scikit-learn's `unique_labels`;
precision of a class never predicted, and recall of a class absent from the gold, are 0 (its zero_division)."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.errors import MetricError
from specrun.core.registry import METRICS

INPUTS = ("predicted_class", "gold_class")


def _weighted_counts(weights: np.ndarray, rows: np.ndarray, columns: np.ndarray, values: np.ndarray,
                     width: int) -> np.ndarray:
    """(batch, width): each cell (unit `rows[i]`, column `columns[i]`) of `values` counted with the unit's weight
    in each weights row: one sparse product for a whole batch of resamples."""
    from scipy import sparse  # imported here: scipy.sparse costs a second at start-up

    matrix = sparse.csr_matrix((values, (rows, columns)), shape=(weights.shape[1], width))
    return np.asarray((matrix.T @ weights.T).T)


def class_counts(predicted: np.ndarray, gold: np.ndarray,
                 weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(..., runs, classes) weighted true positives, predicted and actual counts of each class in each run: every
    run's counts from one product (a run's classes are columns run x classes ..), then laid out run by run as
    they always were, so every sum over them adds in the same order (the same numbers to the last bit)."""
    predicted = predicted.reshape(len(gold), -1)
    n, runs = predicted.shape
    for codes in (gold, predicted):  # a code below 0 would count in another run's columns, a fraction in another class
        bad = codes[(codes < 0) | (codes != np.floor(codes))]
        if bad.size:
            raise MetricError(f"class codes are whole numbers from 0; found {float(bad.flat[0])!r}")
    n_classes = int(max(gold.max(), predicted.max())) + 1
    flat = np.atleast_2d(weights)
    labels = gold.astype(np.int64)
    offsets = np.arange(runs) * n_classes
    cells = np.repeat(np.arange(n), runs)
    actual = _weighted_counts(flat, np.arange(n), labels, np.ones(n), n_classes)
    pred = _weighted_counts(flat, cells, (predicted.astype(np.int64) + offsets).ravel(), np.ones(n * runs),
                            runs * n_classes)
    tp = _weighted_counts(flat, cells, (labels[:, None] + offsets).ravel(),
                          (predicted == gold[:, None]).ravel().astype(np.float64), runs * n_classes)
    by_run = [slice(start, start + n_classes) for start in offsets]
    shape = (*weights.shape[:-1], runs, n_classes)
    stack = (np.stack([tp[:, run] for run in by_run], axis=-2), np.stack([pred[:, run] for run in by_run], axis=-2),
             np.repeat(actual[..., None, :], runs, axis=-2))
    return tuple(part.reshape(shape) for part in stack)  # type: ignore[return-value]


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), 0.0)


def accuracy(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    tp, _, actual = class_counts(predicted, gold, weights)
    return tp.sum(axis=-1) / actual.sum(axis=-1)


def _macro(per_class: np.ndarray, present: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (per_class * present).sum(axis=-1) / present.sum(axis=-1)


def f1_macro(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    tp, pred, actual = class_counts(predicted, gold, weights)
    return _macro(_ratio(2 * tp, pred + actual), (pred + actual) > 0)


def f1_weighted(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    tp, pred, actual = class_counts(predicted, gold, weights)
    return (_ratio(2 * tp, pred + actual) * actual).sum(axis=-1) / actual.sum(axis=-1)


def precision_macro(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    tp, pred, actual = class_counts(predicted, gold, weights)
    return _macro(_ratio(tp, pred), (pred + actual) > 0)


def recall_macro(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    tp, pred, actual = class_counts(predicted, gold, weights)
    return _macro(_ratio(tp, actual), (pred + actual) > 0)


def precision_weighted(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    tp, pred, actual = class_counts(predicted, gold, weights)
    return (_ratio(tp, pred) * actual).sum(axis=-1) / actual.sum(axis=-1)


def recall_weighted(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    tp, _, actual = class_counts(predicted, gold, weights)
    return (_ratio(tp, actual) * actual).sum(axis=-1) / actual.sum(axis=-1)


def average_precision_binary(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """scikit-learn's average_precision_score of the hard predictions (label 1 positive), as MTEB reports for a
    binary task: two thresholds, AP = R1 P1 + (1 - R1) P0 with P0 the share of positives. The positive class is
    the second label in sorted order (1 of 0/1; of labels 1/2 it is 2, where scikit-learn's default is 1). An
    error unless the items hold exactly two labels."""
    if gold.size and (set(np.unique(gold)) != {0.0, 1.0} or predicted.max() > 1):
        raise MetricError(f"ap_binary needs exactly two labels; the evaluated items hold {len(np.unique(gold))}")
    tp, pred, actual = class_counts(predicted, gold, weights)
    total = actual.sum(axis=-1)
    positives = actual[..., 1]
    recall = _ratio(tp[..., 1], positives)
    precision = _ratio(tp[..., 1], pred[..., 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        base = positives / total
        return np.where(positives > 0, recall * precision + (1 - recall) * base, np.nan)


# The class-averaged measures get the centred interval: a resample's duplicates change its classes' counts, and
# where every unit is its own class (bitext mining) that biases them far above the value (bench/coverage.py, 1,000
# pairs: recall_macro's percentile interval held its expected value 0.024 of the time, centred 0.940); on ordinary
# classification centred covers as the percentile interval does. Accuracy (a mean) keeps the percentile interval.
for _name, _statistic, _hub, _interval in (
        ("accuracy", accuracy, "accuracy", "percentile"), ("f1_macro", f1_macro, "f1", "centred"),
        ("f1_weighted", f1_weighted, "f1_weighted", "centred"),
        ("precision_macro", precision_macro, "precision", "centred"),
        ("recall_macro", recall_macro, "recall", "centred"),
        ("precision_weighted", precision_weighted, "precision_weighted", "centred"),
        ("recall_weighted", recall_weighted, "recall_weighted", "percentile"),
        ("ap_binary", average_precision_binary, "ap", "percentile")):
    METRICS.register(_name, MetricEntry(INPUTS, _statistic, hub_id=_hub, per_run=True, interval=_interval))
