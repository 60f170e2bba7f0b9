"""A dataset_transform's row-changing steps that a spec can say, for `specrun import mteb`: MTEB's
`stratified_subsampling` as a split's `sample:` (the engine draws with datasets' own train_test_split, so the rows
are MTEB's), and `class_encode_column` of the label column of a Classification task, which changes no score (the
labels keep their order as text and their sets are the same in every split read, as MTEB's statistics show; a
label missing from one split would shift that split's ids, which is refused). Other steps stay refused."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_subset import split_stats

__all__ = ["SAMPLED_TYPES", "sampled_splits", "unsaid_steps"]

MTEB_SEED = 42  # AbsTask's seed, `self.seed`
DEFAULT_N, DEFAULT_SPLITS, DEFAULT_LABEL = 2048, ["test"], "label"  # stratified_subsampling's defaults
SAMPLED_TYPES = ("Classification", "Clustering")  # the kinds whose label column the draw stratifies by, one a row
ROW_CHANGING_STEPS = ("sampling", "class_encode", "explode")


def _resolved(task: Task, value: Any, default: Any) -> Any:
    """A recorded argument as a value: the defaults, and the attributes MTEB's tasks pass (`self.seed`,
    `self.metadata.eval_splits`, `self.label_column_name`); another expression is None (not said)."""
    if value is None:
        return default
    if not isinstance(value, dict):
        return value
    known = {"self.seed": MTEB_SEED, "self.metadata.eval_splits": list(task.eval_splits),
             "self.label_column_name": task.attributes.get("label_column_name")}
    return known.get(value.get("expr"))


def _calls(task: Task) -> list[dict[str, Any]] | str:
    """Each stratified_subsampling call as {splits, n, label, seed}, or why one cannot be said."""
    calls = []
    for call in task.transform.sampling if task.transform else []:
        found = {"splits": _resolved(task, call.get("splits"), DEFAULT_SPLITS),
                 "n": _resolved(task, call.get("n_samples"), DEFAULT_N),
                 "label": _resolved(task, call.get("label"), DEFAULT_LABEL),
                 "seed": _resolved(task, call.get("seed"), None)}
        unsaid = [key for key, value in found.items() if value is None]
        if unsaid:
            return f"stratified_subsampling with a computed {unsaid[0]}"
        calls.append(found)
    sampled = [split for call in calls for split in call["splits"]]
    if len(sampled) != len(set(sampled)):
        return "stratified_subsampling twice on one split"
    return calls


def _read_splits(task: Task) -> list[str]:
    fit = task.attributes.get("train_split") or task.fit_split
    return list(dict.fromkeys([*task.eval_splits, *([fit] if isinstance(fit, str) else [])]))


def _class_encode_refusal(task: Task) -> str | None:
    """class_encode_column changes no score where it encodes the label with the same labels in every split."""
    label = task.attributes.get("label_column_name")
    renamed = renamed_back(task)
    columns = set(task.transform.class_encode if task.transform else [])
    if task.type not in SAMPLED_TYPES or not isinstance(label, str) or columns - {label, renamed.get(label, label)}:
        return "class_encode of a column other than a Classification task's label"
    counts = [((split_stats(task, split) or {}).get("label_statistics") or {}).get("labels")
              for split in _read_splits(task)]
    if any(not isinstance(labels, dict) for labels in counts) or len({frozenset(labels) for labels in counts}) > 1:
        return "class_encode where MTEB's statistics do not show the same labels in every split"
    return None


def unsaid_steps(task: Task) -> list[str]:
    """The dataset_transform's row-changing steps a spec cannot say for this task (each with why, where known)."""
    transform = task.transform
    if transform is None:
        return []
    steps = [step for step in ROW_CHANGING_STEPS if getattr(transform, step)]
    said = []
    if "sampling" in steps and task.type in SAMPLED_TYPES and not isinstance(_calls(task), str):
        said.append("sampling")
    if "class_encode" in steps and _class_encode_refusal(task) is None:
        said.append("class_encode")
    return [_why(task, step) for step in steps if step not in said]


def _why(task: Task, step: str) -> str:
    if step == "sampling" and task.type in SAMPLED_TYPES:
        return f"sampling ({_calls(task)})"
    if step == "class_encode" and (reason := _class_encode_refusal(task)):
        return f"class_encode ({reason.removeprefix('class_encode ')})"
    return step


def sampled_splits(task: Task, splits: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The spec's `splits:` with `sample:` on each that reads a source split MTEB subsamples (before `expect`,
    whose statistics MTEB took after its transform)."""
    calls = _calls(task) if task.type in SAMPLED_TYPES else []
    if isinstance(calls, str) or not calls:
        return splits
    drawn = {split: call for call in calls for split in call["splits"]}
    stratify = {call["label"]: renamed_back(task).get(call["label"], call["label"]) for call in calls}
    found = {}
    for name, entry in splits.items():
        call = drawn.get(entry.get("source_split"))
        if call is None:
            found[name] = entry
            continue
        sample = {"n": call["n"], "stratify": stratify[call["label"]], "seed": call["seed"],
                  "method": "mteb_stratified"}
        before = {key: value for key, value in entry.items() if key not in ("expect", "evaluate")}
        found[name] = {**before, "sample": sample, **{key: value for key, value in entry.items() if key not in before}}
    return found
