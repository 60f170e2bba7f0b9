"""The legacy part of the Clustering import: MTEB's AbsTaskClusteringLegacy, whose split holds one set of documents
per row (a list of texts beside a list of labels). MTEB clusters each set on its own (ClusteringEvaluator:
MiniBatchKMeans with k = the set's labels, batch 500, n_init 'auto', random_state 42; a set of one label scores 1
unclustered) and reports the mean of the sets' V-measures. Written as a `clustering` spec with `procedure: legacy`
and `sets`: the split's `explode` makes a row's lists its documents and `explode_row` numbers the row, the set. No
Random runs on from split to split or subset to subset (each evaluator is seeded afresh), so several splits and
subsets import as they are. `with_legacy` wraps the AbsTaskClustering import so that one Clustering type serves
both abstasks."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specrun.mteb._type_import import TypeImport, abstask_refusal, card_frame
from specrun.mteb.catalogue import Task
from specrun.mteb.import_sts import hub_source
from specrun.mteb.import_subset import split_stats

LEGACY_ABSTASK = "AbsTaskClusteringLegacy"
SET_FIELD, ROW_COLUMN = "set", "mteb_set"  # the item field naming a document's set; the column explode_row adds
MTEB_LEGACY_SEED = 42  # the evaluator's seed: every set's random_state
LEGACY_INTERVAL = "centred_t_runs"  # the sets are the units of the mean: never narrower than the t interval over them
# the abstask's own class attributes (fast_loading is read by import_subset); another is the task's own Python
KNOWN_ATTRIBUTES = {"abstask_prompt", "evaluator", "input_column_name", "label_column_name", "fast_loading"}
EVALUATOR = "mteb._evaluators.clustering_evaluator.ClusteringEvaluator"
LEGACY_DESCRIPTION = (
    "Each row of the split is one set of documents; each text is embedded on its own with the model's own "
    "pooling. As MTEB's AbsTaskClusteringLegacy: every set is clustered on its own by one mini-batch k-means "
    "(scikit-learn, k = the number of gold labels in the set, batch 500, n_init 'auto', random_state 42); a set "
    "of one label is not clustered and scores 1. V-measure compares each set's clusters with its gold labels; "
    "the score is the mean over the sets, MTEB's main score.")


def legacy_refusal(task: Task) -> str | None:
    """What MTEB's AbsTaskClusteringLegacy does beyond the clustering kind's `sets`."""
    attrs = task.attributes
    if reason := abstask_refusal(task, KNOWN_ATTRIBUTES):  # the abstask: import_clustering's dispatch
        return reason
    if attrs.get("evaluator", EVALUATOR) != EVALUATOR:
        return f"evaluator {attrs['evaluator']} (the task's own, not MTEB's ClusteringEvaluator)"
    text, label = attrs.get("input_column_name"), attrs.get("label_column_name")
    if not isinstance(text, str) or not isinstance(label, str) or text == label:
        return "input or label column is not one column name of its own"
    if ROW_COLUMN in (text, label):
        return f"a data column named {ROW_COLUMN!r} (the column the import adds for the set)"
    return None


def legacy_columns(task: Task) -> dict[str, str]:
    """Item field -> column: the row's lists (MTEB's input and label columns) and the set number explode_row adds."""
    attrs = task.attributes
    return {"text": attrs["input_column_name"], "label": attrs["label_column_name"], SET_FIELD: ROW_COLUMN}


def legacy_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    return hub_source(task, name, source, legacy_columns(task))


def legacy_split_reading(task: Task) -> dict[str, Any]:
    """A row's lists become its documents, each carrying the row's number (its set)."""
    columns = legacy_columns(task)
    return {"explode": [columns["text"], columns["label"]], "explode_row": ROW_COLUMN}


def legacy_protocol(task: Task) -> dict[str, Any]:
    return {"kind": "clustering", "label": "Mini-batch k-means per set (MTEB legacy)",
            "capability": "embed.text.pooled", "description": LEGACY_DESCRIPTION,
            "options": {"procedure": "legacy", "sets": SET_FIELD, "n_runs": 1, "seed": MTEB_LEGACY_SEED}}


def legacy_card(task: Task, version: str, caveat: str) -> dict[str, Any]:
    frame = card_frame(task, version)
    counts = [(split, (split_stats(task, split) or {}).get("num_samples")) for split in task.eval_splits]
    shown = "; ".join(f"{split}: {f'{count:,}' if isinstance(count, int) else 'count not stated'}"
                      for split, count in counts)
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision}, as MTEB {version} loads "
                f"it for task {task.name}.",
        "items": f"The documents of every set (one set per row of the data; documents, MTEB's descriptive "
                 f"statistics: {shown}); every one is embedded, except those of a set of one label.",
        "uncertainty": "95 % two-level bootstrap interval: 1,000 resamples of the documents, each paired with a "
                       "resample of the sets drawn with replacement (the partitions are fixed; k-means is not "
                       "rerun; a set a resample leaves one label scores 1, as MTEB scores it), read centred and "
                       "never narrower than the Student-t interval over the sets' values (centred_t_runs). Read "
                       "centred alone it covered 0.82-0.84 at 5 sets that differ in difficulty, 0.89 at 10 and "
                       "0.915-0.925 at 30; so widened, 0.93, 0.955 and 0.94 (bench/coverage_sets.py). A split of "
                       "few sets (MTEB's hold 5 to 30) gives a wide interval.",
        "caveats": f"{frame['caveats']} {caveat}.",
        "examples": {"count": 3, "heading": "Three documents (input: a text; expected output: a cluster shared with "
                                            "the documents of its label in its set):",
                     "columns": {"id": "item_id", "text": "text", "label": "label", SET_FIELD: "set"}},
    }


def with_legacy(modern: TypeImport) -> TypeImport:
    """The Clustering import for both abstasks: a legacy task gets this module's parts, any other `modern`'s."""
    def legacy(task: Task) -> bool:
        return task.abstask == LEGACY_ABSTASK

    caveat = modern.mteb_caveat or ""
    return replace(
        modern,
        refusal=lambda task: legacy_refusal(task) if legacy(task) else modern.refusal(task),
        source=lambda task, name, base: (legacy_source if legacy(task) else modern.source)(task, name, base),
        protocol_entry=lambda task: legacy_protocol(task) if legacy(task) else modern.protocol_entry(task),
        card=lambda task, version: legacy_card(task, version, caveat) if legacy(task) else modern.card(task, version),
        split_reading=lambda task: legacy_split_reading(task) if legacy(task) else modern.split_reading(task),
        interval=lambda task: LEGACY_INTERVAL if legacy(task) else modern.interval(task))


__all__ = ["LEGACY_ABSTASK", "LEGACY_DESCRIPTION", "legacy_card", "legacy_protocol", "legacy_refusal",
           "legacy_source", "legacy_split_reading", "with_legacy"]
