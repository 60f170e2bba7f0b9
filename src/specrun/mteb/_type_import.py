"""What one MTEB task type contributes to `specrun import mteb`: the kind and protocol it becomes, how its MTEB
scores map onto spec metrics, what of its abstask the kind cannot say (refusal), and the source, protocol and card
its tasks get. One object per type, registered in `importer.TYPES`: a new type is one module and one line there;
the importer itself knows no type's details."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specrun.mteb.catalogue import Task
from specrun.mteb.score_ref import MAX_NAME


def _no_splits(task: Task, name: str) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class TypeImport:
    type: str  # MTEB's task type
    protocol: str  # the spec's protocol name
    metrics: dict[str, tuple[str, str]]  # MTEB score key -> (spec metric, label)
    companions: tuple[str, ...]  # the scores written beside the main one, in order
    # (or per task: `companions_of`, where a task's main score is of another family than the type's usual)
    refusal: Callable[[Task], str | None]  # what of the abstask the kind cannot say (None: nothing)
    source: Callable[[Task, str, dict[str, Any]], dict[str, Any]]  # the hf_dataset source, from its base
    protocol_entry: Callable[[Task], dict[str, Any]]
    card: Callable[[Task, str], dict[str, Any]]  # (task, mteb version) -> the card's prose and examples
    metric_name: Callable[[str, str], str] = field(default=lambda score, metric: score)  # (MTEB key, metric)
    score_range: tuple[float, float] = (0.0, 1.0)
    score_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)  # MTEB score key -> its own range,
    # where it is not score_range (p-MRR's -1..1 beside trec measures' 0..1)
    extra_splits: Callable[[Task, str], dict[str, Any]] = _no_splits  # splits read, not scored (a fit split)
    split_reading: Callable[[Task], dict[str, Any]] = field(default=lambda task: {})  # each eval split's extra keys
    expect_fields: dict[str, str] | None = None  # item field -> MTEB's statistics key, for `expect`
    label_field: str | None = None  # the item field whose counts MTEB's label statistics give
    row_steps: tuple[str, ...] = ()  # dataset_transform steps (importer.ROW_CHANGING_STEPS) the type's spec says
    mteb_caveat: str | None = None  # why a published number may differ from ours (every `mteb:` mapping's caveat)
    interval: Callable[[Task], str | None] = field(default=lambda task: None)  # each metric's `interval`, where
    # the task's own needs one other than `auto` (None: uncertainty.interval's auto)
    # an overridden method that only adds scores beside MTEB's usual ones (or, load_data, only calls a loader the
    # type reads as options): method -> the names it may call
    extra_scores: dict[str, frozenset[str]] = field(default_factory=dict)
    companions_of: Callable[[Task], tuple[str, ...]] | None = None  # a task's own companions (None: companions)


def card_frame(task: Task, version: str) -> dict[str, str]:
    """The card's lines every imported task shares: what is measured (MTEB's description) and the caveat."""
    superseded = f" MTEB marks this task superseded by {task.superseded_by}." if task.superseded_by else ""
    return {"what_is_measured": f"{task.description.strip() or task.name} (MTEB's {task.type} task {task.name}.)",
            "caveats": f"Written by `specrun import mteb` from MTEB {version}'s task metadata, not reviewed by "
                       f"hand: check the description and licence before publishing.{superseded}"}


def renamed_back(task: Task) -> dict[str, str]:
    """A column's name after the task's dataset_transform -> its name in the hub data."""
    return {new: old for old, new in (task.transform.renames if task.transform else {}).items()}


def name_refusal(task: Task) -> str | None:
    """A task name longer than an `mteb:` mapping holds (the name is a file name in MTEB's results)."""
    if len(task.name) > MAX_NAME:
        return f"task name longer than {MAX_NAME} characters ({len(task.name)}; an `mteb:` mapping's limit)"
    return None


def attributes_refusal(attributes: dict[str, Any], known: set[str]) -> str | None:
    """A class attribute the abstask does not define: the task's own, which a spec cannot say."""
    other = sorted(set(attributes) - known)
    return f"class attribute(s) {', '.join(other)} (the task's own, not the abstask's)" if other else None


def abstask_refusal(task: Task, known: set[str], abstask: str | None = None) -> str | None:
    """The head every type's refusal shares: the name, the abstask the type imports (None: the caller has
    chosen it), and no class attribute of the task's own."""
    if reason := name_refusal(task):
        return reason
    if abstask is not None and task.abstask != abstask:
        return f"abstask {task.abstask} (only {abstask} is imported as {task.type})"
    return attributes_refusal(task.attributes, known)


def estimator_refusal(attributes: dict[str, Any], expected: str, defaults: dict[str, Any], *, own: str | None,
                      noun: str, only: str, kind: str) -> str | None:
    """MTEB's evaluator_model as a probe kind fits it: no cross-validation, the class expected, and its default
    settings but for the one the kind takes as an option (`own`)."""
    if attributes.get("is_cross_validation"):
        return f"cross-validation (is_cross_validation: folds of one split are not in {kind})"
    model = attributes.get("evaluator_model") or {}
    if model.get("class") != expected:
        return f"{noun} {str(model.get('class')).rsplit('.', 1)[-1]} (only MTEB's {only})"
    params = {key: value for key, value in (model.get("params") or {}).items() if key != own}
    changed = sorted(key for key in set(params) | set(defaults) if params.get(key) != defaults.get(key))
    return f"non-default {noun} settings ({', '.join(changed)})" if changed else None


__all__ = ["TypeImport", "abstask_refusal", "attributes_refusal", "card_frame", "estimator_refusal", "name_refusal",
           "renamed_back"]
