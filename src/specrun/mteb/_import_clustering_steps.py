"""The dataset_transform steps of MTEB's clustering tasks that a spec says, for import_clustering: attributes the
transform assigns (they hold when MTEB evaluates: `self.max_fraction_of_documents_to_embed = None` embeds every
document), source splits joined into the eval split (`source_splits`), a label text split into a path
(`split_text`, with the kind's `missing_level: class`, as MTEB's code scores a missing text level), solo labels
dropped (`drop_rare`), stratified_subsampling (`sample`, written by import_sampling) and a plain train_test_split
(`sample: {method: train_test_split}`). The steps run in MTEB's order: rows joined or exploded, labels split, solo
labels dropped, then the draw; a transform that combines them otherwise is refused."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_sampling import MTEB_SEED, unsaid_steps

__all__ = ["SETTABLE", "attributes", "missing_level", "steps_reading", "steps_refusal", "transform_splits"]

# the abstask attributes whose value at evaluation the mteb2 options take: a transform may set these
SETTABLE = {"max_fraction_of_documents_to_embed", "max_document_to_embed", "max_depth", "n_clusters",
            "max_documents_per_cluster", "k_mean_batch_size"}


def attributes(task: Task) -> dict[str, Any]:
    """The class attributes as MTEB evaluates with them: the class's, then what dataset_transform assigns."""
    return {**task.attributes, **(task.transform.sets if task.transform else {})}


def _label(task: Task) -> str:
    return str(task.attributes.get("label_column_name"))


def steps_refusal(task: Task) -> str | None:
    """What of the transform's steps a spec cannot say for this task, or None."""
    found = task.transform
    if found is None:
        return None
    other = sorted(set(found.sets) - SETTABLE)
    if other:
        return f"dataset_transform sets attribute(s) {', '.join(other)} (not an option of the clustering kind)"
    label = _label(task)
    for what, columns in (("drops solo labels of", found.solo_dropped), ("splits the text of", found.split_text),
                          ("class-encodes", found.class_encode)):
        if set(columns) - {label}:
            return f"dataset_transform {what} column(s) other than the label ({', '.join(sorted(columns))})"
    sampling = [step for step in unsaid_steps(task) if step.startswith("sampling")]
    if sampling:
        return f"dataset_transform {sampling[0]}"
    if found.sampling and (found.split_text or found.class_encode or found.train_test_split):
        return "stratified_subsampling beside label paths, class encoding or a train_test_split (MTEB's order)"
    for call in found.train_test_split:
        if call.get("split") not in task.eval_splits or not isinstance(call.get("test_size"), int) \
                or call.get("seed") not in ({"expr": "self.seed"}, MTEB_SEED):
            return f"train_test_split of a computed size or seed, or of a split not evaluated ({call})"
    if len(found.train_test_split) > 1:
        return "train_test_split twice"
    return None


def missing_level(task: Task) -> bool:
    """MTEB's code scores a missing level of text labels as a class '-1': the split labels are text."""
    return bool(task.transform and task.transform.split_text) and attributes(task).get("max_depth") != 1


def transform_splits(task: Task) -> list[str] | None:
    """The source splits MTEB joins into the eval split, in order (None: it reads the eval split)."""
    return list(task.transform.joined_splits) if task.transform and task.transform.joined_splits else None


def steps_reading(task: Task) -> dict[str, Any]:
    """The split's keys for these steps (after `explode`), columns named as the hub data names them."""
    found = task.transform
    if found is None:
        return {}
    back = renamed_back(task)
    out: dict[str, Any] = {}
    if found.joined_splits:
        out.update({"source_split": None, "source_splits": list(found.joined_splits)})
    if found.split_text:
        out["split_text"] = {back.get(column, column): {key: value for key, value in how.items() if value is not None}
                             for column, how in found.split_text.items()}
    if found.solo_dropped:
        out["drop_rare"] = {"column": back.get(_label(task), _label(task)), "min_count": 2}
    for call in found.train_test_split:
        out["sample"] = {"n": call["test_size"], "seed": MTEB_SEED, "method": "train_test_split"}
    return out
