"""The Retrieval part of `specrun import mteb`: MTEB's AbsTaskRetrieval on the hub retrieval layout (corpus,
queries and qrels configs) as a `corpus_retrieval` spec read by `mteb_retrieval`; what that does not cover yet
(a skipped first result) refused by name. A task whose class sets MTEB's `ignore_identical_ids` imports with
corpus_retrieval's option of that name (`retrieval_options`). A task whose data carries `top_ranked` candidates
(MTEB then ranks each query's candidates only) is a `corpus_reranking` spec, its source read with
`mteb_retrieval`'s option `candidates`: the form every Reranking task takes (import_reranking). A class whose
load_data only calls one of MTEB's own loaders of this layout (`LOADERS`) imports with the reader options that
read what it reads."""

from __future__ import annotations

from typing import Any

from specrun.core.types import CORPUS_CUTOFFS
from specrun.mteb._type_import import TypeImport, card_frame
from specrun.mteb.catalogue import Task
from specrun.mteb.import_subset import split_stats

RETRIEVAL_DESCRIPTION = (
    "Each query is embedded on the model's query path and every document of the corpus (title and text joined by "
    "a space) on its document path; every query ranks the whole corpus by cosine, ties by corpus order, and "
    "trec_eval's measures are computed on its top k, as MTEB's AbsTaskRetrieval does (MTEB breaks exact ties by "
    "document id).")
# MTEB score key -> (spec metric, label): trec_eval's measures at the cutoffs corpus_retrieval computes
RETRIEVAL_METRICS = {f"{measure}_at_{k}": (f"{measure}_cut_{k}", f"{label}@{k}") for measure, label in (
    ("ndcg", "nDCG"), ("map", "MAP"), ("mrr", "MRR"), ("recall", "Recall"), ("precision", "P"))
    for k in CORPUS_CUTOFFS}
DEEPEST = 100  # the deepest cutoff the importer writes beside the main score (recall_at_100)
COMPANIONS = ("ndcg_at_10", "map_at_10", "mrr_at_10", "recall_at_100")
CANDIDATES_DESCRIPTION = (
    "Each query is embedded on the model's query path and every document of the corpus (title and text joined by "
    "a space) on its document path; every query ranks only its own candidates (the data's top_ranked) by cosine, "
    "ties by document id descending, and trec_eval's measures are computed on its top k against all its qrels, "
    "as MTEB's AbsTaskRetrieval does for a task with top_ranked (its reranking form).")


# load_data overrides that read the hub retrieval layout themselves, by the one helper their body calls (as the
# catalogue's hook_calls record it) -> the mteb_retrieval options that read the same rows. MTEB 2.26.24's
# `_load_data_retrieval` (tasks/retrieval/multilingual/mr_tidy_retrieval.py) reads, per hf_subset, the configs
# `<subset>-qrels` and `<subset>-queries` at split `test` and `<subset>-corpus` at split `train`, keeps rows as
# they are (MTEB's later v1-to-v2 conversion and its evaluator drop the queries without qrels, as the reader does)
# and reads no instruction (a repo with one is then refused, not joined)
LOADERS = {"_load_data_retrieval": {"corpus_split": "train", "instructions": False}}


def loader_options(task: Task) -> dict[str, Any]:
    """The reader options of a known loader, where the task's load_data calls one and nothing else."""
    calls = task.hook_calls.get("load_data", []) if "load_data" in task.hooks else []
    return dict(LOADERS[calls[0]]) if len(calls) == 1 and calls[0] in LOADERS else {}


def has_top_ranked(task: Task) -> bool:
    """Whether MTEB's data for the task carries top_ranked candidates (its statistics count them)."""
    return any(((task.stats or {}).get(split) or {}).get("top_ranked_statistics") for split in task.eval_splits)


def retrieval_refusal(task: Task) -> str | None:
    """What MTEB's AbsTaskRetrieval does beyond a full-corpus search of the corpus/queries/qrels configs."""
    if task.attributes.get("ignore_identical_ids") and has_top_ranked(task):
        return "ignore_identical_ids with top_ranked candidates (not in corpus_reranking yet)"
    if task.attributes.get("ignore_identical_ids") and search_depth(task) <= max(_cutoff(task.main_score), DEEPEST):
        return (f"ignore_identical_ids with a score at MTEB's search depth {search_depth(task)} (MTEB counts one "
                "document fewer there; corpus_retrieval's option matches it below that depth only)")
    if task.attributes.get("skip_first_result"):
        return "skip_first_result (not in corpus_retrieval yet)"
    return None


def retrieval_options(task: Task) -> dict[str, Any]:
    """The corpus_retrieval options a task's class attributes ask for beyond top_k: `ignore_identical_ids`,
    set where MTEB's class sets it (and only then, so other tasks' specs are as they were)."""
    return {"ignore_identical_ids": True} if task.attributes.get("ignore_identical_ids") else {}


