"""Retrieval on candidate lists: each query ranks its own candidates (binary relevance) by cosine."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

import numpy as np
from pydantic import BaseModel

from specrun.core.contracts import KindExample, ProtocolKind
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, RANK_CUTOFFS, Embed, FieldText, Item, Outputs, Role, Support
from specrun.protocols.ranking import candidate_texts, check_candidate_lists, rank_measures, relevance_by_cosine


class RetrievalProtocol(ProtocolKind):
    """Per query, rank its candidates by cosine, highest first; ties keep the candidates' order in the data
    (a stable sort), so a run is reproducible on any machine. Measures are per query; metrics average them."""

    info = KindInfo(
        item_fields={"query": "text", "candidates": "texts", "relevance": "labels"},
        outputs=("ap", "rr", *(f"{m}_at_{k}" for m in ("precision", "recall")
        for k in RANK_CUTOFFS), "ndcg_at_10"),
        unit="queries",
        prompt_task="Retrieval",
        roles={"query": "query", "candidates": "document"},
        hub_task="text-retrieval",
        hub_task_id="document-retrieval",
    )
    Options = NoOptions
    plot: ClassVar[tuple[str, str] | None] = None

    def validate_items(self, items: Sequence[Item], options: BaseModel, origin: str) -> None:
        check_candidate_lists(items, origin)

    def texts(self, items: Sequence[Item], options: BaseModel, support: Support = NO_SUPPORT) -> Iterator[FieldText]:
        return candidate_texts(items)

    def run(self, items: Sequence[Item], embed: Embed, options: BaseModel,
            support: Support = NO_SUPPORT) -> Outputs:
        measures: dict[str, list[float]] = {name: [] for name in self.outputs}
        for item in items:
            relevance = relevance_by_cosine(item, embed)
            for name, value in rank_measures(relevance, int(np.sum(relevance))).items():
                measures[name].append(value)
        return Outputs(unit=self.unit, ids=[item.id for item in items],
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
