"""One subset of a multilingual MTEB task as a spec of its own: what a named benchmark takes of a task (MTEB(eng,
v2) takes STS17's and STS22's en-en only). MTEB loads such a subset as the hub config of that name, or, for a
fast-loading task, from the default config's rows whose `lang` is the subset (AbsTask.load_data / fast_load);
its descriptive statistics are the subset's own (`hf_subset_descriptive_stats`)."""

from __future__ import annotations

from typing import Any

from specrun.mteb.catalogue import Task


def one_subset(task: Task) -> str | None:
    """The subset, when the task is multilingual and (restricted to) one subset; None otherwise."""
    return task.hf_subsets[0] if task.is_multilingual and len(task.hf_subsets) == 1 else None


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


__all__ = ["one_subset", "split_stats", "subset_reading"]
