"""The Retrieval part of `specrun import mteb`: MTEB's AbsTaskRetrieval on the hub retrieval layout (corpus,
queries and qrels configs) as a `corpus_retrieval` spec read by `mteb_retrieval`; what that does not cover yet
(identical-id exclusion, a skipped first result, top_ranked candidates) refused by name."""

from __future__ import annotations

from typing import Any

from specrun.core.types import CORPUS_CUTOFFS
from specrun.mteb.catalogue import Task

RETRIEVAL_DESCRIPTION = (
    "Each query is embedded on the model's query path and every document of the corpus (title and text joined by "
    "a space) on its document path; every query ranks the whole corpus by cosine, ties by corpus order, and "
    "trec_eval's measures are computed on its top k, as MTEB's AbsTaskRetrieval does (MTEB breaks exact ties by "
    "document id).")
# MTEB score key -> (spec metric, label): trec_eval's measures at the cutoffs corpus_retrieval computes
RETRIEVAL_METRICS = {f"{measure}_at_{k}": (f"{measure}_cut_{k}", f"{label}@{k}") for measure, label in (
    ("ndcg", "nDCG"), ("map", "MAP"), ("mrr", "MRR"), ("recall", "Recall"), ("precision", "P"))
    for k in CORPUS_CUTOFFS}


def retrieval_refusal(task: Task) -> str | None:
    """What MTEB's AbsTaskRetrieval does beyond a full-corpus search of the corpus/queries/qrels configs."""
    if task.attributes.get("ignore_identical_ids"):
        return "ignore_identical_ids (dropping a document whose id is the query's is not in corpus_retrieval yet)"
    if task.attributes.get("skip_first_result"):
        return "skip_first_result (not in corpus_retrieval yet)"
    if any(((task.stats or {}).get(split) or {}).get("top_ranked_statistics") for split in task.eval_splits):
        return "top_ranked candidates (MTEB's reranking form of the layout is not imported yet)"
    return None


def retrieval_card(task: Task, version: str) -> dict[str, Any]:
    def count(split: str, key: str) -> str:
        value = ((task.stats or {}).get(split) or {}).get(key)
        return f"{value:,}" if isinstance(value, int) else "?"

    splits = ", ".join(f"{split} ({count(split, 'num_queries')} queries, {count(split, 'num_documents')} documents)"
                       for split in task.eval_splits)
    superseded = f" MTEB marks this task superseded by {task.superseded_by}." if task.superseded_by else ""
    return {
        "what_is_measured": f"{task.description.strip() or task.name} (MTEB's {task.type} task {task.name}.)",
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision} (its corpus, queries and "
                f"qrels configs), as MTEB {version} loads it for task {task.name}; read from a local copy of the "
                "repo (--data-dir).",
        "items": f"Every query with qrels of the evaluated split(s): {splits}, as MTEB's descriptive statistics "
                 "state them; each query ranks the whole corpus.",
        "uncertainty": "95 % bootstrap interval over the queries, 1,000 resamples.",
        "caveats": f"Written by `specrun import mteb` from MTEB {version}'s task metadata, not reviewed by hand: "
                   f"check the description and licence before publishing.{superseded}",
        "examples": {"count": 3, "heading": "Three queries (input: a query and the corpus; expected output: the "
                                            "documents its qrels judge relevant, ranked first):",
                     "columns": {"id": "item_id", "query": "query"}},
    }
