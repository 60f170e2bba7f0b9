"""Reranking: each query orders its own candidate list by cosine (with --reranker, its top k rescored by a
cross-encoder: protocols.ranking.reranked), scored with trec_eval's measures at cutoffs (MAP@1000, MRR@10,
nDCG@10, recall and precision at K) through the very function the corpus protocol uses, as MTEB scores its
reranking tasks with pytrec_eval."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specrun.core.contracts import KindExample, KindInfo, NoOptions, ProtocolKind, RunContext
from specrun.core.registry import PROTOCOLS
from specrun.core.types import (
    CORPUS_CUTOFFS,
    NO_SUPPORT,
    TREC_MEASURES,
    Item,
    Outputs,
    Support,
    trec_output,
)
from specrun.protocols.ranking import candidate_order, check_candidate_lists, trec_measures
from specrun.search.similarity import SIMILARITIES


class RerankingProtocol(ProtocolKind[NoOptions]):
    """Per query, its candidates ranked by cosine, highest first, ties in the data's order (stable); the gains are
    the candidates' relevance (0/1), the ideal ranking all relevant first. Per query trec_eval's measures at each
    cutoff (`ndcg_cut_10`, `map_cut_1000`, `mrr_cut_10`, ...); metrics average them over queries."""

    info = KindInfo(
        item_fields={"query": "text", "candidates": "texts", "relevance": "labels"},
        outputs=tuple(trec_output(m, k) for m in TREC_MEASURES for k in CORPUS_CUTOFFS),
        unit="queries",
        prompt_task="Reranking",
        roles={"query": "query", "candidates": "document"},
        hub_task="text-ranking",
        similarities=SIMILARITIES,
        reranks=True,
    )
    Options = NoOptions

    def validate_items(self, items: Sequence[Item], options: NoOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        check_candidate_lists(items, origin)

    def run(self, items: Sequence[Item], ctx: RunContext, options: NoOptions) -> Outputs:
        depth = max(len(item.fields["candidates"]) for item in items)
        gains = np.zeros((len(items), depth))
        ideal = np.zeros((len(items), depth))
        for row, item in enumerate(items):
            labels = np.asarray(item.fields["relevance"], dtype=np.float64)
            relevance = labels[candidate_order(item, ctx)]  # with --reranker: its top k only
            gains[row, :len(relevance)] = relevance
            ideal[row, :len(labels)] = np.sort(labels)[::-1]
        n_relevant = (ideal >= 1).sum(axis=1).astype(np.float64)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays=trec_measures(gains, ideal, n_relevant))

    def example(self) -> KindExample:
        queries = [("compiling java in a terminal", ["how to compile java", "javac on the command line",
                                                      "int versus Integer", "null pointer exception"], [1, 1, 0, 0]),
                   ("parse a number from text", ["convert a string to an int", "read input with Scanner",
                                                  "java cannot find symbol"], [1, 0, 0]),
                   ("my program crashes with null", ["null pointer exception", "how to compile java",
                                                      "int versus Integer", "what is a stack trace"], [1, 0, 0, 1])]
        return KindExample(items=[Item(id=f"q{i}", fields={"query": q, "candidates": c, "relevance": r})
                                  for i, (q, c, r) in enumerate(queries)],
                           metrics=("map_cut_1000", "mrr_cut_10", "ndcg_cut_10", "recall_cut_3", "precision_cut_1"))


PROTOCOLS.register("reranking", RerankingProtocol())
