"""Instruction retrieval (FollowIR's paired evaluation, as MTEB scores its InstructionReranking tasks Core17,
Robust04 and News21): each query ranks its candidates twice, once joined with its original instruction and once
with the changed one (MTEB's join: the query, a space, the instruction; documents never get one). p-MRR says
whether the documents the change made non-relevant moved down; trec_eval's measures score each ranking against
its own relevance."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from specrun.core.contracts import (
    NO_SUPPORT,
    Embed,
    FieldText,
    KindExample,
    KindInfo,
    NoOptions,
    ProtocolKind,
    RunContext,
    Support,
)
from specrun.core.errors import DataError, SpecrunError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import CORPUS_CUTOFFS, TREC_MEASURES, Item, Outputs, trec_output
from specrun.protocols.ranking import changed_documents, p_mrr, trec_measures
from specrun.search.similarity import SIMILARITIES, similarity_rows

RELEVANCE = {"og": "relevance", "changed": "changed_relevance"}
INSTRUCTION = {"og": "instruction", "changed": "changed_instruction"}
INSTRUCTIONS = tuple(RELEVANCE)  # MTEB's names for the two runs (its `-og` / `-changed` query ids)


def instructed(item: Item, which: str) -> str:
    """The query text the model reads under one instruction: MTEB's `query + " " + instruction`."""
    return item.fields["query"] + " " + item.fields[INSTRUCTION[which]]


def ranks_by_similarity(item: Item, which: str, embed: Embed, function: str) -> np.ndarray:
    """Each candidate's rank (1 = most similar) under one instruction; ties keep the data's order (stable), a list
    whose candidates all score the same is refused (its order would be arbitrary)."""
    candidates = item.fields["candidates"]
    query = embed([instructed(item, which)], "query")
    scores = similarity_rows(np.repeat(query, len(candidates), axis=0), embed(candidates, "candidates"), function)
    if np.ptp(scores) == 0:
        raise SpecrunError(f"query {item.id}: every candidate has the same score under the {which} instruction; "
                           "the ranking is arbitrary")
    ranks = np.empty(len(candidates), dtype=np.int64)
    ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(candidates) + 1)
    return ranks


class InstructionRetrievalProtocol(ProtocolKind[NoOptions]):
    """Per query: p-MRR over its changed documents (relevant under the original instruction, not under the changed
    one), and trec_eval's measures at each cutoff for the original (`og_ndcg_cut_10`, ...) and the changed
    (`changed_ndcg_cut_10`, ...) ranking against their own relevance; metrics average them over queries."""

    info = KindInfo(
        item_fields={"query": "text", "instruction": "text", "changed_instruction": "text", "candidates": "texts",
                     "relevance": "labels", "changed_relevance": "labels"},
        outputs=("p_mrr", *(f"{which}_{trec_output(m, k)}" for which in INSTRUCTIONS for m in TREC_MEASURES
                            for k in CORPUS_CUTOFFS)),
        unit="queries",
        prompt_task="InstructionReranking",  # MTEB 2.x types FollowIR's tasks (candidate lists) so
        roles={"query": "query", "candidates": "document"},
        hub_task="text-ranking",
        similarities=SIMILARITIES,
    )
    Options = NoOptions

    def validate_items(self, items: Sequence[Item], options: NoOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        """Labels align with candidates; each query has a relevant candidate under both instructions (AP is
        undefined otherwise) and a changed document (p-MRR has nothing to score otherwise)."""
        for item in items:
            n = len(item.fields["candidates"])
            for which, name in RELEVANCE.items():
                if len(item.fields[name]) != n:
                    raise DataError(f"query {item.id}: {n} candidates but {len(item.fields[name])} {name} labels",
                                    file=origin, key=name)
                if not any(v >= 1 for v in item.fields[name]):
                    raise DataError(f"query {item.id}: no relevant candidate under the {which} instruction; "
                                    "AP is undefined", file=origin, key=name)
            if not changed_documents(item.fields["relevance"], item.fields["changed_relevance"]).any():
                raise DataError(f"query {item.id}: no candidate relevant under the original instruction and not "
                                "under the changed one; p-MRR has nothing to score", file=origin,
                                key="changed_relevance")

    def texts(self, items: Sequence[Item], options: NoOptions, support: Support = NO_SUPPORT) -> Iterator[FieldText]:
        for item in items:
            for which in INSTRUCTIONS:
                yield "query", instructed(item, which)
            yield from (("candidates", text) for text in item.fields["candidates"])

    def run(self, items: Sequence[Item], ctx: RunContext, options: NoOptions) -> Outputs:
        arrays: dict[str, np.ndarray] = {}
        ranks = {which: [ranks_by_similarity(item, which, ctx.embed, ctx.similarity) for item in items]
                 for which in INSTRUCTIONS}
        arrays["p_mrr"] = np.array([
            p_mrr(og[changed], new[changed]) for item, og, new in zip(items, ranks["og"], ranks["changed"], strict=True)
            for changed in [changed_documents(item.fields["relevance"], item.fields["changed_relevance"])]])
        depth = max(len(item.fields["candidates"]) for item in items)
        for which, name in RELEVANCE.items():
            gains, ideal = np.zeros((len(items), depth)), np.zeros((len(items), depth))
            for row, (item, rank) in enumerate(zip(items, ranks[which], strict=True)):
                relevance = np.asarray(item.fields[name], dtype=np.float64)
                gains[row, rank - 1] = relevance
                ideal[row, :len(relevance)] = np.sort(relevance)[::-1]
            n_relevant = (ideal >= 1).sum(axis=1).astype(np.float64)
            arrays.update({f"{which}_{key}": value for key, value in trec_measures(gains, ideal, n_relevant).items()})
        return Outputs(unit=self.info.unit, ids=[item.id for item in items], arrays=arrays)

    def example(self) -> KindExample:
        rows = [("compiling java", "Only answers about the command line.", "Only answers about an IDE.",
                 ["javac on the command line", "compile java in eclipse", "int versus Integer"], [1, 1, 0], [0, 1, 0]),
                ("null crashes", "Any explanation of the exception.", "Only stack trace reading.",
                 ["null pointer exception", "what is a stack trace", "how to compile java"], [1, 1, 0], [0, 1, 0]),
                ("parse a number", "Java or Python.", "Python only.",
                 ["Integer.parseInt in java", "int() in python", "read a file"], [1, 1, 0], [0, 1, 0])]
        return KindExample(items=[Item(id=f"q{i}", fields={
            "query": q, "instruction": a, "changed_instruction": b, "candidates": c, "relevance": r,
            "changed_relevance": s}) for i, (q, a, b, c, r, s) in enumerate(rows)],
            metrics=("p_mrr", "og_ndcg_cut_10", "changed_ndcg_cut_10", "og_map_cut_1000", "changed_mrr_cut_10"))


PROTOCOLS.register("instruction_retrieval", InstructionRetrievalProtocol())
