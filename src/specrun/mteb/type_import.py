"""What one MTEB task type contributes to `specrun import mteb`: the kind and protocol it becomes, how its MTEB
scores map onto spec metrics, what of its abstask the kind cannot say (refusal), and the source, protocol and card
its tasks get. One object per type, registered in `importer.TYPES`: a new type is one module and one line there;
the importer itself knows no type's details."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specrun.mteb.catalogue import Task


def _no_splits(task: Task, name: str) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class TypeImport:
    type: str  # MTEB's task type
    protocol: str  # the spec's protocol name
    metrics: dict[str, tuple[str, str]]  # MTEB score key -> (spec metric, label)
    companions: tuple[str, ...]  # the scores written beside the main one, in order
    refusal: Callable[[Task], str | None]  # what of the abstask the kind cannot say (None: nothing)
    source: Callable[[Task, str, dict[str, Any]], dict[str, Any]]  # the hf_dataset source, from its base
    protocol_entry: Callable[[Task], dict[str, Any]]
    card: Callable[[Task, str], dict[str, Any]]  # (task, mteb version) -> the card's prose and examples
    metric_name: Callable[[str, str], str] = field(default=lambda score, metric: score)  # (MTEB key, metric)
    score_range: tuple[float, float] = (0.0, 1.0)
    extra_splits: Callable[[Task, str], dict[str, Any]] = _no_splits  # splits read, not scored (a fit split)
    split_reading: Callable[[Task], dict[str, Any]] = field(default=lambda task: {})  # each eval split's extra keys
    expect_fields: dict[str, str] | None = None  # item field -> MTEB's statistics key, for `expect`
    label_field: str | None = None  # the item field whose counts MTEB's label statistics give
    row_steps: tuple[str, ...] = ()  # dataset_transform steps (importer.ROW_CHANGING_STEPS) the type's spec says
    mteb_caveat: str | None = None  # why a published number may differ from ours (every `mteb:` mapping's caveat)
    interval: Callable[[Task], str | None] = field(default=lambda task: None)  # each metric's `interval`, where
    # the task's own needs one other than `auto` (None: uncertainty.interval's auto)
    # an overridden method that only adds scores beside MTEB's usual ones: method -> the names it may call
    extra_scores: dict[str, frozenset[str]] = field(default_factory=dict)


def card_frame(task: Task, version: str) -> dict[str, str]:
    """The card's lines every imported task shares: what is measured (MTEB's description) and the caveat."""
    superseded = f" MTEB marks this task superseded by {task.superseded_by}." if task.superseded_by else ""
    return {"what_is_measured": f"{task.description.strip() or task.name} (MTEB's {task.type} task {task.name}.)",
            "caveats": f"Written by `specrun import mteb` from MTEB {version}'s task metadata, not reviewed by "
                       f"hand: check the description and licence before publishing.{superseded}"}


def renamed_back(task: Task) -> dict[str, str]:
    """A column's name after the task's dataset_transform -> its name in the hub data."""
    return {new: old for old, new in (task.transform.renames if task.transform else {}).items()}


__all__ = ["TypeImport", "card_frame", "renamed_back"]
