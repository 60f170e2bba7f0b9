"""Pair classification against scikit-learn (AP), a brute-force search over every threshold (best accuracy and
F1, the thresholds MTEB reports), and a threshold chosen on another split; under each `similarity:` the fixed
thresholds are chosen on, and applied to, that function's scores (numpy and scikit-learn here), end to end too,
and a run written before `threshold_score` existed still verifies."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.metrics import accuracy_score, average_precision_score, f1_score

from specrun.core.contracts import RunContext
from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
from specrun.core.types import Item
from specrun.metrics import estimate
from specrun.metrics.pair_classification import accuracy_at_threshold, average_precision, f1_at_threshold
from specrun.protocols.pair_classification import PairClassificationProtocol, PairOptions, similarities
from specrun.search.thresholds import best_accuracy, best_f1, best_thresholds
from tests.conftest import SPECS, plan_of, run_ok
from tests.protocols.test_similarity import direct  # the four functions written out plainly


def brute(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float, float, float]:
    """MTEB 2.26.24's search written out (AbsTaskPairClassification._find_best_acc_and_threshold and _f1_): the
    pairs sorted by score, highest first, the split after each pair but the last considered unless the next pair's
    score is the same ("a threshold can't split tied scores"), the first best of each and the midpoint thresholds."""
    rows = sorted(zip(scores.tolist(), labels.tolist(), strict=True), key=lambda row: row[0], reverse=True)
    best = [(0.0, -1.0), (0.0, 0.0)]
    positives, remaining_negatives = 0, int(np.sum(labels == 0))
    for i in range(len(rows) - 1):
        positives += rows[i][1] == 1
        remaining_negatives -= rows[i][1] == 0
        if rows[i][0] == rows[i + 1][0]:
            continue
        threshold = (rows[i][0] + rows[i + 1][0]) / 2
        accuracy = (positives + remaining_negatives) / len(rows)
        if accuracy > best[0][0]:
            best[0] = (accuracy, threshold)
        if positives:
            precision, recall = positives / (i + 1), positives / int(np.sum(labels == 1))
            f1 = 2 * precision * recall / (precision + recall)
            if f1 > best[1][0]:
                best[1] = (f1, threshold)
    return best[0][0], best[1][0], best[0][1], best[1][1]


@pytest.mark.parametrize("seed", range(24))
def test_measures_equal_scikit_learn_and_a_brute_force_threshold_search(seed: int) -> None:
    """Each resample (a unit drawn k times: k rows to MTEB) against MTEB's search on the rows written out, tied
    scores with mixed labels included: MTEB 2.26.24 never splits them (bench/mteb_parity_pair_ties.py runs its own
    code on such cases)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 30))
    scores = np.round(rng.random(n), 1)  # ties on purpose
    labels = rng.integers(0, 2, n)
    labels[:2] = [1, 0]
    weights = rng.integers(0, 4, (3, n)).astype(float)
    weights[:, :2] = 1
    for b in range(3):
        index = np.repeat(np.arange(n), weights[b].astype(int))
        s, y = scores[index], labels[index]
        accuracy, f1, _, _ = brute(s, y) if len(set(scores)) > 1 else (np.nan, np.nan, 0, 0)  # all tied: none
        drawn_tied = len(set(s)) == 1  # AP of scores all tied is the positive rate whatever the model: undefined
        assert average_precision(scores, labels, weights)[b] == pytest.approx(
            np.nan if drawn_tied else average_precision_score(y, s), nan_ok=True)
        assert best_accuracy(scores, labels, weights)[b] == pytest.approx(accuracy, nan_ok=True)
        assert best_f1(scores, labels, weights)[b] == pytest.approx(f1, nan_ok=True)
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
    test, _ = pairs(10, 1)
    test = [Item(id=i.id, fields={**i.fields, "label": 1}) for i in test]
    with pytest.raises(DataError, match="the evaluated split: every pair has label 1"):
        PairClassificationProtocol().validate_items(test, PairOptions(), "f")
    good, _ = pairs(10, 1)
    with pytest.raises(DataError, match="threshold split 'dev': every pair has label 1"):
        PairClassificationProtocol().validate_items(good, PairOptions(threshold_split="dev"), "f", {"dev": test})


