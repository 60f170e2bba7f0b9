"""Retrieval on candidate lists: each query ranks its own candidates (binary relevance) by cosine (with
--reranker, its top k rescored by a cross-encoder: protocols.ranking.reranked)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specrun.core.contracts import KindExample, KindInfo, NoOptions, ProtocolKind, RunContext
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, RANK_CUTOFFS, Item, Outputs, Support
from specrun.protocols.ranking import candidate_order, check_candidate_lists, rank_measures
from specrun.search.similarity import SIMILARITIES


class RetrievalProtocol(ProtocolKind[NoOptions]):
    """Per query, rank its candidates by cosine, highest first; ties keep the candidates' order in the data
    (a stable sort), so a run is reproducible on any machine. Measures are per query; metrics average them."""

    info = KindInfo(
        item_fields={"query": "text", "candidates": "texts", "relevance": "labels"},
        outputs=("ap", "rr", *(f"{m}_at_{k}" for m in ("precision", "recall") for k in RANK_CUTOFFS),
                 "ndcg_at_10"),
        unit="queries",
        prompt_task="Retrieval",
        roles={"query": "query", "candidates": "document"},
        hub_task="text-retrieval",
        hub_task_id="document-retrieval",
        similarities=SIMILARITIES,
        reranks=True,
    )
    Options = NoOptions

    def validate_items(self, items: Sequence[Item], options: NoOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        check_candidate_lists(items, origin)

    def run(self, items: Sequence[Item], ctx: RunContext, options: NoOptions) -> Outputs:
        measures: dict[str, list[float]] = {name: [] for name in self.info.outputs}
        for item in items:
            labels = np.asarray(item.fields["relevance"], dtype=np.float64)
            for name, value in rank_measures(labels[candidate_order(item, ctx)], int(np.sum(labels))).items():
                measures[name].append(value)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={name: np.array(values) for name, values in measures.items()})

    def example(self) -> KindExample:
        pool = ["how to compile java", "java cannot find symbol", "int versus Integer", "read input with Scanner",
                "null pointer exception", "convert a string to an int"]
        queries = [("compiling java in a terminal", [1, 1, 0, 0, 0, 0]),
                   ("parse a number from text", [0, 0, 1, 0, 0, 1]),
                   ("my program crashes with null", [0, 0, 0, 0, 1, 0])]
        return KindExample(items=[Item(id=f"q{i}", fields={"query": q, "candidates": pool, "relevance": r})
                                  for i, (q, r) in enumerate(queries)])


PROTOCOLS.register("retrieval", RetrievalProtocol())
