"""Clustering against scikit-learn used directly: MiniBatchKMeans configured as MTEB's evaluator, and V-measure,
NMI, AMI and ARI on the repeated documents each resample stands for."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk
from sklearn.cluster import MiniBatchKMeans

from specrun.core.contracts import RunContext
from specrun.core.errors import DataError
from specrun.core.types import Item
from specrun.metrics.clustering import ami, ari, nmi, v_measure
from specrun.protocols.clustering import ClusteringOptions, ClusteringProtocol

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
        ClusteringProtocol().run(items, RunContext(lambda texts, _field: np.ones((len(texts), 3))), ClusteringOptions())


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


def test_a_run_whose_documents_a_resample_left_out_is_undefined_not_perfect() -> None:
    clusters = np.array([[0, 0], [1, 1], [0, -1], [1, -1], [0, -1], [1, -1]], float)
    gold = np.array([0, 1, 0, 1, 0, 1], float)
    weights = np.array([[0, 0, 1, 1, 1, 1.0]])  # run 1 clusters documents 0 and 1 only: none drawn
    for metric in (v_measure, nmi, ami, ari):
        values = metric(clusters, gold, weights)
        assert np.isfinite(values[0, 0]) and np.isnan(values[0, 1]), metric.__name__