def at_thresholds(test: tuple[np.ndarray, np.ndarray], chosen_on: tuple[np.ndarray, np.ndarray]) -> tuple[float,
                                                                                                           float]:
    """scikit-learn's accuracy and F1 on the test scores at the thresholds the brute search chose."""
    _, _, accuracy_threshold, f1_threshold = brute(*chosen_on)
    scores, labels = test
    return (accuracy_score(labels, scores > accuracy_threshold),
            f1_score(labels, scores > f1_threshold, zero_division=0))


@pytest.mark.parametrize("function", ["cosine", "dot", "euclidean", "manhattan"])
def test_the_fixed_thresholds_are_chosen_and_applied_on_the_protocol_s_similarity(function: str) -> None:
    test, vectors = pairs(40, 3)
    dev, more = pairs(30, 4)
    vectors |= more

    def embed(texts, _field=""):  # type: ignore[no-untyped-def]
        return np.stack([vectors[t] for t in texts])

    def scored(items: list[Item]) -> tuple[np.ndarray, np.ndarray]:
        return (direct(embed([i.fields["text1"] for i in items]), embed([i.fields["text2"] for i in items]), function),
                np.array([i.fields["label"] for i in items]))

    protocol = PairClassificationProtocol()
    cosine = protocol.run(test, RunContext(embed, {"dev": dev}), PairOptions(threshold_split="dev"))
    for options, chosen_on in ((PairOptions(threshold_split="dev"), dev), (PairOptions(), test)):
        out = protocol.run(test, RunContext(embed, {"dev": dev}, similarity=function), options)
        np.testing.assert_allclose(out.arrays["threshold_score"], scored(test)[0], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(out.arrays["threshold_score"], out.arrays[f"{function}_score"])
        accuracy, f1 = at_thresholds(scored(test), scored(chosen_on))
        values = [estimate(name, out.arrays, resamples=50, confidence=0.9, seed=3).value
                  for name in ("pair_accuracy_at_threshold", "pair_f1_at_threshold")]
        assert values == pytest.approx([accuracy, f1], abs=1e-12), (function, options)
        if options.threshold_split is None:  # chosen on the units themselves: MTEB's best, as pair_best_*
            suffix = "" if function == "cosine" else f"_{function}"
            assert values == pytest.approx([estimate(f"pair_best_{m}{suffix}", out.arrays, resamples=50,
                                                     confidence=0.9, seed=3).value for m in ("accuracy", "f1")])
    for name, values in cosine.arrays.items():  # every other output is the one a cosine protocol gives
        if name not in ("threshold_score", "accuracy_threshold", "f1_threshold"):
            np.testing.assert_array_equal(out.arrays[name], values)
    # cosine: the thresholds and their scores are the ones the kind always used, so its numbers are unchanged
    np.testing.assert_array_equal(cosine.arrays["threshold_score"], cosine.arrays["cosine_score"])
    labels = np.array([i.fields["label"] for i in dev], dtype=np.float64)
    dev_cosine = similarities(embed([i.fields["text1"] for i in dev]), embed([i.fields["text2"] for i in dev]))
    assert (cosine.arrays["accuracy_threshold"][0], cosine.arrays["f1_threshold"][0]) == best_thresholds(
        dev_cosine["cosine"], labels)


def pairs_spec(tmp_path: Path, similarity: str, name: str = "pairs", sizes: dict[str, int] | None = None) -> Path:
    """specs/jsick-pairs.yaml on 300 test pairs (the seeded subset; trial, 500 pairs, whole; or `sizes`), 200
    resamples, one similarity."""
    data = load_plain((SPECS / "jsick-pairs.yaml").read_text(encoding="utf-8"))
    data["subset"]["splits"] = sizes or {"test": 300}
    data["uncertainty"]["resamples"] = 200
    data["protocols"]["pairs"]["similarity"] = similarity
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def split_scores(spec: Path, data_dir: Path, encode: Callable[[list[str]], np.ndarray],
                 function: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per split: the pairs' scores under `function` from vectors encoded here, and their labels."""
    from specrun.data import load_split

    out = {}
    for split in ("test", "trial"):
        items = load_split(plan_of(spec), split, data_dir).items
        left = encode([item.fields["text1"] for item in items])
        right = encode([item.fields["text2"] for item in items])
        out[split] = direct(left, right, function), np.array([item.fields["label"] for item in items])
    return out


def hashing_encode(texts: list[str]) -> np.ndarray:
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])  # type: ignore[arg-type]
    return adapter.encode_group(texts, 32)


