"""Clustering against scikit-learn used directly: MiniBatchKMeans configured as MTEB's evaluators (the legacy one-set
evaluator, and AbsTaskClustering's draws level by level of a label path, worked by hand), and V-measure, NMI, AMI
and ARI on the repeated documents each resample (and each draw) stands for. MTEB's own code on the same real-model
vectors: bench/mteb_parity_clustering.py (BENCHMARKS.md)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from sklearn import metrics as sk
from sklearn.cluster import MiniBatchKMeans

from specrun.core.contracts import RunContext
from specrun.core.errors import DataError, FieldError
from specrun.core.fields import to_label_path
from specrun.core.types import Item, Outputs
from specrun.metrics import estimate
from specrun.metrics.clustering import DRAW_STRIDE, ami, ari, draws, nmi, v_measure
from specrun.protocols.clustering import ClusteringOptions, ClusteringProtocol
from tests.protocols.test_kinds_cli import run as run_spec
from tests.protocols.test_kinds_cli import spec, write_jsonl

REFERENCES = [(v_measure, sk.v_measure_score), (nmi, sk.normalized_mutual_info_score),
              (ami, sk.adjusted_mutual_info_score), (ari, sk.adjusted_rand_score)]


@pytest.mark.parametrize("seed", range(6))
def test_weighted_scores_equal_scikit_learn_on_the_repeated_documents(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, classes, k = int(rng.integers(4, 30)), int(rng.integers(1, 5)), int(rng.integers(1, 6))
    gold = rng.integers(0, classes, n).astype(float)
    clusters = rng.integers(0, k, (n, 2)).astype(float)
    weights = rng.integers(0, 3, (3, n)).astype(float)
    weights[:, 0] += 1
    for ours, theirs in REFERENCES:
        got = ours(clusters, gold, weights)
        for b in range(3):
            index = np.repeat(np.arange(n), weights[b].astype(int))
            for r in range(2):
                assert got[b, r] == pytest.approx(theirs(gold[index], clusters[index, r]), abs=1e-9)
        assert ours(clusters, gold, np.ones(n)) == pytest.approx(
            [theirs(gold, clusters[:, r]) for r in range(2)], abs=1e-9)


@pytest.mark.parametrize("n", [2, 3, 5, 10, 50])
def test_every_document_its_own_class_and_cluster_is_a_perfect_match(n: int) -> None:
    """Mean entropy = E[MI] = MI there: AMI's terms are float noise over float noise (a hunt found 0.0 at 2 and
    1.5 at 5 documents); scikit-learn gives 1, and so must every measure. One singleton pair short of it stays
    scikit-learn's number."""
    gold = np.arange(n, dtype=float)
    for ours, theirs in REFERENCES:
        assert ours(gold[:, None], gold, np.ones(n))[0] == pytest.approx(theirs(gold, gold)) == pytest.approx(1.0)
    merged = gold.copy()
    merged[-1] = 0  # two documents in one cluster: no longer a perfect match
    for ours, theirs in REFERENCES:
        assert ours(merged[:, None], gold, np.ones(n))[0] == pytest.approx(theirs(gold, merged), abs=1e-9)


