"""MTEB's result files of mteb before 1.11, converted to the later layout the way mteb's own loader does it, so a
results repository is read as it is: 128 files of the slice (mteb 0.x, 1.0-1.2, and external ones with no version)
keep no `scores` key but one top-level mapping per split, named by `mteb_dataset_name`.

The rules follow mteb 2.26.24, `mteb/results/task_result.py`: `TaskResult.from_disk` tries the later layout first
and converts only a file whose `mteb_version` is below 1.11 or absent (`_convert_from_before_v1_11_0`): the
`dataset_revision` defaults to "dataset revision not available"; each split's `evaluation_time` is summed into
the file's; a split whose values hold no mapping other than the per-similarity ones (`cos_sim`, `euclidean`,
`manhattan`, `dot`, `max`, `v_measures`) is the subset `default`, else each mapping is a subset by name; each
per-similarity mapping is flattened with its new name (`cos_sim` -> `cosine`, `dot` -> `dot`, `euclidean`,
`manhattan`, `max`, `similarity`), so `test.cos_sim.spearman` becomes `cosine_spearman`; `main_score` is the
task's main score (its metadata's `main_score`) where the entry has it, else null; the entry's `languages` are
the task's languages for that subset (`from_task_results`). mteb's task metadata comes from specrun's offline
catalogue (`specrun.mteb.task_facts`: main scores, dataset revisions, languages); a task it does not hold gets a
null `main_score` and no languages. mteb's fixes for MLSUM and XPQA (subsets renamed) and, for files before
1.12.48, its flattening of PairClassification's nested scores (`_fix_pair_classification_scores`) are not
repeated here: no task specrun maps to is one of them. mteb is never imported."""

from __future__ import annotations

import re
from typing import Any

# mteb's (new name, old name) per similarity, in its order
SIMILARITIES = (("cosine", "cos_sim"), ("manhattan", "manhattan"), ("euclidean", "euclidean"), ("dot", "dot"),
                ("max", "max"), ("similarity", "similarity"))
NOT_A_SUBSET = {"v_measures", "cos_sim", "euclidean", "manhattan", "dot", "max"}  # mteb's set, as it names it
NO_DATASET_REVISION = "dataset revision not available"  # what mteb records for a file without one
RENAMED_TASKS = {"NorwegianParliament": "NorwegianParliamentClassification", "CMedQAv2": "CMedQAv2-reranking",
                 "CMedQAv1": "CMedQAv1-reranking", "8TagsClustering": "EightTagsClustering", "PPC": "PpcPC"}


def version_key(version: str | None) -> tuple[int, ...] | None:
    """mteb's version as numbers (`1.12.75` -> (1, 12, 75), `1.1.2.dev0` -> (1, 1, 2)); None when absent or
    unparsable."""
    if version is None:
        return None
    found = re.match(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    return tuple(int(part or 0) for part in found.groups()) if found else None


def is_before_1_11(data: dict[str, Any]) -> bool:
    """mteb's test for trying the older layout: a version below 1.11, or none recorded."""
    key = version_key(data.get("mteb_version")) if isinstance(data.get("mteb_version"), str) else None
    return "mteb_version" not in data or data["mteb_version"] is None or (key is not None and key < (1, 11, 0))


def _task_facts(task_name: str) -> tuple[str | None, dict[str, list[str]]]:
    """(main score, languages per subset) of a task from the catalogue's facts; (None, {}) when it has none."""
    from specrun.mteb.task_facts import task_facts

    facts = task_facts(task_name)
    return (None, {}) if facts is None else (facts.main_score, facts.languages)


def _entries(split_scores: dict[str, Any], main_score: str | None, languages: dict[str, list[str]]) -> list[dict]:
    """One split's scores as the later layout's entries (one per subset)."""
    has_subsets = any(isinstance(value, dict) for key, value in split_scores.items() if key not in NOT_A_SUBSET)
    by_subset = {k: v for k, v in split_scores.items() if isinstance(v, dict)} if has_subsets else {
        "default": split_scores}
    entries = []
    for subset, raw in by_subset.items():
        entry = dict(raw)
        for new, old in SIMILARITIES:
            nested = entry.pop(old, None)
            if isinstance(nested, dict):
                entry.update({f"{new}_{k}": v for k, v in nested.items()})
        entry.setdefault("main_score", entry.get(main_score) if main_score else None)
        all_languages = sorted({lang for langs in languages.values() for lang in langs})
        entry["hf_subset"], entry["languages"] = subset, languages.get(subset, all_languages)
        entries.append(entry)
    return entries


def convert_before_1_11(data: dict[str, Any]) -> dict[str, Any]:
    """The file's content in the later layout (the dict TaskFile validates); ValueError names a missing key."""
    rest = dict(data)
    task_name = rest.pop("mteb_dataset_name", None)
    if not isinstance(task_name, str):
        raise ValueError("neither `scores` (mteb 1.11 and later) nor `mteb_dataset_name` (before 1.11)")
    dataset_revision = rest.pop("dataset_revision", NO_DATASET_REVISION)
    mteb_version = rest.pop("mteb_version", None)
    splits = {name: dict(value) for name, value in rest.items() if isinstance(value, dict)}
    evaluation_time = 0.0
    for split in splits.values():
        time = split.pop("evaluation_time", 0)
        evaluation_time += time if isinstance(time, (int, float)) and not isinstance(time, bool) else 0.0
    task_name = RENAMED_TASKS.get(task_name, task_name)
    main_score, languages = _task_facts(task_name)
    return {"task_name": task_name, "dataset_revision": dataset_revision, "mteb_version": mteb_version,
            "evaluation_time": evaluation_time,
            "scores": {name: _entries(split, main_score, languages) for name, split in splits.items()}}


__all__ = ["NO_DATASET_REVISION", "convert_before_1_11", "is_before_1_11", "version_key"]
