"""Clustering: k-means over the embeddings of the evaluated items, k = the number of gold labels, compared with
the gold labels (V-measure, NMI, AMI, ARI). Two procedures:

- legacy (the default): MTEB's one-set ClusteringEvaluator (`clustering_legacy.py`): MiniBatchKMeans over all
  documents (or, with set_size, each run over its own subset), n_runs times with random_state seed + run. With
  `sets` (an item field: the set each document belongs to, e.g. the split's `explode_row`), MTEB's legacy
  AbsTaskClusteringLegacy: each set is clustered on its own (k = its labels; a set of one label is not clustered
  and scores 1, as MTEB), each run of each set is a run of the outputs, so the score is the mean over the sets and
  the bootstrap draws the sets (the runs) with replacement beside the documents.
- mteb2: MTEB 2.x's AbsTaskClustering: a `random.Random(seed)` samples the documents embedded (only when
  embed_fraction or embed_documents is set: MTEB's max_fraction_of_documents_to_embed, max_document_to_embed),
  then, level by level of the label paths, n_runs runs (its n_clusters) each draw `draws` documents with
  replacement from that Random (`choices`, its max_documents_per_cluster) and fit one MiniBatchKMeans(k = the
  level's labels, batch 512, one k-means++ start, random_state = seed: the same in every run). A run's V-measure
  is on its draws, duplicates counted; MTEB's main score is the mean over every run of every level. MTEB's task
seeds its Random once, when it is made, so a second split or subset goes on from the first's state; here each
split starts at Random(seed) (equal for a task of one split and subset).

A label path ([level 1, level 2, ...], coarsest first; a plain label is one level) is scored level by level. An
item without level i sits out level i (MTEB's rule; MTEB's own code applies it to integer labels only: with text
labels numpy turns its -1 into the text '-1', so a missing level becomes a class '-1' there)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError, ProtocolError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, FieldText, Item, Outputs, Support
from specrun.protocols.labels import shown, sorted_labels
from specrun.search.cosine import check_vectors

MTEB_SEED = 42
MTEB_BATCH = 500  # MTEB 2.x's clustering_batch_size (the legacy evaluator)
MTEB2_BATCH = 512  # AbsTaskClustering.k_mean_batch_size
MTEB2_DRAWS = 16_384  # AbsTaskClustering.max_documents_per_cluster
DRAW_STRIDE = 2**20  # cluster_id of an mteb2 run: the cluster, plus DRAW_STRIDE per draw beyond the first
LEGACY_ONLY = ("set_size", "sets")
MTEB2_ONLY = ("draws", "embed_fraction", "embed_documents", "max_depth", "missing_level")


class ClusteringOptions(KindOptions):
    procedure: Literal["legacy", "mteb2"] = Field(
        "legacy", description="legacy: MTEB's one-set evaluator (clustering_legacy); mteb2: MTEB 2.x's "
                              "AbsTaskClustering (documents drawn with replacement, label paths level by level).")
    n_runs: int = Field(10, ge=1, le=1000, description="k-means runs per level: legacy run r seeded with seed + r "
                                                       "(MTEB: one); mteb2: its n_clusters (MTEB: 10).")
    seed: int = Field(MTEB_SEED, ge=0, le=2**32 - 1, description="legacy: random_state of the first run; mteb2: "
                                                                 "seeds the draws and every run (MTEB: 42).")
    batch_size: int | None = Field(None, ge=1, description="MiniBatchKMeans batch size (default: 500 legacy, as "
                                                           "MTEB's clustering_batch_size; 512 mteb2).")
    set_size: int | None = Field(
        None, ge=2, description="legacy: documents per run: each run clusters its own random subset of this many "
                                "documents (without replacement, seed + run, k = its labels); MTEB's sets are "
                                "drawn otherwise, so comparable, not equal. Default: every run clusters all.")
    sets: str | None = Field(
        None, min_length=1, description="legacy: the item field naming each document's set: every set is clustered "
                                        "on its own, the score the mean over the sets (MTEB's "
                                        "AbsTaskClusteringLegacy, n_runs 1). Default: the split is one set.")
    draws: int = Field(MTEB2_DRAWS, ge=2, description="mteb2: documents each run draws with replacement (MTEB's "
                                                      "max_documents_per_cluster: 16384).")
    embed_fraction: float | None = Field(
        None, gt=0, le=1, description="mteb2: embed int(fraction x documents) drawn without replacement (MTEB's "
                                      "max_fraction_of_documents_to_embed; its class default 0.04, which most "
                                      "tasks set to None). Default: embed all, no draw.")
    embed_documents: int | None = Field(None, ge=2, description="mteb2: embed this many documents drawn without "
                                                                "replacement (MTEB's max_document_to_embed).")
    max_depth: int | None = Field(None, ge=1, description="mteb2: score the first max_depth levels only (MTEB's "
                                                          "max_depth). Default: every level.")
    missing_level: Literal["skip", "class"] = Field(
        "skip", description="mteb2: an item whose path lacks a level: skip sits it out of that level (MTEB's stated "
                            "rule); class gives it the text label '-1' there (MTEB's code where labels are text: "
                            "numpy makes its -1 the text '-1', a class of its own).")

    @model_validator(mode="after")
    def _one_procedure(self) -> ClusteringOptions:
        other, owner = (MTEB2_ONLY, "mteb2") if self.procedure == "legacy" else (LEGACY_ONLY, "legacy")
        stray = [name for name in other if name in self.model_fields_set]
        if stray:
            raise ValueError(f"{', '.join(stray)}: only for procedure: {owner}")
        if self.embed_fraction is not None and self.embed_documents is not None:
            raise ValueError("set embed_fraction or embed_documents, not both (as MTEB)")
        if self.sets is not None and self.set_size is not None:
            raise ValueError("set sets or set_size, not both (each set is clustered whole)")
        return self

    @property
    def kmeans_batch(self) -> int:
        if self.batch_size is not None:
            return self.batch_size
        return MTEB_BATCH if self.procedure == "legacy" else MTEB2_BATCH


def run_sets(n_items: int, options: ClusteringOptions) -> list[np.ndarray]:
    """The documents each legacy run clusters: all of them, or a subset of set_size drawn with seed + run."""
    if options.set_size is None:
        return [np.arange(n_items)] * options.n_runs
    return [np.sort(np.random.default_rng(options.seed + run).choice(n_items, options.set_size, replace=False))
            for run in range(options.n_runs)]


def cluster_runs(vectors: np.ndarray, gold: np.ndarray, options: ClusteringOptions) -> np.ndarray:
    """(items, runs) cluster of each item in each legacy run, -1 for an item its run leaves out:
    MiniBatchKMeans(k = the gold labels among the run's documents, batch_size, n_init='auto' (one k-means++
    start), random_state = seed + run), as MTEB's ClusteringEvaluator configures it."""
    from sklearn.cluster import MiniBatchKMeans

    out = np.full((len(vectors), options.n_runs), -1.0)
    for run, members in enumerate(run_sets(len(vectors), options)):  # each holds two labels or more (validate_items)
        model = MiniBatchKMeans(n_clusters=len(np.unique(gold[members])), batch_size=options.kmeans_batch,
                                n_init="auto", compute_labels=True, random_state=options.seed + run)
        out[members, run] = model.fit(vectors[members]).labels_
    return out


