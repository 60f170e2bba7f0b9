"""Clustering: k-means over the embeddings of the evaluated items, k = the number of gold labels, compared with
the gold labels (V-measure, NMI, ARI); several runs with different seeds, as MTEB's clustering evaluator fits
scikit-learn's MiniBatchKMeans once per set."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from specrun.core.contracts import KindExample, ProtocolKind
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, Embed, Item, Outputs, Strict, Support
from specrun.protocols.labels import label_numbers, sorted_labels
from specrun.search.cosine import check_vectors

MTEB_SEED = 42
MTEB_BATCH = 500  # MTEB 2.x's clustering_batch_size


class ClusteringOptions(Strict):
    n_runs: int = Field(10, ge=1, le=1000, description="k-means runs, run r seeded with seed + r (MTEB: one).")
    seed: int = Field(MTEB_SEED, ge=0, le=2**32 - 1, description="random_state of the first run (MTEB: 42).")
    batch_size: int = Field(MTEB_BATCH, ge=1, description="MiniBatchKMeans batch size (MTEB 2.x: 500).")


def cluster_runs(vectors: np.ndarray, k: int, options: ClusteringOptions) -> np.ndarray:
    """(items, runs) cluster of each item in each run: MiniBatchKMeans(k, batch_size, n_init='auto' (one
    k-means++ start), random_state = seed + run), as MTEB's ClusteringEvaluator configures it."""
    from sklearn.cluster import MiniBatchKMeans

    out = np.empty((len(vectors), options.n_runs), dtype=np.float64)
    for run in range(options.n_runs):
        model = MiniBatchKMeans(n_clusters=k, batch_size=options.batch_size, n_init="auto", compute_labels=True,
                                random_state=options.seed + run)
        out[:, run] = model.fit(vectors).labels_
    return out


class ClusteringProtocol(ProtocolKind):
    """Each item embedded on its own; k-means with k = the number of distinct gold labels over all evaluated
    items, n_runs times. Outputs per item: its gold label (numbered in sorted order) and its cluster in each run."""

    item_fields: ClassVar[dict[str, str]] = {"text": "text", "label": "label"}
    outputs: ClassVar[tuple[str, ...]] = ("cluster_id", "gold_class")
    unit: ClassVar[str] = "documents"
    Options = ClusteringOptions
    hub_task: ClassVar[str] = "text-classification"
    hub_task_id: ClassVar[str | None] = None

    def texts(self, items: Sequence[Item], options: Any, support: Support = NO_SUPPORT) -> Iterator[str]:
        for item in items:
            yield item.fields["text"]

    def run(self, items: Sequence[Item], embed: Embed, options: Any, support: Support = NO_SUPPORT) -> Outputs:
        classes = sorted_labels((item.fields["label"] for item in items), "the evaluated split")
        if len(classes) < 2:
            raise DataError(f"every item has label {classes[0]!r}; clustering against one label is always "
                            "perfect and measures nothing")
        if len(classes) >= len(items):
            raise DataError(f"k = {len(classes)} labels for {len(items)} items; k-means needs more items than "
                            "clusters")
        vectors = check_vectors(embed([item.fields["text"] for item in items]), "k-means cannot place it")
        clusters = cluster_runs(vectors, len(classes), options)
        return Outputs(unit=self.unit, ids=[item.id for item in items],
                       arrays={"cluster_id": clusters, "gold_class": label_numbers(items, classes).astype(float)})

    def example(self) -> KindExample:
        docs = [("stocks rally as markets open", "business"), ("the central bank raised rates", "business"),
                ("shares of the bank fell", "business"), ("the striker scored twice", "sports"),
                ("the team won the final", "sports"), ("a late goal decided the match", "sports"),
                ("the new phone has a faster chip", "technology"), ("software update fixes a bug", "technology"),
                ("the laptop battery lasts longer", "technology")]
        return KindExample(items=[Item(id=f"d{i}", fields={"text": t, "label": c}) for i, (t, c) in enumerate(docs)],
                           options={"n_runs": 3, "batch_size": 4})


PROTOCOLS.register("clustering", ClusteringProtocol())
