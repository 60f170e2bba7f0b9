"""The Clustering part of `specrun import mteb`: MTEB 2.x's AbsTaskClustering (a random.Random(42) picks the
documents embedded, then n_clusters runs each draw max_documents_per_cluster documents with replacement and fit one
seeded mini-batch k-means) as a `clustering` spec with `procedure: mteb2`, its options MTEB's class attributes; a
v2 layout that stores a split as rows of lists is read with the split's `explode`. What the kind does not say is
refused by name: AbsTaskClusteringLegacy (V-measure per set, averaged over sets), label paths of several levels
(MTEB's code counts a missing text level as a class '-1'), several eval splits (MTEB's one Random runs on from
split to split), attributes of a task's own."""

from __future__ import annotations

from typing import Any

from specrun.mteb._import_clustering_steps import (
    attributes,
    missing_level,
    steps_reading,
    steps_refusal,
    transform_splits,
)
from specrun.mteb._type_import import TypeImport, attributes_refusal, card_frame, name_refusal, renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_clustering_legacy import with_legacy
from specrun.mteb.import_sts import hub_source
from specrun.mteb.import_subset import split_stats
from specrun.protocols.clustering import MTEB2_BATCH, MTEB_SEED

CLUSTERING_DESCRIPTION = (
    "Each text is embedded on its own with the model's own pooling. As MTEB 2.x's AbsTaskClustering: a "
    "random.Random(42) picks the documents embedded where the task limits them (embed_fraction, embed_documents), "
    "then each of n_runs runs draws `draws` documents with replacement from it and fits one mini-batch k-means "
    "(scikit-learn, k = the number of gold labels, one k-means++ start, random_state 42). V-measure compares each "
    "run's clusters with the gold labels, a document counted once per draw; the score is the mean over the runs, "
    "MTEB's main score.")
# MTEB score key -> (spec metric, label); ami is MTEB 2.x's companion (a main score of one task), not written beside
# v_measure: the import gives every metric of a type one range, and AMI's reaches below 0
CLUSTERING_METRICS = {"v_measure": ("v_measure", "V-measure"), "ami": ("ami", "Adjusted mutual information")}
PUBLISHED_CAVEAT = (
    "Most published clustering numbers were written by mteb 1.x, whose mini-batch k-means had no random_state: "
    "specrun equals mteb 2.x's evaluator on the same data and vectors, and differs from a 1.x number by k-means' "
    "run-to-run spread")
ABSTASK = "AbsTaskClustering"
# the abstask's own class attributes; another is the task's own Python
KNOWN_ATTRIBUTES = {"abstask_prompt", "input_column_name", "label_column_name", "k_mean_batch_size", "max_depth",
                    "max_document_to_embed", "max_documents_per_cluster", "max_fraction_of_documents_to_embed",
                    "n_clusters"}
LEGACY = ("abstask AbsTaskClusteringLegacy (V-measure of each row's set of documents, averaged over the sets; the "
          "clustering kind clusters a split as one set)")


def clustering_refusal(task: Task) -> str | None:
    """What MTEB's AbsTaskClustering does beyond the clustering kind's mteb2 procedure."""
    if reason := name_refusal(task):
        return reason
    if task.abstask == "AbsTaskClusteringLegacy":
        return LEGACY
    if task.abstask != ABSTASK:
        return f"abstask {task.abstask} (only {ABSTASK} and its legacy form are Clustering)"
    if reason := steps_refusal(task):
        return reason
    attrs = attributes(task)  # as MTEB evaluates: what the transform assigns holds
    if reason := attributes_refusal(attrs, KNOWN_ATTRIBUTES):
        return reason
    if not isinstance(attrs.get("input_column_name"), str) or not isinstance(attrs.get("label_column_name"), str):
        return "input or label column is not one column name"
    if attrs.get("max_document_to_embed") is not None and attrs.get("max_fraction_of_documents_to_embed") is not None:
        return "both max_document_to_embed and max_fraction_of_documents_to_embed set (MTEB raises)"
    if len(task.eval_splits) > 1 or len(task.hf_subsets) > 1:
        several = f"{len(task.eval_splits)} eval splits" if len(task.eval_splits) > 1 else \
            f"{len(task.hf_subsets)} hf_subsets"
        return (f"{several} (MTEB's task seeds one Random and draws every split and subset from it in turn; the "
                "mteb2 procedure starts each at the seed)")
    return _label_refusal(task)


def _label_refusal(task: Task) -> str | None:
    """Label paths of several levels scored beyond the first: MTEB's code gives an item without level i the label
    -1, which numpy turns into the text '-1' among text labels, so MTEB clusters it as a class where the kind (and
    MTEB's stated rule) leaves it out; the statistics cannot tell even paths or integer labels apart, so refused."""
    depth = attributes(task).get("max_depth")
    if missing_level(task):  # labels split from text: the kind's missing_level class scores them as MTEB's code
        return None
    for split in task.eval_splits:
        stats = split_stats(task, split)
        if stats is None:
            return f"no descriptive statistics of split {split!r} (flat labels or label paths cannot be told)"
        if label_total(stats) != stats.get("num_samples") and depth != 1:
            return ("label paths of several levels (MTEB's code clusters an item without a level as a class '-1' "
                    "where labels are text; the clustering kind leaves it out of that level)")
    return None