def search_depth(task: Task) -> int:
    """MTEB's search depth for a task: max(k_values), the top_k its RetrievalEvaluator keeps (1000 by default)."""
    values = task.attributes.get("k_values")
    return max(values) if isinstance(values, list) and values else max(CORPUS_CUTOFFS)


def _cutoff(score: str) -> int:
    tail = score.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def retrieval_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    """A local copy of the repo read by `mteb_retrieval` (its corpus, queries and qrels configs, and its
    top_ranked config where the task has candidates), every instruction joined to its query as MTEB's loader
    does for any retrieval task (an `instruction` config, or a column of the queries, where the repo has one)."""
    mirror: dict[str, Any] = {"format": "mteb_retrieval", "files": dict.fromkeys(task.eval_splits, ".")}
    mirror["options"] = ({"subset": task.hf_subsets[0]} if task.hf_subsets[0] != "default" else {}) | (
        {"candidates": True} if has_top_ranked(task) else {}) | {"instructions": True} | loader_options(task)
    columns = {"query": "query", "qrels": "qrels", "corpus": "corpus"}
    source.update(mirror=mirror, columns=columns | ({"candidates": "candidates"} if has_top_ranked(task) else {}),
                  ids={"column": "query_id"})
    return source


def retrieval_protocol(task: Task, companions: tuple[str, ...] = COMPANIONS) -> dict[str, Any]:
    """corpus_retrieval (or, with top_ranked, corpus_reranking), ranking as deep as the deepest score written."""
    cutoffs = [_cutoff(score) for score in [task.main_score, *companions]]
    if has_top_ranked(task):
        return candidates_protocol(task, max(cutoffs))
    return {"kind": "corpus_retrieval", "label": "Corpus retrieval", "capability": "embed.text.pooled",
            "similarity": "cosine", "description": RETRIEVAL_DESCRIPTION,
            "options": {"top_k": max(cutoffs), **retrieval_options(task)}}


def candidates_protocol(task: Task, top_k: int) -> dict[str, Any]:
    """The `corpus_reranking` protocol of a task with top_ranked: its candidates kept to the deepest cutoff."""
    return {"kind": "corpus_reranking", "label": "Reranking of each query's candidates",
            "capability": "embed.text.pooled", "similarity": "cosine", "description": CANDIDATES_DESCRIPTION,
            "options": {"top_k": top_k}}


def retrieval_card(task: Task, version: str) -> dict[str, Any]:
    def count(split: str, key: str) -> str:
        value = (split_stats(task, split) or {}).get(key)  # the subset's own, for a one-subset spec
        return f"{value:,}" if isinstance(value, int) else "?"

    splits = ", ".join(f"{split} ({count(split, 'num_queries')} queries, {count(split, 'num_documents')} documents)"
                       for split in task.eval_splits)
    frame = card_frame(task, version)
    ranked = "its own top_ranked candidates" if has_top_ranked(task) else "the whole corpus"
    configs = "corpus, queries, qrels and top_ranked" if has_top_ranked(task) else "corpus, queries and qrels"
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision} (its {configs} "
                f"configs), as MTEB {version} loads it for task {task.name}; read from a local copy of the "
                "repo (--data-dir).",
        "items": f"Every query with qrels of the evaluated split(s): {splits}, as MTEB's descriptive statistics "
                 f"state them; each query ranks {ranked}.",
        "uncertainty": "95 % bootstrap interval over the queries, 1,000 resamples.",
        "caveats": frame["caveats"] + (CAPPED_RECALL_CAVEAT if "task_specific_scores" in task.hooks else ""),
        "examples": {"count": 3, "heading": f"Three queries (input: a query and {ranked}; expected output: the "
                                            "documents its qrels judge relevant, ranked first):",
                     "columns": {"id": "item_id", "query": "query"}},
    }


# a task_specific_scores that only adds capped recall (R_cap_at_k: recall over min(k, relevant documents)) beside
# the usual scores, which it does not change: the spec scores the usual ones and says the others are left out
CAPPED_RECALL = {"task_specific_scores": frozenset({"recall_cap", "_average_optional", "items"})}
CAPPED_RECALL_CAVEAT = (" MTEB also reports this task's own capped recall (R_cap_at_k, from its "
                        "task_specific_scores), which this spec does not compute; it changes none of its other "
                        "scores.")

RETRIEVAL_IMPORT = TypeImport(
    type="Retrieval", protocol="search", metrics=RETRIEVAL_METRICS, companions=COMPANIONS,
    refusal=retrieval_refusal, source=retrieval_source, protocol_entry=retrieval_protocol, card=retrieval_card,
    extra_scores=CAPPED_RECALL | {"load_data": frozenset(LOADERS)})
