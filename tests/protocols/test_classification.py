"""The classification kind against scikit-learn used directly, MTEB's undersampling written out from its
description, the two-level interval against a plain loop, and every bad input as one line."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.neighbors import KNeighborsClassifier

from specrun.core.contracts import RunContext
from specrun.core.errors import DataError, SpecrunError
from specrun.core.types import Item
from specrun.metrics import estimate
from specrun.protocols.classification import ClassificationOptions, ClassificationProtocol, undersamples

PROTOCOL = ClassificationProtocol()


def toy(n_fit: int = 60, n_test: int = 40, n_classes: int = 3, dim: int = 6, seed: int = 0):
    """Items with text = their own vector key, and an embed that returns the vector: clusters by label."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_classes, dim)) * 2
    vectors: dict[str, np.ndarray] = {}

    def make(prefix: str, n: int) -> list[Item]:
        items = []
        for i in range(n):
            label = f"c{i % n_classes}"
            text = f"{prefix}{i}"
            vectors[text] = (centres[i % n_classes] + rng.standard_normal(dim)).astype(np.float32)
            items.append(Item(id=text, fields={"text": text, "label": label}))
        return items

    fit, test = make("f", n_fit), make("t", n_test)

    def embed(texts: Sequence[str], _field: str = "") -> np.ndarray:
        return np.stack([vectors[t] for t in texts])

    return fit, test, embed, vectors


def options(**given: object) -> ClassificationOptions:
    return ClassificationOptions.model_validate({"fit_split": "train", **given})


def test_undersampling_is_mteb_s_compounding_shuffle() -> None:
    """MTEB's _undersample_data, written out: RandomState(seed).shuffle of the same list once more per
    experiment, then the first samples_per_label of each label in that order."""
    labels = [i % 4 for i in range(50)]
    order = list(range(50))
    expected = []
    for _ in range(3):
        np.random.RandomState(42).shuffle(order)
        seen: dict[int, int] = {}
        chosen = []
        for index in order:
            if seen.get(labels[index], 0) < 5:
                chosen.append(index)
                seen[labels[index]] = seen.get(labels[index], 0) + 1
        expected.append(chosen)
    assert undersamples(labels, options(samples_per_label=5, n_experiments=3)) == expected
    assert len({tuple(sorted(c)) for c in expected}) == 3  # the experiments differ


@pytest.mark.parametrize("classifier", ["logistic_regression", "knn"])
def test_predictions_equal_scikit_learn_fitted_directly(classifier: str) -> None:
    fit, test, embed, vectors = toy()
    opts = options(classifier=classifier, samples_per_label=6, n_experiments=4, k=3)
    out = PROTOCOL.run(test, RunContext(embed, {"train": fit}), opts)
    fit_y = np.array([int(item.fields["label"][1:]) for item in fit])
    test_x = np.stack([vectors[item.id] for item in test])
    assert out.arrays["predicted_class"].shape == (len(test), 4)
    for run, chosen in enumerate(undersamples([item.fields["label"] for item in fit], opts)):
        model = LogisticRegression(max_iter=100, random_state=42) if classifier == "logistic_regression" else \
            KNeighborsClassifier(n_neighbors=3, metric="cosine", algorithm="brute")
        model.fit(np.stack([vectors[fit[i].id] for i in chosen]), fit_y[chosen])
        np.testing.assert_array_equal(out.arrays["predicted_class"][:, run], model.predict(test_x))
    np.testing.assert_array_equal(out.arrays["gold_class"], [int(item.fields["label"][1:]) for item in test])


def test_only_the_fit_items_some_experiment_uses_are_embedded() -> None:
    fit, test, embed, _ = toy(n_fit=90)
    opts = options(samples_per_label=2, n_experiments=2)
    asked: list[str] = []
    PROTOCOL.run(test, RunContext(lambda texts, _field: (asked.extend(texts), embed(texts))[1], {"train": fit}), opts)
    used = set().union(*undersamples([item.fields["label"] for item in fit], opts))
    declared = {text for _, text in PROTOCOL.texts(test, opts, {"train": fit})}
    assert declared == {fit[i].id for i in used} | {t.id for t in test}
    assert set(asked) == {fit[i].id for i in used} | {t.id for t in test}


