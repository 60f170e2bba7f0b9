"""The Reranking part of `specrun import mteb`. In MTEB 2.x a Reranking task is an AbsTaskRetrieval on the hub
retrieval layout whose `top_ranked` config gives each query its candidates: MTEB embeds the corpus, ranks each
query's candidates only and scores the run with pytrec_eval against the graded qrels (map_at_1000, mrr_at_10,
ndcg_at_10, ... as its Retrieval tasks name them). So a Reranking task imports as a Retrieval task with
candidates does (import_retrieval): a `corpus_reranking` spec whose source `mteb_retrieval` reads with option
`candidates`. A Reranking task without top_ranked in MTEB's statistics would be full-corpus retrieval, not what
its type says: refused by name, as is what the retrieval form refuses (skip_first_result, ...); a class's own
scores (task_specific_scores) are refused as every hook is, but for one that only calls MTEB's
`max_over_subqueries`: those scores (`max_over_subqueries_<score>`, each of MTEB's measures on runs merged over
the subqueries of a query id's prefix) are corpus_reranking's with option `max_over_subqueries`, which a task whose
main score is one of them gets, with the same family's companions."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import TypeImport, card_frame
from specrun.mteb.catalogue import Task
from specrun.mteb.import_retrieval import (
    RETRIEVAL_METRICS,
    has_top_ranked,
    retrieval_card,
    retrieval_protocol,
    retrieval_refusal,
    retrieval_source,
)

# the scores beside the main one: the three a Reranking result of MTEB 2.x leads with (map_at_1000 its default main)
RERANKING_COMPANIONS = ("map_at_1000", "mrr_at_10", "ndcg_at_10")
SUBQUERIES = "max_over_subqueries_"  # MTEB's prefix of the scores of runs merged over subqueries
# MTEB score key -> (spec metric, label): the usual measures, and the same on the merged runs
RERANKING_METRICS = RETRIEVAL_METRICS | {f"{SUBQUERIES}{key}": (metric, f"{label} (max over subqueries)")
                                         for key, (metric, label) in RETRIEVAL_METRICS.items()}
SUBQUERIES_DESCRIPTION = (
    " Queries whose ids share the part before their last '_' are subqueries of one query: each keeps its top k "
    "candidates, a document scores its highest cosine over them, and the merged run is scored against the "
    "query's qrels, as MTEB's max_over_subqueries does (the unit is the merged query).")
SUBQUERIES_CAVEAT = (" MTEB also reports this task's usual scores over the subqueries one by one; this spec scores "
                     "the merged queries (max_over_subqueries_*) only.")


def reranking_refusal(task: Task) -> str | None:
    """What a Reranking task needs beyond the retrieval form with candidates: the candidates themselves."""
    if not has_top_ranked(task):
        return "no top_ranked candidates in MTEB's statistics (its reranking form could not be checked)"
    return retrieval_refusal(task)


def merged(task: Task) -> bool:
    """Whether the task's main score is one of MTEB's max_over_subqueries scores."""
    return task.main_score.startswith(SUBQUERIES)


def reranking_companions(task: Task) -> tuple[str, ...]:
    """The usual companions, of the main score's family (max_over_subqueries_... beside such a main score)."""
    return tuple(f"{SUBQUERIES}{score}" for score in RERANKING_COMPANIONS) if merged(task) else RERANKING_COMPANIONS


def reranking_protocol(task: Task) -> dict[str, Any]:
    """The retrieval form's protocol; with option max_over_subqueries where the main score is of that family."""
    protocol = retrieval_protocol(task, reranking_companions(task))
    if merged(task):
        protocol["options"]["max_over_subqueries"] = True
        protocol["description"] += SUBQUERIES_DESCRIPTION
    return protocol


def reranking_card(task: Task, version: str) -> dict[str, Any]:
    """The retrieval form's card; for a merged task, a caveat naming the scores it leaves out instead of the
    capped-recall one."""
    card = retrieval_card(task, version)
    if merged(task):
        card["caveats"] = card_frame(task, version)["caveats"] + SUBQUERIES_CAVEAT
    return card


RERANKING_IMPORT = TypeImport(
    type="Reranking", protocol="rerank", metrics=RERANKING_METRICS, companions=RERANKING_COMPANIONS,
    refusal=reranking_refusal, source=retrieval_source, protocol_entry=reranking_protocol, card=reranking_card,
    extra_scores={"task_specific_scores": frozenset({"max_over_subqueries"})}, companions_of=reranking_companions)
