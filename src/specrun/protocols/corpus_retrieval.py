"""Corpus-scale retrieval: every query ranks one whole corpus (the BEIR/MTEB layout), with trec_eval's measures.

The data stage hands over the corpus once: the `beir_corpus` reader gives one row per query (its text and graded
qrels) and every row references the same `SharedCorpus` (digests and offsets, in file order, no text), so nothing
is Q x N and nothing per document is a Python object. The corpus is embedded through `embed` a slice of
`chunk_size` documents at a time (`corpora` names it, so the encoder stage embeds it from its digests) and searched
exactly (`search.exact`) by cosine, or, for a protocol's `similarity:` dot, euclidean or manhattan, by the
float64 chunked search of `search.by_similarity` (the same bounded memory; `search: faiss` and `--executor ray`
are cosine's candidate search, so another function is searched by numpy in this process).

With --reranker, each query's first-stage top k is rescored by a cross-encoder (`protocols.ranking.reranked`,
MTEB's two-stage evaluation): the documents' texts are read from the corpus file (checked against their digests),
a block of queries at a time.

Measures are trec_eval's (pytrec_eval's `ndcg_cut_K`, `map_cut_K`, `recall_K`, `P_K`, and `recip_rank` on the
run cut at K), per query on its top `top_k`, averaged over queries by the metrics stage.

`ignore_identical_ids` is MTEB's option of that name (mteb 2.26: `RetrievalEvaluator.evaluate` in
mteb/_evaluators/retrieval_evaluator.py pops every retrieved document whose id equals the query id from the run,
after the search kept its top max(k_values), before pytrec_eval; the qrels are left as they are). Here the query's
own document (the item id, looked up among the corpus ids the reader located) is left out of its ranking, which is
searched one deeper (top_k + 1) so the cut at top_k still holds top_k others: equal to MTEB's run at every cutoff
below MTEB's depth (1000), where MTEB's list also reaches past its own document; at MTEB's depth itself MTEB counts
one document fewer. With --reranker the own document is dropped after the rescoring, as MTEB reranks a first
stage's saved run (its own document still in it) and drops it when scoring.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import DataError, FieldError, SpecrunError
from specrun.core.registry import FIELD_KINDS, PROTOCOLS
from specrun.core.types import (
    CORPUS_CUTOFFS,
    NO_SUPPORT,
    TREC_MEASURES,
    Item,
    Outputs,
    Support,
    trec_output,
)
from specrun.protocols.ranking import corpus_measures, reranked
from specrun.search.by_similarity import rank_corpus_by
from specrun.search.exact import rank_positions
from specrun.search.similarity import SIMILARITIES


class CorpusOptions(KindOptions):
    top_k: int = Field(1000, ge=1, description="Documents ranked per query: the largest cutoff the metrics use "
                                               "(measures at larger cutoffs see only these).")
    search: Literal["numpy", "faiss"] = Field("numpy", description="Candidate search: numpy matrix products or "
                                                                   "faiss IndexFlatIP (exact; needs faiss-cpu).")
    chunk_size: int = Field(16_384, ge=1, description="Documents embedded per call and searched per block (the "
                                                      "chunk of vectors a search holds).")
    ignore_identical_ids: bool = Field(False, description="Leave out of each query's ranking the corpus document "
                                                          "whose id is the query's id (MTEB's option of that name); "
                                                          "the qrels are kept as they are.")
    query_groups: str | None = Field(None, min_length=1, description=(
        "Groups the queries for group metrics (robustness_at_10): a query's group is its id up to the first "
        "occurrence of this text (MTEB's InstructIR: '_', its instruction variants of one query); none: each "
        "query is its own group."))


def to_corpus(value: Any) -> SharedCorpus:
    if not isinstance(value, SharedCorpus):
        raise FieldError("expected a corpus; use the `beir_corpus` format and map this field to its `corpus`")
    return value


def to_judgments(value: Any) -> dict[str, int]:
    if not isinstance(value, dict) or not value or not all(
            isinstance(d, str) and isinstance(s, int) and not isinstance(s, bool) and s >= 0
            for d, s in value.items()):
        raise FieldError("expected qrels: document id -> whole-number score >= 0")
    return value


def one_corpus(items: Sequence[Item], origin: str) -> None:
    """Every query of a split ranks the same corpus (a split read from source splits that hold different ones
    would rank each query against the wrong documents)."""
    corpus = items[0].fields["corpus"] if items else None
    for item in items:
        if item.fields["corpus"] != corpus:
            raise DataError(f"query {item.id}: a split ranks one corpus; its source splits hold different ones",
                            file=origin)


def _all_one_vector(vectors: np.ndarray) -> bool:
    return len(vectors) > 1 and bool(np.all(vectors == vectors[0]))


class CorpusRetrievalProtocol(ProtocolKind[CorpusOptions]):
    """Each query ranks the whole corpus by the protocol's similarity (cosine by default), highest first, ties by
    corpus order (module docstring); trec_eval's measures per query at each cutoff, which metrics average and the
    bootstrap resamples by query."""

    info = KindInfo(
        item_fields={"query": "text", "qrels": "judgments", "corpus": "corpus"},
        outputs=(*(trec_output(m, k) for m in TREC_MEASURES for k in CORPUS_CUTOFFS), "query_group"),
        unit="queries",
        prompt_task="Retrieval",
        roles={"query": "query", "corpus": "document"},
        hub_task="text-retrieval",
        hub_task_id="document-retrieval",
        similarities=SIMILARITIES,
        reranks=True,
    )
    Options = CorpusOptions

    def validate_items(self, items: Sequence[Item], options: CorpusOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        one_corpus(items, origin)
        for item in items:
            if not any(score >= 1 for score in item.fields["qrels"].values()):
                raise DataError(f"query {item.id}: no relevant document in the qrels; recall and AP are undefined",
                                file=origin)

    def corpora(self, items: Sequence[Item], options: CorpusOptions) -> Iterator[tuple[str, SharedCorpus]]:
        if items:
            yield "corpus", items[0].fields["corpus"]

    def run(self, items: Sequence[Item], ctx: RunContext, options: CorpusOptions) -> Outputs:
        corpus: SharedCorpus = items[0].fields["corpus"]
        own = own_positions(items, corpus) if options.ignore_identical_ids else None
        depth = options.top_k + (own is not None and ctx.rerank is None)  # one deeper: the own document left out
        queries = ctx.embed([item.fields["query"] for item in items], "query")
        documents = lambda start, stop: ctx.embed(corpus.slice(start, stop), "corpus")  # noqa: E731
        if ctx.similarity == "cosine":
            ranked, _ = rank_positions(queries, documents, len(corpus), depth, search=options.search,
                                       chunk_size=options.chunk_size, mapper=ctx.chunk_map,
                                       threads=ctx.execution.search_threads)
        elif options.search == "faiss":
            raise SpecrunError(f"corpus_retrieval: search: faiss ranks by cosine only; similarity "
                               f"{ctx.similarity} is searched with search: numpy")
        else:
            ranked, _ = rank_corpus_by(ctx.similarity, queries, documents, len(corpus), depth,
                                       chunk_size=options.chunk_size)
        if own is not None and ctx.rerank is None:
            ranked = without_own(ranked, own, min(options.top_k, len(corpus)))
        if ctx.rerank is not None:  # two-stage: the top k of each query rescored by the cross-encoder
            if ctx.rerank.top_k > options.top_k:
                raise SpecrunError(f"--rerank-top-k {ctx.rerank.top_k} is more than the first stage's top_k "
                                   f"{options.top_k}; raise the protocol's top_k or lower --rerank-top-k")
            ranked = reranked(ranked, [item.fields["query"] for item in items], corpus.texts_at, ctx.rerank,
                              [item.id for item in items])
            if own is not None:
                ranked = without_own(ranked, own, ranked.shape[1])
        if len(items) > 1 and ranked.shape[1] > 1 and np.all(ranked == ranked[0]) and _all_one_vector(
                np.concatenate([documents(int(at), int(at) + 1) for at in ranked[0][ranked[0] >= 0]])):
            raise DataError(f"every one of the {len(items)} queries retrieves the same documents in the same order, "
                            "all of one vector; a constant prediction measures nothing (are the vectors all the same?)")
        arrays = corpus_measures(ranked, [item.fields["qrels"] for item in items], corpus.position)
        arrays["query_group"] = query_groups([item.id for item in items], options.query_groups)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items], arrays=arrays)

    def example(self) -> KindExample:
        corpus = SharedCorpus.from_lists(ids=[f"d{i}" for i in range(6)], texts=[
            "how to compile java", "java cannot find symbol", "int versus Integer", "read input with Scanner",
            "null pointer exception", "convert a string to an int"])
        queries = [("compiling java in a terminal", {"d0": 2, "d1": 1}), ("parse a number", {"d5": 1, "d2": 0}),
                   ("crash with null", {"d4": 1})]
        return KindExample(items=[Item(id=f"q{i}", fields={"query": q, "qrels": r, "corpus": corpus})
                                  for i, (q, r) in enumerate(queries)], options={"top_k": 5, "chunk_size": 4},
                           metrics=("ndcg_cut_5", "map_cut_5", "mrr_cut_10", "recall_cut_3", "precision_cut_1"))


def query_groups(ids: Sequence[str], separator: str | None) -> np.ndarray:
    """Each query's group as a code (groups numbered in order of first appearance): its id up to the first
    `separator` (MTEB's `key.split(separator)[0]`), or, without one, the query itself."""
    codes: dict[str, int] = {}
    return np.array([codes.setdefault(i.split(separator)[0] if separator else i, len(codes)) for i in ids],
                    dtype=np.float64)


def own_positions(items: Sequence[Item], corpus: SharedCorpus) -> np.ndarray:
    """Each query's own corpus position (its item id as a document id), -1 where the corpus has none: the corpus
    readers locate the queries' ids among the documents' before they let the id hashes go."""
    return np.array([corpus.position.get(item.id, -1) for item in items], dtype=np.int64)


def without_own(ranked: np.ndarray, own: np.ndarray, width: int, rows: int = 4_096) -> np.ndarray:
    """Each row of ranked corpus positions without its own document (`own`, -1: none), in order, cut at `width`
    and padded with -1 (never a document: it gains nothing) where fewer remain; `rows` rows at a time."""
    out = np.full((len(ranked), width), -1, dtype=ranked.dtype)
    for low in range(0, len(ranked), rows):
        block = ranked[low:low + rows]
        kept = block != own[low:low + rows, None]
        order = np.argsort(~kept, axis=1, kind="stable")[:, :width]  # the kept columns first, in rank order
        out[low:low + rows] = np.where(np.take_along_axis(kept, order, axis=1),
                                       np.take_along_axis(block, order, axis=1), -1)
    return out


FIELD_KINDS.register("corpus", to_corpus)
FIELD_KINDS.register("judgments", to_judgments)
PROTOCOLS.register("corpus_retrieval", CorpusRetrievalProtocol())