def test_the_value_is_the_mean_over_experiments_and_the_interval_a_two_level_loop() -> None:
    """The point value is the mean of scikit-learn's per-experiment scores; the interval equals a plain loop
    that draws units (default_rng(seed)) and experiments (default_rng([seed, 1])) and scores the repeated
    sample with scikit-learn."""
    fit, test, embed, _ = toy(n_test=30, seed=3)
    out = PROTOCOL.run(test, RunContext(embed, {"train": fit}), options(samples_per_label=3, n_experiments=5))
    predicted, gold = out.arrays["predicted_class"], out.arrays["gold_class"]
    resamples, seed = 60, 11
    for name, scorer in (("accuracy", accuracy_score),
                         ("f1_macro", lambda y, p: f1_score(y, p, average="macro", zero_division=0))):
        score = estimate(name, out.arrays, resamples=resamples, confidence=0.9, seed=seed)
        per_run = [scorer(gold, predicted[:, r]) for r in range(5)]
        assert score.value == pytest.approx(np.mean(per_run), abs=1e-12)
        assert score.runs == 5 and score.run_sd == pytest.approx(np.std(per_run), abs=1e-12)
        units = np.random.default_rng(seed).integers(0, len(gold), (resamples, len(gold)))
        runs = np.random.default_rng([seed, 1]).integers(0, 5, (resamples, 5))
        loop = np.array([np.mean([scorer(gold[units[b]], predicted[units[b], r]) for r in runs[b]])
                         for b in range(resamples)])
        low, high = stats.quantile(loop, [0.05, 0.95])
        assert (score.ci_low, score.ci_high) == pytest.approx((low, high), abs=1e-12)


def test_one_experiment_has_no_run_spread_but_keeps_its_interval() -> None:
    fit, test, embed, _ = toy()
    out = PROTOCOL.run(test, RunContext(embed, {"train": fit}), options(samples_per_label="all", n_experiments=1))
    score = estimate("accuracy", out.arrays, resamples=100, confidence=0.9, seed=1)
    assert score.runs is None and score.run_sd is None and score.ci_low < score.ci_high


@pytest.mark.parametrize("case, expected", [
    ("test label not in fit", "the evaluated split has label(s) 'c9' that fit split 'train' lacks"),
    ("fit label not in test", "fit split 'train' has label(s) 'c2' that the evaluated split lacks"),
    ("single class", "fit split 'train' has a single label ('c0'); a classifier needs two or more"),
    ("short class", "label(s) 'c1' have fewer than samples_per_label = 8 items (fewest: 3); MTEB fits on the "
                    "items there are"),
    ("k too large", "knn: k = 50 but an experiment fits on 24 items"),
])
def test_bad_inputs_are_one_line(case: str, expected: str) -> None:
    fit, test, _, _ = toy(n_fit=60, n_test=30)
    opts = options()
    if case == "test label not in fit":
        test = [*test, Item(id="x", fields={"text": "t0", "label": "c9"})]
    elif case == "fit label not in test":
        test = [item for item in test if item.fields["label"] != "c2"]
    elif case == "single class":
        fit = [Item(id=i.id, fields={**i.fields, "label": "c0"}) for i in fit]
        test = [Item(id=i.id, fields={**i.fields, "label": "c0"}) for i in test]
    elif case == "short class":
        fit = [i for i in fit if i.fields["label"] != "c1"] + [i for i in fit if i.fields["label"] == "c1"][:3]
    elif case == "k too large":
        opts = options(classifier="knn", k=50)
    with pytest.raises(DataError) as caught:
        PROTOCOL.validate_items(test, opts, "f", {"train": fit})
    assert expected in caught.value.message and "\n" not in caught.value.message


def test_short_classes_can_take_what_there_is_as_mteb() -> None:
    fit, test, embed, _ = toy(n_fit=60, n_test=30)
    fit = [i for i in fit if i.fields["label"] != "c1"] + [i for i in fit if i.fields["label"] == "c1"][:3]
    opts = options(short_classes="take_what_there_is", n_experiments=2)
    chosen = undersamples([item.fields["label"] for item in fit], opts)
    assert all(sum(fit[i].fields["label"] == "c1" for i in c) == 3 for c in chosen)
    PROTOCOL.run(test, RunContext(embed, {"train": fit}), opts)


def test_all_with_several_experiments_is_refused() -> None:
    with pytest.raises(ValueError, match="set n_experiments: 1"):
        options(samples_per_label="all")