def test_runs_are_mini_batch_kmeans_as_mteb_configures_it() -> None:
    rng = np.random.default_rng(0)
    vectors = np.concatenate([rng.standard_normal((20, 4)) + shift for shift in (0, 4, 8)]).astype(np.float32)
    items = [Item(id=str(i), fields={"text": str(i), "label": "abc"[i // 20]}) for i in range(60)]
    out = ClusteringProtocol().run(items,
                                   RunContext(lambda texts, _field: vectors[[int(t) for t in texts]]),
                                   ClusteringOptions(n_runs=3, seed=42))
    for run in range(3):
        model = MiniBatchKMeans(n_clusters=3, batch_size=500, n_init="auto", random_state=42 + run).fit(vectors)
        np.testing.assert_array_equal(out.arrays["cluster_id"][:, run], model.labels_)
    np.testing.assert_array_equal(out.arrays["gold_class"], np.repeat([0, 1, 2], 20))


@pytest.mark.parametrize("labels, expected", [
    (["a"] * 5, "every item has label 'a'"),
    (["a", "b", "c"], "k = 3 labels for 3 items"),
])
def test_degenerate_label_sets_are_one_line(labels: list[str], expected: str) -> None:
    items = [Item(id=str(i), fields={"text": str(i), "label": label}) for i, label in enumerate(labels)]
    with pytest.raises(DataError, match=expected):
        ClusteringProtocol().validate_items(items, ClusteringOptions(), "f")


def test_sets_cluster_their_own_documents_and_score_only_them() -> None:
    rng = np.random.default_rng(1)
    vectors = np.concatenate([rng.standard_normal((30, 4)) + shift for shift in (0, 3, 6)]).astype(np.float32)
    labels = np.repeat([0, 1, 2], 30)
    items = [Item(id=str(i), fields={"text": str(i), "label": int(labels[i])}) for i in range(90)]
    options = ClusteringOptions(n_runs=3, seed=7, set_size=40)
    out = ClusteringProtocol().run(items, RunContext(lambda texts, _field: vectors[[int(t) for t in texts]]), options)
    for run in range(3):
        members = np.sort(np.random.default_rng(7 + run).choice(90, 40, replace=False))
        column = out.arrays["cluster_id"][:, run]
        assert set(np.flatnonzero(column >= 0)) == set(members.tolist())
        model = MiniBatchKMeans(n_clusters=len(set(labels[members])), batch_size=500, n_init="auto",
                                random_state=7 + run).fit(vectors[members])
        np.testing.assert_array_equal(column[members], model.labels_)
        ours = v_measure(out.arrays["cluster_id"], out.arrays["gold_class"], np.ones(90))[run]
        assert ours == pytest.approx(sk.v_measure_score(labels[members], model.labels_), abs=1e-12)


def test_a_run_a_resample_leaves_one_label_or_no_document_scores_1_as_mteb_scores_such_a_set() -> None:
    """MTEB's rule (AbsTaskClusteringLegacy: a set of at most one label scores 1.0, an empty one too; its
    evaluators fit k = the labels, so one label is one cluster): a resample that leaves a run so scores it 1
    rather than being degenerate (a small set of the kind's `sets` made the whole run fail)."""
    clusters = np.array([[0, 0], [1, 1], [0, -1], [1, -1], [0, -1], [1, -1]], float)
    gold = np.array([0, 1, 0, 1, 0, 1], float)
    for weights in ([[0, 0, 1, 1, 1, 1.0]], [[2, 0, 1, 1, 1, 1.0]]):  # run 1 (documents 0, 1): none drawn; one
        for metric in (v_measure, nmi, ami, ari):
            values = metric(clusters, gold, np.array(weights))
            assert values[0, 1] == 1.0, metric.__name__
            assert values[0, 0] == metric(clusters[:, :1], gold, np.array(weights))[0, 0], metric.__name__


# Label paths and MTEB 2.x's AbsTaskClustering (procedure: mteb2): the draws, the k-means and the per-level scores
# reproduced by a plain re-implementation from MTEB's description, scored by scikit-learn directly.

FIXTURE = Path(__file__).parent / "hierclust" / "test.jsonl"


def fixture_rows() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def topic_vectors(paths: list[list[str]], seed: int = 0) -> np.ndarray:
    """Vectors near a centre per subtopic, the subtopics of a topic nearer each other."""
    rng = np.random.default_rng(seed)
    tops = {top: rng.normal(size=6) * 4 for top in sorted({p[0] for p in paths})}
    subs = {tuple(p): tops[p[0]] + rng.normal(size=6) * 1.5 for p in paths}
    return np.stack([subs[tuple(p)] + rng.normal(size=6) for p in paths]).astype(np.float32)


def mteb2_by_hand(vectors: np.ndarray, paths: list[list], options: ClusteringOptions
                  ) -> tuple[list[int], list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """AbsTaskClustering as its code reads: Random(seed).sample of the embedded documents (when a limit is set),
    then per level the documents that have it, n_clusters runs of Random.choices(k=max_documents_per_cluster) and
    MiniBatchKMeans(k = the level's labels, k-means++, n_init=1, random_state=seed).fit_predict; (drawn rows,
    their labels, their clusters) per run."""
    rng = random.Random(options.seed)
    order = list(range(len(paths)))
    if options.embed_documents is not None:
        order = rng.sample(range(len(paths)), k=min(len(paths), options.embed_documents))
    runs = []
    for level in range(max(len(paths[i]) for i in order)):
        valid = [i for i in order if len(paths[i]) > level]
        labels = np.array([paths[i][level] for i in valid])
        model = MiniBatchKMeans(n_clusters=len(set(labels)), batch_size=512, init="k-means++", n_init=1,
                                random_state=options.seed)
        for _ in range(options.n_runs):
            drawn = rng.choices(range(len(valid)), k=options.draws)
            runs.append((np.array(valid)[drawn], labels[drawn], model.fit_predict(vectors[np.array(valid)[drawn]])))
    return order, runs


def mteb2_outputs(rows: list[dict], vectors: np.ndarray, options: ClusteringOptions) -> Outputs:
    items = [Item(id=r["id"], fields={"text": r["text"], "label": to_label_path(r["labels"])}) for r in rows]
    index = {r["text"]: i for i, r in enumerate(rows)}
    return ClusteringProtocol().run(items, RunContext(lambda texts, _field: vectors[[index[t] for t in texts]]),
                                    options)


@pytest.mark.parametrize("options", [ClusteringOptions(procedure="mteb2", n_runs=3, draws=200),
                                     ClusteringOptions(procedure="mteb2", n_runs=2, draws=150, seed=7,
                                                       embed_documents=70)])
def test_mteb2_runs_are_abstaskclustering_s_worked_by_hand(options: ClusteringOptions) -> None:
    rows = fixture_rows()
    paths = [r["labels"] for r in rows]
    vectors = topic_vectors(paths)
    out = mteb2_outputs(rows, vectors, options)
    order, runs = mteb2_by_hand(vectors, paths, options)
    position = {f"h{i}": i for i in range(len(rows))}
    assert sorted(position[i] for i in out.ids) == sorted(order)
    rows_of = np.array([position[i] for i in out.ids])
    clusters, gold = out.arrays["cluster_id"], out.arrays["gold_class"]
    assert clusters.shape == gold.shape == (len(order), 2 * options.n_runs)
    ones = np.ones(len(out.ids))
    for metric, theirs in ((v_measure, sk.v_measure_score), (ami, sk.adjusted_mutual_info_score)):
        ours = metric(clusters, gold, ones)
        assert ours == pytest.approx([theirs(labels, assigned) for _, labels, assigned in runs], abs=1e-12)
    for column, (drawn, _, assigned) in enumerate(runs):
        ids, times = draws(clusters[:, column])
        at = {int(doc): row for row, doc in enumerate(rows_of)}
        assert times.sum() == options.draws
        for doc, cluster in zip(drawn, assigned, strict=True):
            assert ids[at[int(doc)]] == cluster
        assert [times[at[int(d)]] for d in set(drawn.tolist())] == [int(np.sum(drawn == d)) for d in
                                                                   set(drawn.tolist())]


def test_uneven_paths_sit_out_the_levels_they_lack() -> None:
    """MTEB's rule: a document without level i is not drawn at level i (its code applies it to integer labels;
    here to any)."""
    rows = fixture_rows()
    for r in rows[::3]:
        r["labels"] = r["labels"][:1]
    paths = [r["labels"] for r in rows]
    vectors = topic_vectors(paths, seed=2)
    options = ClusteringOptions(procedure="mteb2", n_runs=2, draws=120)
    out = mteb2_outputs(rows, vectors, options)
    _, runs = mteb2_by_hand(vectors, paths, options)
    short = np.array([len(r["labels"]) == 1 for r in rows])
    assert np.all(out.arrays["gold_class"][short, 2:] == -1) and np.all(out.arrays["cluster_id"][short, 2:] == -1)
    assert v_measure(out.arrays["cluster_id"], out.arrays["gold_class"], np.ones(len(rows))) == pytest.approx(
        [sk.v_measure_score(labels, assigned) for _, labels, assigned in runs], abs=1e-12)


def test_one_level_mteb2_keeps_one_gold_column_and_max_depth_cuts() -> None:
    rows = fixture_rows()
    vectors = topic_vectors([r["labels"] for r in rows])
    out = mteb2_outputs(rows, vectors, ClusteringOptions(procedure="mteb2", n_runs=2, draws=100, max_depth=1))
    assert out.arrays["gold_class"].shape == (len(rows),) and out.arrays["cluster_id"].shape == (len(rows), 2)


@pytest.mark.parametrize("seed", range(3))
def test_draws_and_levels_weighted_equal_scikit_learn_on_the_repeated_documents(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, runs = 25, 4
    gold = rng.integers(-1, 3, (n, runs)).astype(float)  # -1: the document lacks that run's level
    times = np.where(gold >= 0, rng.integers(0, 4, (n, runs)), 0)
    clusters = np.where(times > 0, rng.integers(0, 4, (n, runs)) + DRAW_STRIDE * (times - 1), -1).astype(float)
    weights = rng.integers(0, 3, (3, n)).astype(float)
    weights[:, :4] += 1
    for ours, theirs in REFERENCES:
        got = ours(clusters, gold, weights)
        for b in range(3):
            for r in range(runs):
                index = np.repeat(np.arange(n), (weights[b] * times[:, r]).astype(int))
                if len(index):
                    assert got[b, r] == pytest.approx(theirs(gold[index, r], clusters[index, r] % DRAW_STRIDE),
                                                      abs=1e-9)


def test_mteb2_scores_are_the_mean_over_runs_and_levels_with_an_interval() -> None:
    rows = fixture_rows()
    vectors = topic_vectors([r["labels"] for r in rows])
    out = mteb2_outputs(rows, vectors, ClusteringOptions(procedure="mteb2", n_runs=3, draws=150))
    score = estimate("v_measure", out.arrays, resamples=200, confidence=0.95, seed=1)
    each = v_measure(out.arrays["cluster_id"], out.arrays["gold_class"], np.ones(len(rows)))
    assert score.value == pytest.approx(float(np.mean(each)), abs=1e-15) and score.runs == 6
    assert score.run_sd == pytest.approx(float(np.std(each)), abs=1e-15)  # MTEB's v_measure_std
    assert score.ci_low <= score.value <= score.ci_high and score.n == len(rows)


def test_bad_label_paths_and_options_are_one_line() -> None:
    for value, expected in (([], "an empty list"), ([["a"]], "not lists"), (["a", ""], "class label"),
                            ([True], "class label")):
        with pytest.raises(FieldError, match=expected):
            to_label_path(value)
    assert to_label_path("a") == "a" and to_label_path(["a", 2.0]) == ["a", 2]

    def items(paths: list) -> list[Item]:
        return [Item(id=str(i), fields={"text": str(i), "label": p}) for i, p in enumerate(paths)]

    protocol, mteb2 = ClusteringProtocol(), ClusteringOptions(procedure="mteb2")
    with pytest.raises(DataError, match="procedure legacy clusters one set of labels"):
        protocol.validate_items(items([["a", "x"], ["b", "y"], ["a", "y"]]), ClusteringOptions(), "f")
    with pytest.raises(DataError, match="mixes numbers and texts"):
        protocol.validate_items(items([["a", 1], ["b", "y"], ["a", "y"]]), mteb2, "f")
    with pytest.raises(DataError, match="level 2 of the label paths: every item has label 'x'"):
        protocol.validate_items(items([["a", "x"], ["b", "x"], ["a", "x"]]), mteb2, "f")
    protocol.validate_items(items([["a", "x"], ["b", "x"], ["a", "x"]]), mteb2.model_copy(update={"max_depth": 1}),
                            "f")
    few = [Item(id=str(i), fields={"text": str(i), "label": "ab"[i % 2]}) for i in range(20)]
    with pytest.raises(DataError, match=r"embed_fraction 0\.04 of 20 documents embeds 0"):
        protocol.validate_items(few, mteb2.model_copy(update={"embed_fraction": 0.04}), "f")
    rare = [Item(id=str(i), fields={"text": str(i), "label": "b" if i == 99 else "a"}) for i in range(100)]
    with pytest.raises(DataError, match=r"the 2 documents embedded: every item has label 'a'") as raised:
        protocol.validate_items(rare, mteb2.model_copy(update={"embed_documents": 2}), "f")
    assert raised.value.file == "f"  # the data's file, with the sample named in the message
    for bad, expected in (({"procedure": "mteb2", "set_size": 5}, "set_size: only for procedure: legacy"),
                          ({"draws": 5}, "draws: only for procedure: mteb2"),
                          ({"procedure": "mteb2", "embed_fraction": 0.5, "embed_documents": 5}, "not both")):
        with pytest.raises(ValidationError, match=expected):
            ClusteringOptions(**bad)


def test_the_fixture_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", fixture_rows())
    path = spec(tmp_path, "clustering", {"text": "text", "label": "labels"}, {"v": "v_measure", "a": "ami"},
                options={"procedure": "mteb2", "n_runs": 3, "draws": 300})
    results, arrays = run_spec(path, tmp_path, capsys)
    ones = np.ones(len(arrays["gold_class"]))
    for name, statistic in (("v", v_measure), ("a", ami)):
        score = results.scores["test"][name]
        each = statistic(arrays["cluster_id"], arrays["gold_class"], ones)
        assert score.value == pytest.approx(float(np.mean(each)), abs=1e-12) and score.runs == 6, name
        assert score.ci_low <= score.value <= score.ci_high and score.ci_low < score.ci_high, name
        assert score.n == 96