def test_a_spec_s_similarity_scores_its_trial_thresholds_end_to_end(tmp_path: Path, data_dir: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """JSICK pairs under `similarity: manhattan`: the trial thresholds and the test accuracy and F1 at them equal
    scikit-learn's on manhattan scores of the hashing vectors; AP stays cosine; the run verifies."""
    from specrun.results.verify import load_verified

    spec = pairs_spec(tmp_path, "manhattan")
    results = run_ok([str(spec), "--adapter", "hashing", "--data-dir", str(data_dir), "--output",
                      str(tmp_path / "out")], capsys)
    assert results.provenance.similarity["pairs"].function == "manhattan"
    scores = split_scores(spec, data_dir, hashing_encode, "manhattan")
    accuracy, f1 = at_thresholds(scores["test"], scores["trial"])
    test = results.scores["test"]
    assert (test["accuracy"].value, test["f1"].value) == pytest.approx((accuracy, f1), abs=1e-12)
    cosine = split_scores(spec, data_dir, hashing_encode, "cosine")["test"]
    assert test["ap"].value == pytest.approx(  # cosines rounded to 12 decimals: equal pairs are ties
        average_precision_score(cosine[1], np.round(cosine[0], 12)), abs=1e-12)
    load_verified(next((tmp_path / "out").rglob("results.json")))


def older(results_path: Path, function: str | None = None) -> Path:
    """The run as written before threshold_score existed: the column dropped, the predictions pinned again
    (and, with `function`, the similarity it records edited)."""
    folder = results_path.parent
    rows = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
    text = "".join(json.dumps({k: v for k, v in row.items() if k != "threshold_score"}, ensure_ascii=False,
                              separators=(",", ":")) + "\n" for row in rows)
    (folder / "predictions.jsonl").write_text(text, encoding="utf-8")
    document = json.loads(results_path.read_text())
    document["predictions"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    if function is not None:
        document["provenance"]["similarity"]["pairs"]["function"] = function
    results_path.write_text(json.dumps(document, ensure_ascii=False))
    return results_path


def test_a_cosine_run_written_before_threshold_score_still_verifies(tmp_path: Path, data_dir: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Such a run was cosine-only: its threshold_score is its cosine_score (results.verify.OLDER_COLUMNS). A run
    recording another function cannot have lacked the column: refused as any missing input."""
    import shutil

    from specrun.core.errors import ResultsError
    from specrun.results.verify import load_verified

    run_ok([str(pairs_spec(tmp_path, "cosine")), "--adapter", "hashing", "--data-dir", str(data_dir), "--output",
            str(tmp_path / "out")], capsys)
    path = next((tmp_path / "out").rglob("results.json"))
    now = load_verified(path)
    shutil.copytree(path.parent, tmp_path / "edited")
    then = load_verified(older(path))
    assert "threshold_score" not in (path.parent / "predictions.jsonl").read_text()
    assert then.results.scores == now.results.scores
    np.testing.assert_array_equal(then.units[("test", "pairs")][1]["threshold_score"],
                                  now.units[("test", "pairs")][1]["cosine_score"])
    with pytest.raises(ResultsError, match="the predictions lack threshold_score"):
        load_verified(older(tmp_path / "edited" / "results.json", "dot"))


@pytest.mark.slow
def test_similarity_model_takes_a_model_s_dot(tmp_path: Path, data_dir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The bundled model copied with similarity_fn_name: dot, under `similarity: model`: the thresholds are
    chosen on trial's dot products and the test accuracy and F1 are scikit-learn's at them, on a direct
    sentence-transformers encode."""
    from sentence_transformers import SentenceTransformer

    from tests.protocols.test_similarity import dot_model

    folder = dot_model(tmp_path)
    spec = pairs_spec(tmp_path, "model", sizes={"test": 150})  # the real model encodes them twice
    results = run_ok([str(spec), "--model", str(folder), "--data-dir", str(data_dir), "--output",
                      str(tmp_path / "out")], capsys)
    assert results.provenance.similarity["pairs"].model_dump() == {"requested": "model", "function": "dot"}
    model = SentenceTransformer(str(folder), device="cpu")
    scores = split_scores(spec, data_dir, lambda texts: model.encode(texts, batch_size=32), "dot")
    accuracy, f1 = at_thresholds(scores["test"], scores["trial"])
    test = results.scores["test"]
    assert (test["accuracy"].value, test["f1"].value) == pytest.approx((accuracy, f1), abs=1e-9)
    rows = [json.loads(line) for line in next((tmp_path / "out").rglob("predictions.jsonl")).read_text().splitlines()]
    assert all(row["threshold_score"] == row["dot_score"] for row in rows)
