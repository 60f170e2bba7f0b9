"""The PairClassification part of `specrun import mteb`: MTEB's AbsTaskPairClassification (two text columns and a
0/1 label; per pair the cosine, dot product and euclidean and manhattan distances of the two embeddings; AP and
the best accuracy and F1 over thresholds chosen on the evaluated split itself, and their maxima over the functions)
as a `pair_classification` spec, which computes exactly those. MTEB's v1 datasets store a split as one row of
lists, which its `_evaluate_subset` unwraps; every split is read with `explode` on the three columns, which leaves
a split of one pair per row as it is."""

from __future__ import annotations

from typing import Any

from specrun.core.types import SIMILARITIES
from specrun.mteb._type_import import TypeImport, abstask_refusal, card_frame, renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_sts import counts, hub_source
from specrun.mteb.import_subset import split_stats

PAIR_DESCRIPTION = (
    "Each text of a pair is embedded on its own with the model's own pooling. Per pair: the cosine and dot product "
    "of the two vectors and their negated euclidean and manhattan distances. AP needs no threshold; accuracy and "
    "F1 are taken at the threshold that is best on the evaluated pairs themselves, as MTEB's "
    "AbsTaskPairClassification chooses it; max_* is the best of the four functions.")
FUNCTIONS = SIMILARITIES  # MTEB's names too, the kind's score columns
_SUFFIX = {function: "" if function == "cosine" else f"_{function}" for function in FUNCTIONS}
# MTEB score key -> (spec metric, label); MTEB's precision, recall and `similarity_*` (the model's own function,
# one of the four) are not metrics of the kind
PAIR_METRICS: dict[str, tuple[str, str]] = {
    "max_ap": ("pair_max_ap", "AP, best of four similarity functions (MTEB's max_ap)"),
    "max_accuracy": ("pair_max_accuracy", "Accuracy at the best threshold, best of four functions (MTEB's "
                                          "max_accuracy)"),
    "max_f1": ("pair_max_f1", "F1 at the best threshold, best of four functions (MTEB's max_f1)"),
    **{f"{function}_{score}": (f"{metric}{_SUFFIX[function]}", f"{label} ({function})")
       for function in FUNCTIONS
       for score, metric, label in (("ap", "pair_ap", "AP"),
                                    ("accuracy", "pair_best_accuracy", "Accuracy at the best threshold"),
                                    ("f1", "pair_best_f1", "F1 at the best threshold"))}}
KNOWN_ATTRIBUTES = {"abstask_prompt", "input1_column_name", "input2_column_name", "input1_prompt_type",
                    "input2_prompt_type", "label_column_name"}
ROLES = {None: "symmetric", "query": "query", "document": "document"}  # MTEB's prompt type -> the text's role


def pair_refusal(task: Task) -> str | None:
    """What of MTEB's AbsTaskPairClassification the pair_classification kind cannot say."""
    attrs = task.attributes
    if reason := abstask_refusal(task, KNOWN_ATTRIBUTES, "AbsTaskPairClassification"):
        return reason
    columns = [attrs.get(key) for key in ("input1_column_name", "input2_column_name", "label_column_name")]
    if not all(isinstance(column, str) for column in columns):
        return f"input or label columns {columns!r} are not one column name each"
    types = [attrs.get(key) for key in ("input1_prompt_type", "input2_prompt_type")]
    if any(kind not in ROLES for kind in types):
        return f"prompt types {types!r} (a text's role is query, document or neither)"
    for split in task.eval_splits:
        labels = ((split_stats(task, split) or {}).get("labels_statistics") or {}).get("labels")
        if isinstance(labels, dict) and labels and not set(labels) <= {"0", "1"}:
            return f"labels {', '.join(sorted(labels))} in split {split!r} (the kind's labels are 0 and 1)"
    return None


def pair_columns(task: Task) -> dict[str, str]:
    """Item field -> column of the hub data, named as the data names them before a dataset_transform's renames."""
    renamed, attrs = renamed_back(task), task.attributes
    return {field: renamed.get(attrs[key], attrs[key]) for field, key in (
        ("text1", "input1_column_name"), ("text2", "input2_column_name"), ("label", "label_column_name"))}


def pair_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    return hub_source(task, name, source, pair_columns(task))


def pair_split_reading(task: Task) -> dict[str, Any]:
    """What each eval split adds: `explode` on the three columns, MTEB's unwrapping of a v1 one-row split."""
    return {"explode": list(pair_columns(task).values())}


def pair_protocol(task: Task) -> dict[str, Any]:
    """The kind with MTEB's choice of thresholds (on the evaluated split); the texts' roles where MTEB gives a
    prompt type."""
    entry: dict[str, Any] = {"kind": "pair_classification", "label": "Similarity thresholding",
                             "capability": "embed.text.pooled", "similarity": "cosine",
                             "description": PAIR_DESCRIPTION}
    types = {"text1": task.attributes.get("input1_prompt_type"), "text2": task.attributes.get("input2_prompt_type")}
    if any(kind is not None for kind in types.values()):
        entry["roles"] = {field: ROLES[kind] for field, kind in types.items()}
    return entry


def pair_card(task: Task, version: str) -> dict[str, Any]:
    found = counts(task)
    splits = ", ".join(f"{split} ({found[split]:,} pairs)" if split in found else split
                       for split in task.eval_splits)
    frame = card_frame(task, version)
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision}, as MTEB {version} loads "
                f"it for task {task.name} (a split stored as one row of lists is read as one pair per element).",
        "items": f"Every pair of the evaluated split(s): {splits}, the counts MTEB's descriptive statistics state.",
        "uncertainty": "95 % bootstrap interval over the pairs, 1,000 resamples; a threshold or function chosen on "
                       "the pairs is chosen again on every resample.",
        "caveats": frame["caveats"] + " Accuracy and F1 use thresholds chosen on the evaluated pairs themselves, "
                                      "as MTEB does, which flatters every model.",
        "examples": {"count": 3, "heading": "Three pairs (input: two texts; expected output: a similarity above "
                                            "the threshold exactly when the label is 1):",
                     "columns": {"id": "item_id", "text1": "text 1", "text2": "text 2", "label": "label"}},
    }


PAIR_CLASSIFICATION_IMPORT = TypeImport(
    type="PairClassification", protocol="pairs", metrics=PAIR_METRICS,
    companions=("max_ap", "max_accuracy", "max_f1", "cosine_ap"), refusal=pair_refusal, source=pair_source,
    protocol_entry=pair_protocol, card=pair_card, split_reading=pair_split_reading,
    expect_fields={"text1": "text1_statistics", "text2": "text2_statistics"}, label_field="label")

__all__ = ["PAIR_CLASSIFICATION_IMPORT", "PAIR_METRICS", "pair_columns", "pair_refusal"]
