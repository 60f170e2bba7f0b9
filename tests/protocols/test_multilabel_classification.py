"""multilabel_classification: the measures equal scikit-learn's (and MTEB's hamming score) on resampled items, the
undersampling is MTEB's worked by hand, the probe equals scikit-learn's KNeighborsClassifier fitted directly, bad
inputs are one line, and the fixture spec runs end to end with its values inside their intervals. MTEB's own code
on the same real-model vectors: bench/mteb_parity_multilabel.py (BENCHMARKS.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specrun.core.contracts import RunContext
from specrun.core.errors import DataError
from specrun.core.fields import to_label_set
from specrun.core.types import Item
from specrun.metrics.multilabel import f1_macro, hamming, lrap, subset_accuracy
from specrun.protocols.multilabel_classification import (
    MultilabelClassificationProtocol,
    MultilabelOptions,
    masks,
    undersamples,
    unpack,
)
from tests.protocols.test_kinds_cli import run, spec, write_jsonl

FIXTURE = Path(__file__).parent / "multilabel"


def mteb_hamming(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """MTEB's hamming_score (its docstring: intersection over union per sample, 1 when both are empty)."""
    both, either = (y_true & y_pred).sum(axis=1), (y_true | y_pred).sum(axis=1)
    return float(np.mean([1.0 if u == 0 else b / u for b, u in zip(both, either, strict=True)]))


def test_measures_equal_scikit_learn_on_resampled_items() -> None:
    from sklearn.metrics import accuracy_score, f1_score, label_ranking_average_precision_score

    rng = np.random.default_rng(0)
    n, labels, runs = 40, 5, 3
    gold_cols = (rng.random((n, labels)) < 0.4).astype(np.int64)
    gold_cols[0] = 0  # an item of no label, one of every label: LRAP's convention
    gold_cols[1] = 1
    gold_cols[2, -1] = 1  # the widest label is present
    pred_cols = (rng.random((n, runs, labels)) < 0.4).astype(np.int64)
    weights = 1 << np.arange(labels)
    gold, predicted = (gold_cols @ weights).astype(float), (pred_cols @ weights).astype(float)
    counts = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(4)]).astype(float)
    ours = {name: f(predicted, gold, counts) for name, f in (("accuracy", subset_accuracy), ("f1", f1_macro),
                                                               ("lrap", lrap), ("hamming", hamming))}
    for b, count in enumerate(counts):
        rows = np.repeat(np.arange(n), count.astype(int))  # the resample, row by row
        for r in range(runs):
            truth, guess = gold_cols[rows], pred_cols[rows, r]
            assert ours["accuracy"][b, r] == pytest.approx(accuracy_score(truth, guess), abs=1e-12)
            assert ours["f1"][b, r] == pytest.approx(f1_score(truth, guess, average="macro", zero_division=0),
                                                     abs=1e-12)
            assert ours["lrap"][b, r] == pytest.approx(label_ranking_average_precision_score(truth, guess),
                                                       abs=1e-12)
            assert ours["hamming"][b, r] == pytest.approx(mteb_hamming(truth, guess), abs=1e-12)


