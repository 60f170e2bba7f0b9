"""The Summarization part of `specrun import mteb`: MTEB's AbsTaskSummarization with its SummarizationEvaluator
(a machine summary's predicted quality is its highest cosine to the text's human summaries; per text, Spearman
and Pearson of those against the human relevance scores; their mean over the texts whose scores are not all
equal) as a `summarization` spec, which computes exactly that. MTEB's scaling of the relevance by min_score and
max_score changes no correlation and is not repeated. The deprecated evaluator of the first SummEval tasks
(which averages each correlation together with its p-value) is refused by name: no kind computes that number."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import TypeImport, abstask_refusal, card_frame, renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_sts import counts, hub_source
from specrun.mteb.import_subset import split_stats

SUMMARIZATION_DESCRIPTION = (
    "Each summary is embedded on its own with the model's own pooling (the source text is not embedded). A machine "
    "summary's predicted quality is its highest cosine to any human summary of the same text; per text, Spearman "
    "and Pearson correlate the predictions with the human relevance scores, and the scores are the means over the "
    "texts, as MTEB's SummarizationEvaluator computes them. A text whose relevance scores or predictions are all "
    "equal has no correlation and is left out, as MTEB leaves it out.")
# MTEB score key -> (spec metric, label); its dot_* and the model's own function's (`spearman`, `pearson`) are
# the same correlations under another similarity, not written
SUMMARIZATION_METRICS = {"cosine_spearman": ("summary_spearman", "Spearman ρ per text, mean over texts (cosine)"),
                         "cosine_pearson": ("summary_pearson", "Pearson r per text, mean over texts (cosine)")}
EVALUATOR = "mteb._evaluators.text.summarization_evaluator.SummarizationEvaluator"
KNOWN_ATTRIBUTES = {"abstask_prompt", "evaluator", "human_summaries_column_name", "machine_summaries_column_name",
                    "max_score", "min_score", "relevancy_column_name", "text_column_name"}
COLUMNS = (("machine_summaries", "machine_summaries_column_name"), ("human_summaries", "human_summaries_column_name"),
           ("human_scores", "relevancy_column_name"))  # item field -> the abstask attribute naming its column


def summarization_refusal(task: Task) -> str | None:
    """What of MTEB's AbsTaskSummarization the summarization kind cannot say."""
    attrs = task.attributes
    if reason := abstask_refusal(task, KNOWN_ATTRIBUTES, "AbsTaskSummarization"):
        return reason
    evaluator = str(attrs.get("evaluator"))
    if evaluator != EVALUATOR:
        return (f"evaluator {evaluator.rsplit('.', 1)[-1]} (MTEB's deprecated mean of each correlation with its "
                "p-value, issue 1156: not a number the summarization kind computes)")
    if not all(isinstance(attrs.get(key), str) for _, key in COLUMNS):
        return "summary or relevance column is not one column name"
    low, high = attrs.get("min_score"), attrs.get("max_score")
    if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and low < high):
        return f"score range min {low!r}, max {high!r} (MTEB's scaling needs min < max)"
    return None


def summarization_columns(task: Task) -> dict[str, str]:
    """Item field -> column of the hub data, named as the data names them before a dataset_transform's renames."""
    renamed = renamed_back(task)
    return {field: renamed.get(task.attributes[key], task.attributes[key]) for field, key in COLUMNS}


def summarization_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    return hub_source(task, name, source, summarization_columns(task))


def summarization_protocol(task: Task) -> dict[str, Any]:
    return {"kind": "summarization", "label": "Best cosine to a human summary", "capability": "embed.text.pooled",
            "similarity": "cosine", "description": SUMMARIZATION_DESCRIPTION}


def summarization_card(task: Task, version: str) -> dict[str, Any]:
    found = counts(task)
    splits = ", ".join(f"{split} ({found[split]:,} texts)" if split in found else split
                       for split in task.eval_splits)
    frame = card_frame(task, version)
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision}, as MTEB {version} loads "
                f"it for task {task.name}: per text its human summaries, its machine summaries and their human "
                f"relevance scores ({task.attributes['min_score']} to {task.attributes['max_score']}).",
        "items": f"Every text of the evaluated split(s): {splits}, the counts MTEB's descriptive statistics state.",
        "uncertainty": "95 % bootstrap interval over the texts, 1,000 resamples.",
        "caveats": frame["caveats"] + _repeats(task),
        "examples": {"count": 2, "heading": "Two texts (input: its machine and human summaries; expected output: "
                                            "predictions that rank the machine summaries as the human scores do):",
                     "columns": {"id": "item_id", "machine_summaries": "machine summaries",
                                 "human_scores": "human scores"}},
    }


def _repeats(task: Task) -> str:
    """The caveat where MTEB's statistics show machine summaries repeated: MTEB embeds each occurrence in its own
    batch, and its float32 noise breaks their tie in the Spearman ranks; the kind embeds a text once (a tie)."""
    found = []
    for split in task.eval_splits:
        block = (split_stats(task, split) or {}).get("machine_summaries_statistics") or {}
        total, mean, unique = (block.get(key) for key in ("total_text_length", "average_text_length", "unique_texts"))
        if isinstance(total, int) and isinstance(mean, float) and mean > 0 and isinstance(unique, int):
            count = round(total / mean)
            if unique < count:
                found.append(f"{split}: {count:,} machine summaries, {unique:,} distinct")
    if not found:
        return ""
    return (f" Some machine summaries repeat ({'; '.join(found)}): MTEB embeds each occurrence on its own, and "
            "the float32 noise of its batches breaks their tie in the Spearman ranks, where this spec, embedding a "
            "text once, keeps it: cosine_spearman may then differ from MTEB's beyond rounding.")


SUMMARIZATION_IMPORT = TypeImport(
    type="Summarization", protocol="summaries", metrics=SUMMARIZATION_METRICS,
    companions=("cosine_spearman", "cosine_pearson"), refusal=summarization_refusal, source=summarization_source,
    protocol_entry=summarization_protocol, card=summarization_card, metric_name=lambda score, metric: score,
    score_range=(-1.0, 1.0),
    expect_fields={"machine_summaries": "machine_summaries_statistics",
                   "human_summaries": "human_summaries_statistics"})

__all__ = ["SUMMARIZATION_IMPORT", "SUMMARIZATION_METRICS", "summarization_columns", "summarization_refusal"]
