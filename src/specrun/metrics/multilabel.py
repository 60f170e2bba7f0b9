"""Multilabel measures as MTEB reports them (scikit-learn's subset accuracy, macro F1 and label ranking average
precision of the hard predictions, and MTEB's hamming score), one value per experiment: predicted_labels is
(items, runs) of bit masks over the evaluated split's labels, gold_labels (items,).

Written on weighted per-item values (accuracy, LRAP, hamming are means over items) and per-label counts (macro
F1), so one product gives them for a whole batch of resamples. LRAP of binary scores has a closed form: a true
label predicted ranks among the |P| predicted labels with |T & P| true ones at or above it, one not predicted
among all L labels with |T| true ones, so an item scores (|T & P|^2 / |P| + |T - P| |T| / L) / |T|, and 1 when
it holds no label or every label (scikit-learn's convention)."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS

INPUTS = ("predicted_labels", "gold_labels")


def _columns(predicted: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(items, 1, labels) gold and (items, runs, labels) predicted 0/1 columns; labels: the gold masks' width."""
    gold_bits = gold.astype(np.int64)
    n_labels = int(np.bitwise_or.reduce(gold_bits)).bit_length()
    shifts = np.arange(n_labels)
    runs = predicted.reshape(len(gold), -1).astype(np.int64)
    return (gold_bits[:, None, None] >> shifts) & 1, (runs[:, :, None] >> shifts) & 1, n_labels


def _mean(per_item: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(..., runs): the weighted mean over items of (items, runs) values."""
    return np.tensordot(weights, per_item, axes=([-1], [0])) / weights.sum(axis=-1)[..., None]


def subset_accuracy(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    truth, guess, _ = _columns(predicted, gold)
    return _mean((truth == guess).all(axis=-1).astype(np.float64), weights)


def hamming(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    truth, guess, _ = _columns(predicted, gold)
    both, either = (truth & guess).sum(axis=-1), (truth | guess).sum(axis=-1)
    return _mean(np.where(either > 0, both / np.maximum(either, 1), 1.0), weights)


def lrap(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    truth, guess, n_labels = _columns(predicted, gold)
    true_n = truth.sum(axis=-1).astype(np.float64)  # (items, 1)
    hit = (truth & guess).sum(axis=-1).astype(np.float64)
    shown = guess.sum(axis=-1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (np.where(shown > 0, hit**2 / np.maximum(shown, 1), 0.0) + (true_n - hit) * true_n / n_labels) \
            / np.maximum(true_n, 1)
    return _mean(np.where((true_n == 0) | (true_n == n_labels), 1.0, value), weights)


def f1_macro(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """scikit-learn's f1_score(average='macro') over every label column: 2 TP / (predicted + actual), 0 where a
    column is neither predicted nor actual in the (resampled) items (its zero_division)."""
    truth, guess, _ = _columns(predicted, gold)
    tp = np.tensordot(weights, truth & guess, axes=([-1], [0]))  # (..., runs, labels)
    counted = np.tensordot(weights, guess + truth, axes=([-1], [0]))
    per_label = np.where(counted > 0, 2 * tp / np.where(counted > 0, counted, 1), 0.0)
    return per_label.mean(axis=-1)


# macro F1 is class-averaged: the centred interval, as classification's (metrics.classification); the means keep
# the percentile interval
for _name, _statistic, _hub, _interval in (
        ("multilabel_accuracy", subset_accuracy, "accuracy", "percentile"),
        ("multilabel_f1_macro", f1_macro, "f1", "centred"),
        ("lrap", lrap, "lrap", "percentile"), ("hamming", hamming, "hamming", "percentile")):
    METRICS.register(_name, MetricEntry(INPUTS, _statistic, hub_id=_hub, per_run=True, interval=_interval))