def set_members(items: Sequence[Item], field: str) -> list[np.ndarray]:
    """The items of each set (the `sets` field's value), sets in the order they first appear."""
    groups: dict[Any, list[int]] = {}
    for index, item in enumerate(items):
        if field not in item.fields:
            raise DataError(f"item {item.id} has no field {field!r} (the option `sets`); map a column to it, e.g. "
                            "the split's `explode_row`")
        groups.setdefault(str(item.fields[field]), []).append(index)
    return [np.asarray(members) for members in groups.values()]


def set_runs(vectors: np.ndarray, gold: np.ndarray, sets: list[np.ndarray], options: ClusteringOptions,
             embedded: np.ndarray) -> np.ndarray:
    """(items, sets x runs) cluster of each item in each run of its set, -1 elsewhere: MTEB's legacy
    ClusteringEvaluator per set (MiniBatchKMeans(k = the set's labels, batch_size, n_init='auto', random_state =
    seed + run)); a set of one label is not clustered: one cluster, V-measure 1, as MTEB scores it. `embedded`:
    the row of `vectors` of each item (-1: not embedded)."""
    from sklearn.cluster import MiniBatchKMeans

    out = np.full((len(gold), len(sets) * options.n_runs), -1.0)
    for number, members in enumerate(sets):
        k = len(np.unique(gold[members]))
        for run in range(options.n_runs):
            column = number * options.n_runs + run
            if k < 2:
                out[members, column] = 0
                continue
            model = MiniBatchKMeans(n_clusters=k, batch_size=options.kmeans_batch, n_init="auto",
                                    compute_labels=True, random_state=options.seed + run)
            out[members, column] = model.fit(vectors[embedded[members]]).labels_
    return out


