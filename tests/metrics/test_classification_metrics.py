"""Classification measures, count-weighted and per run, against scikit-learn's scorers on the repeated sample
that each resample stands for."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk

from specrun.core.errors import MetricError
from specrun.metrics.classification import (
    accuracy,
    average_precision_binary,
    f1_macro,
    f1_weighted,
    precision_macro,
    precision_weighted,
    recall_macro,
    recall_weighted,
)

SCORERS = [
    (accuracy, sk.accuracy_score),
    (f1_macro, lambda y, p: sk.f1_score(y, p, average="macro", zero_division=0)),
    (f1_weighted, lambda y, p: sk.f1_score(y, p, average="weighted", zero_division=0)),
    (precision_macro, lambda y, p: sk.precision_score(y, p, average="macro", zero_division=0)),
    (recall_macro, lambda y, p: sk.recall_score(y, p, average="macro", zero_division=0)),
    (precision_weighted, lambda y, p: sk.precision_score(y, p, average="weighted", zero_division=0)),
    (recall_weighted, lambda y, p: sk.recall_score(y, p, average="weighted", zero_division=0)),
]


@pytest.mark.parametrize("seed", range(4))
def test_weighted_per_run_scores_equal_scikit_learn_on_the_repeated_sample(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, classes, runs = int(rng.integers(5, 40)), int(rng.integers(2, 7)), 3
    gold = rng.integers(0, classes, n).astype(float)
    predicted = rng.integers(0, classes, (n, runs)).astype(float)
    weights = rng.integers(0, 3, (4, n)).astype(float)
    weights[:, 0] += 1  # never an empty resample
    for ours, theirs in SCORERS:
        got = ours(predicted, gold, weights)
        assert got.shape == (4, runs)
        for b in range(4):
            index = np.repeat(np.arange(n), weights[b].astype(int))
            for r in range(runs):
                assert got[b, r] == pytest.approx(theirs(gold[index], predicted[index, r]), abs=1e-12)
        plain = ours(predicted, gold, np.ones(n))
        assert plain.shape == (runs,)
        assert plain == pytest.approx([theirs(gold, predicted[:, r]) for r in range(runs)], abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_binary_average_precision_of_hard_predictions_equals_scikit_learn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 30))
    gold = rng.integers(0, 2, n).astype(float)
    gold[:2] = [0, 1]
    predicted = rng.integers(0, 2, (n, 2)).astype(float)
    got = average_precision_binary(predicted, gold, np.ones(n))
    assert got == pytest.approx([sk.average_precision_score(gold, predicted[:, r]) for r in range(2)], abs=1e-12)


def test_average_precision_of_a_multi_class_task_is_refused_in_words() -> None:
    gold = np.array([0, 1, 2, 1.0])
    with pytest.raises(MetricError, match="ap_binary needs exactly two labels; the evaluated items hold 3"):
        average_precision_binary(gold[:, None], gold, np.ones(4))


@pytest.mark.parametrize(("n", "n_classes", "runs", "batch"), [(60, 4, 1, 0), (200, 9, 3, 7), (50, 1, 2, 5),
                                                               (120, 120, 1, 3)])
def test_class_counts_are_a_plain_loop_bit_for_bit(n: int, n_classes: int, runs: int, batch: int) -> None:
    """Each weighted count (true positives, predictions, gold, per run and class) is the sum a plain Python loop
    over the units gives (whole-number weights: exact in any order), and every measure built on them is the same
    computation on those counts: the sparse product of all runs at once changes no bit."""
    from specrun.metrics.classification import class_counts

    rng = np.random.default_rng(n + runs)
    gold = rng.integers(0, n_classes, n).astype(float)
    predicted = np.where(rng.random((n, runs)) < 0.6, gold[:, None], rng.integers(0, n_classes, (n, runs)))
    weights = rng.poisson(1.0, (batch, n)).astype(float) if batch else np.ones(n)
    tp, pred, actual = class_counts(predicted.astype(float), gold, weights)
    rows, found = np.atleast_2d(weights), int(max(gold.max(), predicted.max())) + 1  # the classes seen
    for b, row in enumerate(rows):
        want = np.zeros((3, runs, found))
        for unit in range(n):
            for run in range(runs):
                label, guess = int(gold[unit]), int(predicted[unit, run])
                want[0, run, label] += row[unit] * (label == guess)
                want[1, run, guess] += row[unit]
                want[2, run, label] += row[unit]
        got = [part[b] if batch else part for part in (tp, pred, actual)]
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize("bad", [-1.0, 1.5])
def test_a_class_code_that_is_no_class_is_refused(bad: float) -> None:
    """A negative code would be counted in another run's columns, a fraction in another class: refused."""
    from specrun.metrics.classification import f1_macro

    predicted = np.array([[0.0, 1.0], [1.0, bad], [1.0, 0.0]])
    with pytest.raises(MetricError, match="class codes are whole numbers from 0"):
        f1_macro(predicted, np.array([0.0, 1.0, 1.0]), np.ones(3))
