"""The STS part of `specrun import mteb`: MTEB's AbsTaskSTS (two text columns and a gold score, cosine of the two
embeddings, Spearman and Pearson) as a `sts` spec read by `datasets` from the hub data."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import TypeImport, card_frame, renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_subset import split_stats, subset_reading

STS_DESCRIPTION = (
    "Each sentence is embedded on its own with the model's own pooling and the prediction is the cosine of the two "
    "vectors. Nothing is fit: the correlation is computed between raw cosines and the gold scores, as MTEB's "
    "AbsTaskSTS does (its scaling of the gold to [0, 1] changes no correlation).")
STS_METRICS = {"cosine_spearman": ("spearman", "Spearman ρ (embedding cosine)"),
               "cosine_pearson": ("pearson", "Pearson r (embedding cosine)")}


def sts_refusal(task: Task) -> str | None:
    columns = task.attributes.get("column_names")
    if not (isinstance(columns, list) and len(columns) == 2 and all(isinstance(c, str) for c in columns)):
        return f"column_names {columns!r} are not two text columns"
    return None


def source_columns(task: Task) -> dict[str, str]:
    """Item field -> column of the hub data: the abstask's column names (and its `score`), named as the data
    names them before a dataset_transform's renames."""
    renamed = renamed_back(task)
    text1, text2 = task.attributes["column_names"]
    return {"text1": renamed.get(text1, text1), "text2": renamed.get(text2, text2),
            "gold": renamed.get("score", "score")}


def counts(task: Task) -> dict[str, int]:
    """MTEB's descriptive statistics' number of samples per eval split, where it has them."""
    found = {}
    for split in task.eval_splits:
        stats = split_stats(task, split)
        if stats is not None and isinstance(stats.get("num_samples"), int):
            found[split] = stats["num_samples"]
    return found


def hub_source(task: Task, name: str, source: dict[str, Any], columns: dict[str, str],
               splits: list[str] | None = None) -> dict[str, Any]:
    """An hf_dataset source read by `datasets`: MTEB's config (or the subset's), the splits, the columns, and
    item ids numbered as wide as the largest split needs."""
    splits = splits or list(task.eval_splits)
    sizes = [stats["num_samples"] for split in splits
             if isinstance(stats := split_stats(task, split), dict) and isinstance(stats.get("num_samples"), int)]
    if "name" in task.dataset.options:
        source["config"] = str(task.dataset.options["name"])
    source.update(subset_reading(task)[0])
    source["splits"] = splits
    source["columns"] = columns
    source["ids"] = {"prefix": f"{name}-", "width": len(str(max(sizes) - 1)) if sizes else 0}
    return source


def sts_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    return hub_source(task, name, source, source_columns(task))


def sts_protocol(task: Task) -> dict[str, Any]:
    return {"kind": "sts", "label": "Zero-shot", "capability": "embed.text.pooled", "similarity": "cosine",
            "description": STS_DESCRIPTION}


def sts_card(task: Task, version: str) -> dict[str, Any]:
    found = counts(task)
    splits = ", ".join(f"{split} ({found[split]:,} pairs)" if split in found else split
                       for split in task.eval_splits)
    frame = card_frame(task, version)
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision}, as MTEB {version} loads "
                f"it for task {task.name}.",
        "items": f"Every pair of the evaluated split(s): {splits}, the counts MTEB's descriptive statistics state.",
        "uncertainty": "95 % bootstrap interval over the pairs, 1,000 resamples.",
        "caveats": frame["caveats"],
        "examples": {"count": 3, "heading": "Three pairs (input: two texts; expected output: a similarity that ranks "
                                            "pairs like the gold score):",
                     "columns": {"id": "item_id", "text1": "text 1", "text2": "text 2", "gold": "gold"}},
    }


STS_IMPORT = TypeImport(
    type="STS", protocol="zero_shot", metrics=STS_METRICS, companions=("cosine_spearman", "cosine_pearson"),
    refusal=sts_refusal, source=sts_source, protocol_entry=sts_protocol, card=sts_card,
    metric_name=lambda score, metric: f"{metric}_zero_shot", score_range=(-1.0, 1.0),
    expect_fields={"text1": "text1_statistics", "text2": "text2_statistics"})

__all__ = ["STS_IMPORT", "counts", "hub_source", "source_columns"]