def clustered(items: Sequence[Item], field: str) -> list[int]:
    """The items k-means places, in the split's order: those of every set of two labels or more (MTEB embeds no
    other)."""
    gold = level_numbers(items, "the evaluated split")[0][:, 0]
    return sorted(int(i) for members in set_members(items, field) if len(np.unique(gold[members])) > 1
                  for i in members)


def label_path(value: Any) -> list[Any]:
    """An item's label as a path: a plain label is a path of one level."""
    return value if isinstance(value, list) else [value]


def level_numbers(items: Sequence[Item], origin: str, missing: str = "skip") -> tuple[np.ndarray, list[list[Any]]]:
    """(items, levels) each item's label at each level numbered in that level's sorted order, -1 where its path
    is shorter (it sits out the level; missing 'class': it holds the text label '-1' there), and each level's
    labels."""
    paths = [label_path(item.fields["label"]) for item in items]
    out = np.full((len(items), max(map(len, paths))), -1, dtype=np.int64)
    classes = []
    for level in range(out.shape[1]):
        if missing == "class" and any(len(path) <= level for path in paths):
            paths = [path if len(path) > level else [*path, *["-1"] * (level + 1 - len(path))] for path in paths]
            if any(not isinstance(path[level], str) for path in paths):
                raise DataError(f"level {level + 1} of the label paths holds numbers: missing_level class gives a "
                                "missing level the text '-1' (MTEB's code where labels are text); use skip",
                                file=origin)
        present = [i for i, path in enumerate(paths) if len(path) > level]
        classes.append(sorted_labels((paths[i][level] for i in present), origin))
        index = {label: number for number, label in enumerate(classes[-1])}
        out[present, level] = [index[paths[i][level]] for i in present]
    return out, classes


def check_levels(levels: np.ndarray, classes: list[list[Any]], options: ClusteringOptions, origin: str,
                 which: str = "") -> None:
    """Refuse, in one line, labels no k-means run can score: one label at a scored level, as many labels as
    documents, more labels than an mteb2 run draws, or (legacy) paths of several levels; `which` says of which
    documents (the sample embedded), the file stays the data's."""
    if options.procedure == "legacy" and levels.shape[1] > 1:
        raise DataError(f"label paths of {levels.shape[1]} levels: procedure legacy clusters one set of labels; "
                        "set procedure: mteb2 to score them level by level", file=origin)
    for level in range(min(levels.shape[1], options.max_depth or levels.shape[1])):
        present = int(np.sum(levels[:, level] >= 0))
        where = which + ("" if levels.shape[1] == 1 else f"level {level + 1} of the label paths: ")
        if len(classes[level]) < 2:
            raise DataError(f"{where}every item has label {shown(classes[level])}; clustering against one label "
                            "is always perfect and measures nothing", file=origin)
        if len(classes[level]) >= present:
            raise DataError(f"{where}k = {len(classes[level])} labels for {present} items; k-means needs more "
                            "items than clusters", file=origin)
        if options.procedure == "mteb2" and options.draws < len(classes[level]):
            raise DataError(f"{where}k = {len(classes[level])} labels, more than the {options.draws} documents "
                            "each run draws (`draws`); k-means needs at least k: raise draws", file=origin)


def embedded(n_items: int, options: ClusteringOptions) -> tuple[list[int], random.Random]:
    """mteb2: the documents embedded, in MTEB's order, and the Random that then draws the runs: all of them
    untouched, or `Random(seed).sample` of int(embed_fraction x n) or embed_documents (at most n)."""
    rng = random.Random(options.seed)
    if options.embed_fraction is None and options.embed_documents is None:
        return list(range(n_items)), rng
    k = int(options.embed_fraction * n_items) if options.embed_fraction is not None else options.embed_documents
    return rng.sample(range(n_items), k=min(n_items, int(k or 0))), rng


