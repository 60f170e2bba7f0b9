"""The Reranking part of `specrun import mteb`. In MTEB 2.x a Reranking task is an AbsTaskRetrieval on the hub
retrieval layout whose `top_ranked` config gives each query its candidates: MTEB embeds the corpus, ranks each
query's candidates only and scores the run with pytrec_eval against the graded qrels (map_at_1000, mrr_at_10,
ndcg_at_10, ... as its Retrieval tasks name them). So a Reranking task imports as a Retrieval task with
candidates does (import_retrieval): a `corpus_reranking` spec whose source `mteb_retrieval` reads with option
`candidates`. A Reranking task without top_ranked in MTEB's statistics would be full-corpus retrieval, not what
its type says: refused by name, as is what the retrieval form refuses (skip_first_result, ...); a class's own
scores (task_specific_scores) are refused as every hook is."""

from __future__ import annotations

from specrun.mteb.catalogue import Task
from specrun.mteb.import_retrieval import (
    RETRIEVAL_METRICS,
    has_top_ranked,
    retrieval_card,
    retrieval_protocol,
    retrieval_refusal,
    retrieval_source,
)
from specrun.mteb.type_import import TypeImport

# the scores beside the main one: the three a Reranking result of MTEB 2.x leads with (map_at_1000 its default main)
RERANKING_COMPANIONS = ("map_at_1000", "mrr_at_10", "ndcg_at_10")


def reranking_refusal(task: Task) -> str | None:
    """What a Reranking task needs beyond the retrieval form with candidates: the candidates themselves."""
    if not has_top_ranked(task):
        return "no top_ranked candidates in MTEB's statistics (its reranking form could not be checked)"
    return retrieval_refusal(task)


RERANKING_IMPORT = TypeImport(
    type="Reranking", protocol="rerank", metrics=RETRIEVAL_METRICS, companions=RERANKING_COMPANIONS,
    refusal=reranking_refusal, source=retrieval_source,
    protocol_entry=lambda task: retrieval_protocol(task, RERANKING_COMPANIONS), card=retrieval_card)
