"""Clustering: k-means over the embeddings of the evaluated items, k = the number of gold labels, compared with
the gold labels (V-measure, NMI, ARI); several runs with different seeds, as MTEB's clustering evaluator fits
scikit-learn's MiniBatchKMeans once per set."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import Item, Outputs
from specrun.protocols.labels import label_numbers, sorted_labels
from specrun.search.cosine import check_vectors

MTEB_SEED = 42
MTEB_BATCH = 500  # MTEB 2.x's clustering_batch_size


class ClusteringOptions(KindOptions):
    n_runs: int = Field(10, ge=1, le=1000, description="k-means runs, run r seeded with seed + r (MTEB: one).")
    seed: int = Field(MTEB_SEED, ge=0, le=2**32 - 1, description="random_state of the first run (MTEB: 42).")
    batch_size: int = Field(MTEB_BATCH, ge=1, description="MiniBatchKMeans batch size (MTEB 2.x: 500).")
    set_size: int | None = Field(
        None, ge=2, description="Documents per run: each run clusters its own random subset of this many "
                                "documents (without replacement, seed + run, k = its labels); MTEB's sets are "
                                "drawn otherwise, so comparable, not equal. Default: every run clusters all.")


def run_sets(n_items: int, options: ClusteringOptions) -> list[np.ndarray]:
    """The documents each run clusters: all of them, or a subset of set_size drawn with seed + run."""
    if options.set_size is None:
        return [np.arange(n_items)] * options.n_runs
    return [np.sort(np.random.default_rng(options.seed + run).choice(n_items, options.set_size, replace=False))
            for run in range(options.n_runs)]


def cluster_runs(vectors: np.ndarray, gold: np.ndarray, options: ClusteringOptions) -> np.ndarray:
    """(items, runs) cluster of each item in each run, -1 for an item its run leaves out: MiniBatchKMeans(k =
    the gold labels among the run's documents, batch_size, n_init='auto' (one k-means++ start), random_state =
    seed + run), as MTEB's ClusteringEvaluator configures it."""
    from sklearn.cluster import MiniBatchKMeans

    out = np.full((len(vectors), options.n_runs), -1.0)
    for run, members in enumerate(run_sets(len(vectors), options)):
        k = len(np.unique(gold[members]))
        if k < 2:
            raise DataError(f"run {run}'s {len(members)} documents hold a single label; raise set_size")
        model = MiniBatchKMeans(n_clusters=k, batch_size=options.batch_size, n_init="auto", compute_labels=True,
                                random_state=options.seed + run)
        out[members, run] = model.fit(vectors[members]).labels_
    return out


class ClusteringProtocol(ProtocolKind[ClusteringOptions]):
    """Each item embedded on its own; k-means with k = the number of distinct gold labels, n_runs times, over all
    evaluated items or (set_size) each run over its own subset. Outputs per item: its gold label (numbered in
    sorted order) and its cluster in each run (-1 where its run left it out)."""

    info = KindInfo(
        item_fields={"text": "text", "label": "label"},
        outputs=("cluster_id", "gold_class"),
        unit="documents",
        prompt_task="Clustering",
        hub_task="text-classification",
    )
    Options = ClusteringOptions

    def run(self, items: Sequence[Item], ctx: RunContext, options: ClusteringOptions) -> Outputs:
        classes = sorted_labels((item.fields["label"] for item in items), "the evaluated split")
        if len(classes) < 2:
            raise DataError(f"every item has label {classes[0]!r}; clustering against one label is always "
                            "perfect and measures nothing")
        if len(classes) >= len(items):
            raise DataError(f"k = {len(classes)} labels for {len(items)} items; k-means needs more items than "
                            "clusters")
        if options.set_size is not None and options.set_size > len(items):
            raise DataError(f"set_size {options.set_size} is more than the {len(items)} documents")
        vectors = check_vectors(ctx.embed([item.fields["text"] for item in items], "text"), "k-means cannot place it")
        gold = label_numbers(items, classes)
        clusters = cluster_runs(vectors, gold, options)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"cluster_id": clusters, "gold_class": gold.astype(float)})

    def example(self) -> KindExample:
        docs = [("stocks rally as markets open", "business"), ("the central bank raised rates", "business"),
                ("shares of the bank fell", "business"), ("the striker scored twice", "sports"),
                ("the team won the final", "sports"), ("a late goal decided the match", "sports"),
                ("the new phone has a faster chip", "technology"), ("software update fixes a bug", "technology"),
                ("the laptop battery lasts longer", "technology")]
        return KindExample(items=[Item(id=f"d{i}", fields={"text": t, "label": c}) for i, (t, c) in enumerate(docs)],
                           options={"n_runs": 3, "batch_size": 4})


PROTOCOLS.register("clustering", ClusteringProtocol())