def mteb2_draws(levels: np.ndarray, rng: random.Random, options: ClusteringOptions) -> list[tuple[int, list[int]]]:
    """(level, drawn rows of `levels`) of each mteb2 run, level by level: `rng.choices` over the rows that have
    the level, `draws` of them, as AbsTaskClustering's `_evaluate_clustering_bootstrapped`."""
    depth = levels.shape[1] if options.max_depth is None else min(options.max_depth, levels.shape[1])
    out = []
    for level in range(depth):
        valid = np.flatnonzero(levels[:, level] >= 0)
        for _ in range(options.n_runs):
            out.append((level, valid[rng.choices(range(len(valid)), k=options.draws)].tolist()))
    return out


def mteb2_runs(vectors: np.ndarray, levels: np.ndarray, rng: random.Random,
               options: ClusteringOptions) -> tuple[np.ndarray, np.ndarray]:
    """(documents, levels x runs) cluster_id and gold_class (one column when one level is scored) of the mteb2
    runs: one MiniBatchKMeans(k = the level's labels, k-means++, n_init=1, random_state=seed) per level, refitted
    on each run's draws. A document drawn m times is one row (equal vectors fall in one cluster): its cluster +
    DRAW_STRIDE x (m - 1), -1 when undrawn."""
    from sklearn.cluster import MiniBatchKMeans

    runs = mteb2_draws(levels, rng, options)
    clusters, gold = np.full((len(vectors), len(runs)), -1.0), np.full((len(vectors), len(runs)), -1.0)
    for column, (level, drawn) in enumerate(runs):
        k = len(np.unique(levels[levels[:, level] >= 0, level]))
        if k >= DRAW_STRIDE:
            raise DataError(f"k = {k} labels: mteb2's cluster ids hold at most {DRAW_STRIDE - 1}")
        model = MiniBatchKMeans(n_clusters=k, batch_size=options.kmeans_batch, init="k-means++", n_init=1,
                                random_state=options.seed)
        assigned = model.fit_predict(vectors[drawn])
        rows, first, times = np.unique(drawn, return_index=True, return_counts=True)
        cluster = assigned[first]
        if np.any(assigned != cluster[np.searchsorted(rows, drawn)]):
            raise ProtocolError("k-means put two draws of one document in different clusters")
        clusters[rows, column] = cluster + DRAW_STRIDE * (times - 1)
        gold[:, column] = levels[:, level]
    return clusters, gold if len({level for level, _ in runs}) > 1 else gold[:, 0]


def one_cluster_refused(outputs: Outputs) -> Outputs:
    """The outputs, unless every run whose documents hold several classes put them all in one cluster: a
    constant prediction (vectors all the same, say) would score 0 as if measured."""
    clusters, gold = outputs.arrays["cluster_id"], outputs.arrays["gold_class"]
    gold = np.broadcast_to(gold[:, None] if gold.ndim == 1 else gold, clusters.shape)
    one_cluster = [len(np.unique(clusters[member, run] % DRAW_STRIDE)) == 1
                   for run, member in enumerate((clusters >= 0).T) if len(np.unique(gold[member, run])) > 1]
    if one_cluster and all(one_cluster):
        raise DataError(f"every run puts all its documents in one cluster ({len(one_cluster)} runs of several "
                        "classes); a constant prediction measures nothing (are the vectors all the same?)")
    return outputs