def test_undersampling_is_mteb_s_worked_by_hand() -> None:
    """default_rng(seed) shuffles a fresh 0..n-1 list per experiment; an item is taken while any of its labels has
    fewer than samples_per_label taken."""
    label_sets = [["a"], ["a", "b"], ["b"], ["c"], ["a", "c"], ["b", "c"]]
    options = MultilabelOptions(fit_split="train", samples_per_label=1, n_experiments=2, seed=5)
    rng = np.random.default_rng(5)
    expected = []
    for _ in range(2):
        order = list(range(6))
        rng.shuffle(order)
        taken: dict[str, int] = {}
        picked = []
        for i in order:
            if any(taken.get(label, 0) < 1 for label in label_sets[i]):
                picked.append(i)
                for label in label_sets[i]:
                    taken[label] = taken.get(label, 0) + 1
        expected.append(picked)
    assert undersamples(label_sets, options) == expected
    assert expected[0] != expected[1]  # the Generator runs on: experiments differ


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURE / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_probe_equals_k_neighbours_fitted_directly() -> None:
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MultiLabelBinarizer

    fit, test = rows("train"), rows("test")
    rng = np.random.default_rng(1)
    vectors = {r["text"]: rng.normal(size=8) for r in fit + test}
    items = [Item(id=r["id"], fields={"text": r["text"], "labels": r["labels"]}) for r in test]
    support = {"train": [Item(id=r["id"], fields={"text": r["text"], "labels": r["labels"]}) for r in fit]}
    ctx = RunContext(embed=lambda texts, field: np.stack([vectors[t] for t in texts]), support=support)
    options = MultilabelOptions(fit_split="train", n_experiments=3)
    outputs = MultilabelClassificationProtocol().run(items, ctx, options)
    binarizer = MultiLabelBinarizer().fit([r["labels"] for r in test])
    test_x = np.stack([vectors[r["text"]] for r in test])
    for run_index, chosen in enumerate(undersamples([r["labels"] for r in fit], options)):
        model = KNeighborsClassifier(n_neighbors=5).fit(np.stack([vectors[fit[i]["text"]] for i in chosen]),
                                                        binarizer.transform([fit[i]["labels"] for i in chosen]))
        expected = model.predict(test_x)
        got = unpack(outputs.arrays["predicted_labels"][:, run_index], len(binarizer.classes_))
        assert np.array_equal(got, expected)
    assert np.array_equal(unpack(outputs.arrays["gold_labels"], 4), binarizer.transform([r["labels"] for r in test]))


def test_bad_label_sets_and_data_are_one_line() -> None:
    with pytest.raises(Exception, match="expected a list of class labels"):
        to_label_set("sports")
    with pytest.raises(Exception, match="given twice"):
        to_label_set(["a", "a"])
    assert to_label_set([]) == [] and masks([["b"], ["a", "b"], []], ["a", "b"]).tolist() == [2.0, 3.0, 0.0]
    one = [Item(id=f"t{i}", fields={"text": f"t{i}", "labels": ["a"]}) for i in range(6)]
    ctx = RunContext(embed=lambda texts, field: np.ones((len(texts), 2)), support={"train": one})
    with pytest.raises(DataError, match="holds 1 label"):
        MultilabelClassificationProtocol().validate_items(one, MultilabelOptions(fit_split="train"), "f", ctx.support)


def test_a_constant_prediction_is_an_error() -> None:
    items = [Item(id=f"t{i}", fields={"text": f"t{i}", "labels": [["a"], ["b"]][i % 2]}) for i in range(12)]
    ctx = RunContext(embed=lambda texts, field: np.ones((len(texts), 2)), support={"train": items})
    with pytest.raises(DataError, match="one label set for all 12 items"):
        MultilabelClassificationProtocol().run(items, ctx, MultilabelOptions(fit_split="train", n_experiments=2,
                                                                             samples_per_label=3, k=5))


def test_the_fixture_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", rows("test"))
    write_jsonl(tmp_path / "data" / "toy" / "train.jsonl", rows("train"))
    path = spec(tmp_path, "multilabel_classification", {"text": "text", "labels": "labels"},
                {"accuracy": "multilabel_accuracy", "f1": "multilabel_f1_macro", "lrap": "lrap",
                 "hamming": "hamming"}, options={"fit_split": "train", "n_experiments": 4}, fit=True)
    results, arrays = run(path, tmp_path, capsys)
    ones = np.ones(len(arrays["gold_labels"]))
    for name, statistic in (("accuracy", subset_accuracy), ("f1", f1_macro), ("lrap", lrap),
                            ("hamming", hamming)):
        score = results.scores["test"][name]
        value = float(np.mean(statistic(arrays["predicted_labels"], arrays["gold_labels"], ones)))
        assert score.value == pytest.approx(value, abs=1e-12), name
        assert score.ci_low <= score.value <= score.ci_high and score.ci_low < score.ci_high, name
        assert score.n == 30
