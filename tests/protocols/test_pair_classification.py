"""Pair classification against scikit-learn (AP), a brute-force search over every threshold (best accuracy and
F1, the thresholds MTEB reports), and a threshold chosen on another split."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, f1_score

from specrun.core.contracts import RunContext
from specrun.core.errors import DataError
from specrun.core.types import Item
from specrun.metrics import estimate
from specrun.metrics.pair_classification import accuracy_at_threshold, average_precision, f1_at_threshold
from specrun.protocols.pair_classification import PairClassificationProtocol, PairOptions, similarities
from specrun.search.thresholds import best_accuracy, best_f1, best_thresholds


def brute(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float, float, float]:
    """Every threshold between two distinct scores (units on both sides), the first best of each."""
    distinct = np.unique(scores)[::-1]
    best = [(0.0, -1.0), (0.0, 0.0)]
    for high, low in itertools.pairwise(distinct):
        threshold = (high + low) / 2
        predicted = scores > threshold
        accuracy = float(np.mean(predicted == (labels == 1)))
        tp = float(np.sum(predicted & (labels == 1)))  # F1 as 2PR / (P + R), the form MTEB compares in
        precision, recall = tp / max(np.sum(predicted), 1), tp / np.sum(labels == 1)
        f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
        if accuracy > best[0][0]:
            best[0] = (accuracy, threshold)
        if f1 > best[1][0]:
            best[1] = (f1, threshold)
    return best[0][0], best[1][0], best[0][1], best[1][1]


@pytest.mark.parametrize("seed", range(12))
def test_measures_equal_scikit_learn_and_a_brute_force_threshold_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 30))
    scores = np.round(rng.random(n), 1)  # ties on purpose
    labels = rng.integers(0, 2, n)
    labels[:2] = [1, 0]
    weights = rng.integers(0, 3, (3, n)).astype(float)
    weights[:, :2] = 1
    for b in range(3):
        index = np.repeat(np.arange(n), weights[b].astype(int))
        s, y = scores[index], labels[index]
        accuracy, f1, _, _ = brute(s, y)
        assert average_precision(scores, labels, weights)[b] == pytest.approx(average_precision_score(y, s))
        assert best_accuracy(scores, labels, weights)[b] == pytest.approx(accuracy)
        assert best_f1(scores, labels, weights)[b] == pytest.approx(f1)
    _, _, threshold_accuracy, threshold_f1 = brute(scores, labels)
    assert best_thresholds(scores, labels) == pytest.approx((threshold_accuracy, threshold_f1))
    fixed = np.full(n, 0.45)
    assert accuracy_at_threshold(scores, labels, fixed, np.ones(n)) == pytest.approx(
        np.mean((scores > 0.45) == (labels == 1)))
    assert f1_at_threshold(scores, labels, fixed, np.ones(n)) == pytest.approx(
        f1_score(labels, scores > 0.45, zero_division=0))


def pairs(n: int, seed: int) -> tuple[list[Item], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    vectors: dict[str, np.ndarray] = {}
    items = []
    for i in range(n):
        label = i % 2
        vectors[f"a{seed}-{i}"] = rng.standard_normal(5)
        vectors[f"b{seed}-{i}"] = vectors[f"a{seed}-{i}"] * label + rng.standard_normal(5)
        items.append(Item(id=f"{seed}-{i}", fields={"text1": f"a{seed}-{i}", "text2": f"b{seed}-{i}",
                                                   "label": label}))
    return items, vectors


def test_the_threshold_split_chooses_and_the_evaluated_split_is_scored() -> None:
    test, vectors = pairs(30, 1)
    dev, more = pairs(20, 2)
    vectors |= more

    def embed(texts, _field=""):  # type: ignore[no-untyped-def]
        return np.stack([vectors[t] for t in texts])

    out = PairClassificationProtocol().run(test, RunContext(embed, {"dev": dev}), PairOptions(threshold_split="dev"))
    dev_cosine = similarities(embed([i.fields["text1"] for i in dev]), embed([i.fields["text2"] for i in dev]))
    _, _, accuracy_threshold, f1_threshold = brute(dev_cosine["cosine"], np.array([i.fields["label"] for i in dev]))
    assert out.arrays["accuracy_threshold"][0] == pytest.approx(accuracy_threshold)
    assert out.arrays["f1_threshold"][0] == pytest.approx(f1_threshold)
    labels = out.arrays["pair_label"]
    score = estimate("pair_f1_at_threshold", out.arrays, resamples=100, confidence=0.9, seed=3)
    assert score.value == pytest.approx(f1_score(labels, out.arrays["cosine_score"] > f1_threshold))
    maximum = estimate("pair_max_ap", out.arrays, resamples=100, confidence=0.9, seed=3).value
    assert maximum == pytest.approx(max(average_precision_score(labels, out.arrays[f"{f}_score"])
                                        for f in ("cosine", "dot", "euclidean", "manhattan")))
    a, b = embed([i.fields["text1"] for i in test]), embed([i.fields["text2"] for i in test])
    np.testing.assert_allclose(out.arrays["euclidean_score"], -np.linalg.norm(a - b, axis=1))
    np.testing.assert_allclose(out.arrays["dot_score"], (a * b).sum(axis=1))


def test_a_split_of_one_label_is_one_line() -> None:
    test, vectors = pairs(10, 1)
    test = [Item(id=i.id, fields={**i.fields, "label": 1}) for i in test]
    with pytest.raises(DataError, match="every pair has label 1"):
        PairClassificationProtocol().run(test,
                                         RunContext(lambda t, _field: np.stack([vectors[x] for x in t])), PairOptions())
