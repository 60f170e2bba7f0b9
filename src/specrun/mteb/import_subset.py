"""MTEB's hf_subsets in an imported spec. One subset of a multilingual task is a spec of its own (what a named
benchmark takes of a task: MTEB(eng, v2) takes STS17's and STS22's en-en only); a task of several subsets is one
spec with `subsets:`, each subset's overlay the difference between its own one-subset spec and the first's, so
that a run of every subset and their mean is MTEB's task score. MTEB loads a subset as the hub config of that
name, or, for a fast-loading task, from the default config's rows whose `lang` is the subset (AbsTask.load_data /
fast_load); its descriptive statistics are the subset's own (`hf_subset_descriptive_stats`)."""

from __future__ import annotations

from typing import Any

from specrun.mteb.catalogue import Task

MAX_SUBSETS = 600  # more hf_subsets than this (Flores' 41,412 pairs) make a spec too large to read and check quickly
NOT_OVERLAID = ("id", "title")  # a subset's id and title are the spec's, with the subset's name


def one_subset(task: Task) -> str | None:
    """The subset, when the task is multilingual and (restricted to) one subset; None otherwise."""
    return task.hf_subsets[0] if task.is_multilingual and len(task.hf_subsets) == 1 else None


def restricted(task: Task, subset: str) -> Task:
    """The task as one of its subsets: what that subset's spec is built from."""
    return task.model_copy(update={"hf_subsets": [subset]})


def split_stats(task: Task, split: str) -> dict[str, Any] | None:
    """MTEB's descriptive statistics of a split: the subset's own for a one-subset multilingual task."""
    stats = (task.stats or {}).get(split)
    subset = one_subset(task)
    if subset is not None and isinstance(stats, dict):
        stats = (stats.get("hf_subset_descriptive_stats") or {}).get(subset)
    return stats if isinstance(stats, dict) else None


def subset_reading(task: Task) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the source and each split add to read the subset: (`config`, nothing) or, fast-loading,
    (nothing, `where: {lang: subset}`)."""
    subset = one_subset(task)
    if subset is None:
        return {}, {}
    if task.attributes.get("fast_loading"):
        return {}, {"where": {"lang": subset}}
    return {"config": subset}, {}


def overlay(base: dict[str, Any], other: dict[str, Any], flat: type) -> dict[str, Any]:
    """What merged onto `base` (mappings by key, null removes) gives `other`: its keys that differ, mappings
    recursively; a mapping of type `flat` (an `mteb:` counterpart) and any list are given whole where they differ."""
    found: dict[str, Any] = {}
    for key in [*other, *(key for key in base if key not in other)]:
        if key not in other:
            found[key] = None
        elif key not in base or base[key] != other[key]:
            mine, theirs = base.get(key), other[key]
            nested = isinstance(mine, dict) and isinstance(theirs, dict) and not isinstance(theirs, flat)
            found[key] = overlay(mine, theirs, flat) if nested else theirs  # type: ignore[arg-type]
    return found


def subset_spec(task: Task, parts: dict[str, dict[str, Any]], flat: type) -> dict[str, Any]:
    """The spec of a task of several subsets from each subset's own spec (`parts`, in MTEB's order): the first
    subset's as the base, titled as the task, and every subset's overlay under `subsets:`."""
    def own(part: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in part.items() if key not in NOT_OVERLAID}

    first = next(iter(parts.values()))
    return {**first, "title": f"{task.name} (MTEB {task.type}, {len(parts)} subsets)",
            "subsets": {name: overlay(own(first), own(part), flat) for name, part in parts.items()}}


__all__ = ["MAX_SUBSETS", "one_subset", "overlay", "restricted", "split_stats", "subset_reading", "subset_spec"]
