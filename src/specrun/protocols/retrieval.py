"""Retrieval on candidate lists: each query ranks its own candidates (binary relevance) by cosine."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

import numpy as np
from pydantic import BaseModel

from specrun.core.contracts import KindExample, ProtocolKind
from specrun.core.errors import DataError, SpecrunError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, RANK_CUTOFFS, Embed, Item, Outputs, Support
from specrun.protocols.ranking import rank_measures
from specrun.search.cosine import cosine_rows


class RetrievalProtocol(ProtocolKind):
    """Per query, rank its candidates by cosine, highest first; ties keep the candidates' order in the data
    (a stable sort), so a run is reproducible on any machine. Measures are per query; metrics average them."""

    item_fields: ClassVar[dict[str, str]] = {"query": "text", "candidates": "texts", "relevance": "labels"}
    outputs: ClassVar[tuple[str, ...]] = ("ap", "rr", *(f"{m}_at_{k}" for m in ("precision", "recall")
                                                         for k in RANK_CUTOFFS), "ndcg_at_10")
    unit: ClassVar[str] = "queries"
    plot: ClassVar[tuple[str, str] | None] = None
    hub_task: ClassVar[str] = "text-retrieval"
    hub_task_id: ClassVar[str] = "document-retrieval"
    caption: ClassVar[str] = ""

    def validate_items(self, items: Sequence[Item], options: BaseModel, origin: str) -> None:
        for item in items:
            if len(item.fields["candidates"]) != len(item.fields["relevance"]):
                raise DataError(f"query {item.id}: {len(item.fields['candidates'])} candidates but "
                                f"{len(item.fields['relevance'])} labels", file=origin)
            if not any(item.fields["relevance"]):
                raise DataError(f"query {item.id}: no relevant candidate; AP is undefined", file=origin)

    def texts(self, items: Sequence[Item], options: BaseModel, support: Support = NO_SUPPORT) -> Iterator[str]:
        for item in items:
            yield item.fields["query"]
            yield from item.fields["candidates"]

    def run(self, items: Sequence[Item], embed: Embed, options: BaseModel,
            support: Support = NO_SUPPORT) -> Outputs:
        measures: dict[str, list[float]] = {name: [] for name in self.outputs}
        for item in items:
            candidates = item.fields["candidates"]
            query = embed([item.fields["query"]])
            matrix = embed(candidates)
            scores = cosine_rows(np.repeat(query, len(candidates), axis=0), matrix)
            if np.ptp(scores) == 0:
                raise SpecrunError(f"query {item.id}: every candidate has the same score; the ranking is arbitrary")
            order = np.argsort(-scores, kind="stable")
            relevance = np.asarray(item.fields["relevance"])[order]
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