def label_total(stats: dict[str, Any]) -> int | None:
    """The labels MTEB's statistics count, every level of every path: the items where each has one label."""
    block = stats.get("labels_statistics") or stats.get("label_statistics") or {}
    labels = block.get("labels")
    if not isinstance(labels, dict):
        return None
    return sum(int(value.get("count", 0)) for value in labels.values() if isinstance(value, dict))


def clustering_columns(task: Task) -> dict[str, str]:
    """Item field -> column of the hub data, named as the data names them before a dataset_transform's renames."""
    renamed = renamed_back(task)
    text, label = task.attributes["input_column_name"], task.attributes["label_column_name"]
    return {"text": renamed.get(text, text), "label": renamed.get(label, label)}


def clustering_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    return hub_source(task, name, source, clustering_columns(task), transform_splits(task))


def explode_entry(task: Task) -> dict[str, Any]:
    """A v2 layout's rows of lists (MTEB's transform chains them: one document per element) as the split's
    `explode`, the columns named as the hub data names them."""
    columns = task.transform.explode if task.transform else []
    renamed = renamed_back(task)
    return {"explode": [renamed.get(column, column) for column in columns]} if columns else {}


def clustering_options(task: Task) -> dict[str, Any]:
    """The mteb2 procedure's options from MTEB's class attributes as it evaluates (and its task seed)."""
    attrs = attributes(task)
    options: dict[str, Any] = {"procedure": "mteb2", "n_runs": attrs["n_clusters"],
                               "draws": attrs["max_documents_per_cluster"], "seed": MTEB_SEED}
    if attrs.get("k_mean_batch_size", MTEB2_BATCH) != MTEB2_BATCH:
        options["batch_size"] = attrs["k_mean_batch_size"]
    if attrs.get("max_fraction_of_documents_to_embed") is not None:
        options["embed_fraction"] = attrs["max_fraction_of_documents_to_embed"]
    if attrs.get("max_document_to_embed") is not None:
        options["embed_documents"] = attrs["max_document_to_embed"]
    if attrs.get("max_depth") is not None:
        options["max_depth"] = attrs["max_depth"]
    if missing_level(task):
        options["missing_level"] = "class"
    return options


def clustering_protocol(task: Task) -> dict[str, Any]:
    return {"kind": "clustering", "label": "Mini-batch k-means (MTEB 2.x)", "capability": "embed.text.pooled",
            "description": CLUSTERING_DESCRIPTION, "options": clustering_options(task)}


def _embedded(task: Task, count: int | None) -> str:
    """The card's words for the documents embedded."""
    attrs = attributes(task)
    if attrs.get("max_document_to_embed") is not None:
        return f"{attrs['max_document_to_embed']:,} of them drawn (seed 42) are embedded"
    fraction = attrs.get("max_fraction_of_documents_to_embed")
    if fraction is not None:
        shown = f" ({int(fraction * count):,})" if count is not None else ""
        return f"a fraction {fraction:g} of them{shown} drawn (seed 42) is embedded"
    return "every one is embedded"


def clustering_card(task: Task, version: str) -> dict[str, Any]:
    (split,) = task.eval_splits
    count = (split_stats(task, split) or {}).get("num_samples")
    attrs = task.attributes
    frame = card_frame(task, version)
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision}, as MTEB {version} loads "
                f"it for task {task.name}.",
        "items": f"The documents of split {split} ({f'{count:,}' if isinstance(count, int) else 'count not stated'}"
                 f", MTEB's descriptive statistics); {_embedded(task, count if isinstance(count, int) else None)}; "
                 f"each of {attrs['n_clusters']} k-means runs draws {attrs['max_documents_per_cluster']:,} of those "
                 "with replacement.",
        "uncertainty": "95 % two-level bootstrap interval: 1,000 resamples of the embedded documents, each paired "
                       "with a resample of the k-means runs (the partitions are fixed; k-means is not rerun).",
        "caveats": f"{frame['caveats']} {PUBLISHED_CAVEAT}.",
        "examples": {"count": 3, "heading": "Three documents (input: a text; expected output: a cluster shared with "
                                            "the documents of its label):",
                     "columns": {"id": "item_id", "text": "text", "label": "label"}},
    }


CLUSTERING_IMPORT = with_legacy(TypeImport(  # an AbsTaskClusteringLegacy task: import_clustering_legacy
    type="Clustering", protocol="kmeans", metrics=CLUSTERING_METRICS, companions=("v_measure",),
    refusal=clustering_refusal, source=clustering_source, protocol_entry=clustering_protocol, card=clustering_card,
    metric_name=lambda score, metric: metric, expect_fields={"text": "text_statistics"}, label_field="label",
    row_steps=("explode", "sampling", "class_encode", "sets", "joined_splits", "solo_dropped", "split_text",
               "train_test_split"),  # each where import_clustering_steps says it (else refused by the refusal)
    split_reading=lambda task: {**explode_entry(task), **steps_reading(task)}, mteb_caveat=PUBLISHED_CAVEAT))

__all__ = ["CLUSTERING_DESCRIPTION", "CLUSTERING_IMPORT", "CLUSTERING_METRICS", "clustering_card",
           "clustering_options", "clustering_protocol", "clustering_refusal", "clustering_source", "explode_entry",
           "label_total"]