class ClusteringProtocol(ProtocolKind[ClusteringOptions]):
    """Each item embedded on its own; k-means with k = the number of distinct gold labels. legacy: n_runs times
    over all evaluated items or (set_size) each run over its own subset; outputs per item its gold label (numbered
    in sorted order) and its cluster in each run (-1 where its run left it out). mteb2: outputs per embedded
    document its cluster (and draws) in each run of each level, and its gold label at that run's level."""

    info = KindInfo(
        item_fields={"text": "text", "label": "label_path"},
        outputs=("cluster_id", "gold_class"),
        unit="documents",
        prompt_task="Clustering",
        hub_task="text-classification",
        every_item_a_unit=False,
    )
    Options = ClusteringOptions

    def validate_items(self, items: Sequence[Item], options: ClusteringOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        levels, classes = level_numbers(items, origin, options.missing_level)
        check_levels(levels, classes, options, origin)
        if options.set_size is not None and options.set_size > len(items):
            raise DataError(f"set_size {options.set_size} is more than the {len(items)} documents")
        if options.sets is not None:
            set_members(items, options.sets)  # every item names its set
        if options.procedure == "legacy":
            for run, members in enumerate(run_sets(len(items), options)):
                if len(np.unique(levels[members, 0])) < 2:
                    raise DataError(f"run {run}'s {len(members)} documents hold a single label; raise set_size")
            return
        order = embedded(len(items), options)[0]
        if len(order) < 2:
            raise DataError(f"embed_fraction {options.embed_fraction} of {len(items)} documents embeds "
                            f"{len(order)}; k-means needs more")
        check_levels(*level_numbers([items[i] for i in order], origin, options.missing_level), options, origin,
                     which=f"the {len(order)} documents embedded: ")

    def texts(self, items: Sequence[Item], options: ClusteringOptions,
              support: Support = NO_SUPPORT) -> Iterable[FieldText]:
        if options.sets is not None:
            return [("text", items[i].fields["text"]) for i in clustered(items, options.sets)]
        if options.procedure == "legacy":
            return super().texts(items, options, support)
        return [("text", items[i].fields["text"]) for i in embedded(len(items), options)[0]]

    def run(self, items: Sequence[Item], ctx: RunContext, options: ClusteringOptions) -> Outputs:
        if options.procedure == "mteb2":
            return one_cluster_refused(self._mteb2(items, ctx, options))
        if options.sets is not None:
            return one_cluster_refused(self._sets(items, ctx, options))
        return one_cluster_refused(self._whole(items, ctx, options))

    def _whole(self, items: Sequence[Item], ctx: RunContext, options: ClusteringOptions) -> Outputs:
        levels = level_numbers(items, "the evaluated split")[0]
        vectors = check_vectors(ctx.embed([item.fields["text"] for item in items], "text"), "k-means cannot place it")
        gold = levels[:, 0]
        clusters = cluster_runs(vectors, gold, options)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"cluster_id": clusters, "gold_class": gold.astype(float)})

    def _sets(self, items: Sequence[Item], ctx: RunContext, options: ClusteringOptions) -> Outputs:
        gold = level_numbers(items, "the evaluated split")[0][:, 0]
        chosen = clustered(items, str(options.sets))
        embedded = np.full(len(items), -1)
        embedded[chosen] = np.arange(len(chosen))
        vectors = check_vectors(ctx.embed([items[i].fields["text"] for i in chosen], "text"), "k-means cannot place it")
        clusters = set_runs(vectors, gold, set_members(items, str(options.sets)), options, embedded)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"cluster_id": clusters, "gold_class": gold.astype(float)})

    def _mteb2(self, items: Sequence[Item], ctx: RunContext, options: ClusteringOptions) -> Outputs:
        order, rng = embedded(len(items), options)
        chosen = [items[i] for i in order]
        levels = level_numbers(chosen, "the documents embedded", options.missing_level)[0]
        vectors = check_vectors(ctx.embed([item.fields["text"] for item in chosen], "text"), "k-means cannot place it")
        clusters, gold = mteb2_runs(vectors, levels, rng, options)
        rows = np.argsort(order)  # the outputs in the split's order
        return Outputs(unit=self.info.unit, ids=[chosen[i].id for i in rows],
                       arrays={"cluster_id": clusters[rows], "gold_class": gold[rows]})

    def example(self) -> KindExample:
        docs = [("stocks rally as markets open", "business"), ("the central bank raised rates", "business"),
                ("shares of the bank fell", "business"), ("the striker scored twice", "sports"),
                ("the team won the final", "sports"), ("a late goal decided the match", "sports"),
                ("the new phone has a faster chip", "technology"), ("software update fixes a bug", "technology"),
                ("the laptop battery lasts longer", "technology")]
        return KindExample(items=[Item(id=f"d{i}", fields={"text": t, "label": c}) for i, (t, c) in enumerate(docs)],
                           options={"n_runs": 3, "batch_size": 4})


PROTOCOLS.register("clustering", ClusteringProtocol())