def test_numeric_labels_sort_numerically() -> None:
    fit, test, embed, _ = toy(n_classes=3)
    relabel = {"c0": 10, "c1": 2, "c2": 1}
    fit = [Item(id=i.id, fields={**i.fields, "label": relabel[i.fields["label"]]}) for i in fit]
    test = [Item(id=i.id, fields={**i.fields, "label": relabel[i.fields["label"]]}) for i in test]
    out = PROTOCOL.run(test, RunContext(embed, {"train": fit}), options(n_experiments=1, samples_per_label="all"))
    np.testing.assert_array_equal(out.arrays["gold_class"][:3], [2, 1, 0])  # 10 is the last of [1, 2, 10]


def test_mixed_label_kinds_are_refused() -> None:
    fit, test, embed, _ = toy()
    fit = [*fit[:-1], Item(id="odd", fields={"text": fit[-1].id, "label": 3})]
    test = [*test, Item(id="odd", fields={"text": test[-1].id, "label": 3})]
    with pytest.raises(SpecrunError, match="mixes numbers and texts"):
        PROTOCOL.run(test, RunContext(embed, {"train": fit}), options(short_classes="take_what_there_is"))


def test_unmatched_labels_score_as_mteb_s_sklearn_metrics() -> None:
    """unmatched_labels: score, as MTEB: an eval label the fit lacks is always wrong and a fit label the eval
    split lacks counts where predicted; every measure equals scikit-learn's on the labels themselves."""
    fit, test, embed, vectors = toy(n_fit=60, n_test=40, n_classes=4)
    fit = [item for item in fit if item.fields["label"] != "c3"]  # c3: only in the evaluated split
    test = [item for item in test if item.fields["label"] != "c2"]  # c2: only in the fit split
    with pytest.raises(DataError, match="unmatched_labels: score"):
        PROTOCOL.validate_items(test, options(), "f", {"train": fit})
    opts = options(unmatched_labels="score", samples_per_label=5, n_experiments=3)
    PROTOCOL.validate_items(test, opts, "f", {"train": fit})
    out = PROTOCOL.run(test, RunContext(embed, {"train": fit}), opts)
    gold = [item.fields["label"] for item in test]
    fit_y = np.array([item.fields["label"] for item in fit])
    test_x = np.stack([vectors[item.id] for item in test])
    per_run = []
    for chosen in undersamples(list(fit_y), opts):
        model = LogisticRegression(max_iter=100, random_state=42)
        per_run.append(model.fit(np.stack([vectors[fit[i].id] for i in chosen]), fit_y[chosen]).predict(test_x))
    for name, scorer in (("accuracy", accuracy_score),
                         ("f1_macro", lambda y, p: f1_score(y, p, average="macro", zero_division=0)),
                         ("f1_weighted", lambda y, p: f1_score(y, p, average="weighted", zero_division=0))):
        score = estimate(name, out.arrays, resamples=10, confidence=0.9, seed=1)
        assert score.value == pytest.approx(np.mean([scorer(gold, p) for p in per_run]), abs=1e-12)
    assert accuracy_score(gold, per_run[0]) < 1 and "c3" in gold


def test_one_class_predicted_for_an_evaluated_split_of_one_class_is_no_constant_prediction() -> None:
    """The constant-prediction refusal reads the gold too (a review): an evaluated split of one label (MTEB's
    unmatched labels scored) that a model gets right everywhere is a measurement, not a constant; the same
    predictions against two gold labels are refused."""
    fit = [Item(id=f"f{i}", fields={"text": f"{label}{i}", "label": label}) for i in range(8) for label in "ab"]
    vectors = {"a": [1.0, 0.1], "b": [0.1, 1.0]}
    ctx = RunContext(embed=lambda texts, _field: np.array([vectors[text[0]] for text in texts]),
                     support={"train": fit})
    options = ClassificationOptions(fit_split="train", samples_per_label=4, n_experiments=2,
                                    unmatched_labels="score")
    right = [Item(id=f"t{i}", fields={"text": f"a-t{i}", "label": "a"}) for i in range(6)]
    out = ClassificationProtocol().run(right, ctx, options)
    assert estimate("accuracy", out.arrays, resamples=20, confidence=0.9, seed=1).value == 1.0
    mixed = [*right[:3], *(Item(id=f"u{i}", fields={"text": f"a-u{i}", "label": "b"}) for i in range(3))]
    with pytest.raises(DataError, match="every experiment predicts one class for all 6 items"):
        ClassificationProtocol().run(mixed, ctx, options)
