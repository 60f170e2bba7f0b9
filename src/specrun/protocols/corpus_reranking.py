"""Corpus reranking: each query ranks only its own candidates (document ids of a corpus every query shares), and
the ranking is scored with trec_eval's measures against its graded qrels: MTEB's evaluation of a retrieval-layout
task that carries `top_ranked` (all its Reranking tasks).

mteb 2.26 does this in `RetrievalEvaluator` (mteb/_evaluators/retrieval_evaluator.py): `SearchEncoderWrapper
.search(top_ranked=...)` embeds the whole corpus, scores each query against its candidates only
(`rerank_top_ranked_documents` in mteb/models/search_wrappers.py; a query without candidates gets an empty run),
keeps its top max(k_values), and `calculate_retrieval_scores` scores the run with pytrec_eval against the qrels,
which may judge documents outside the candidates: they count in the ideal DCG and in AP's and recall's
denominators, as here (`corpus_measures`). pytrec_eval orders a run by score, then by document id descending
(MTEB's own MRR sorts the same way), so equal scores are broken here by document id, descending; a query whose
qrels hold no relevant document scores 0 on every measure, as pytrec_eval scores it and MTEB averages it.

Memory: the corpus is embedded `chunk_size` documents at a time, as corpus_retrieval embeds it; each chunk scores
only the (query, candidate) pairs whose document lies in it, a block at a time. Held: the queries' vectors and one
float per pair; never queries x corpus."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import DataError, FieldError
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
from specrun.protocols.corpus_retrieval import one_corpus, to_corpus  # noqa: F401  (to_corpus registers field kinds)
from specrun.protocols.ranking import corpus_measures
from specrun.search.cosine import checked_norms
from specrun.search.similarity import SIMILARITIES, checked_finite, similarity_rows

PAIRS = 4_096  # (query, candidate) pairs scored per call: float64 rows of both sides, ~6 MB at 384 dimensions


class CandidateOptions(KindOptions):
    top_k: int = Field(1000, ge=1, description="Candidates kept per query, best first: the largest cutoff the "
                                               "metrics use (MTEB keeps max(k_values), 1000).")
    chunk_size: int = Field(16_384, ge=1, description="Documents embedded per call (the chunk of vectors held).")
    max_over_subqueries: bool = Field(False, description=(
        "Score groups of subqueries, as MTEB's `max_over_subqueries` does: queries whose ids share the part "
        "before their last '_' are one group (the unit); each subquery keeps its top_k candidates, a document "
        "scores its highest similarity over the group's subqueries, and the group's run, ranked by that, is "
        "scored against the group's qrels (its subqueries' must be equal)."))


def to_document_ids(value: Any) -> list[str]:
    """A query's candidates: a list of document ids (strings), possibly empty (MTEB scores such a query 0)."""
    if not isinstance(value, list) or not all(isinstance(doc, str) and doc for doc in value):
        raise FieldError("expected a list of document ids (non-empty strings)")
    return value


class CorpusRerankingProtocol(ProtocolKind[CandidateOptions]):
    """Per query, its candidates ranked by the protocol's similarity (cosine by default), highest first, ties by
    document id descending (pytrec_eval's order), cut at top_k; trec_eval's measures per query at each cutoff
    against its qrels, which metrics average and the bootstrap resamples by query."""

    info = KindInfo(
        item_fields={"query": "text", "qrels": "judgments", "corpus": "corpus", "candidates": "document_ids"},
        outputs=tuple(trec_output(m, k) for m in TREC_MEASURES for k in CORPUS_CUTOFFS),
        unit="queries",
        prompt_task="Reranking",
        roles={"query": "query", "corpus": "document"},
        hub_task="text-ranking",
        similarities=SIMILARITIES,
        every_item_a_unit=False,
    )
    Options = CandidateOptions

    def validate_items(self, items: Sequence[Item], options: CandidateOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        one_corpus(items, origin)
        corpus = items[0].fields["corpus"] if items else None
        for item in items:
            missing = next((doc for doc in item.fields["candidates"] if doc not in corpus.position), None)
            if missing is not None:
                raise DataError(f"query {item.id}: candidate {missing!r} is not a document of the corpus",
                                file=origin)
        if options.max_over_subqueries:
            subquery_groups(items)  # before anything is embedded

    def corpora(self, items: Sequence[Item], options: CandidateOptions) -> Iterator[tuple[str, SharedCorpus]]:
        if items:
            yield "corpus", items[0].fields["corpus"]

    def run(self, items: Sequence[Item], ctx: RunContext, options: CandidateOptions) -> Outputs:
        corpus: SharedCorpus = items[0].fields["corpus"]
        queries = checked(ctx.embed([item.fields["query"] for item in items], "query"), ctx.similarity)
        if options.max_over_subqueries:
            groups = subquery_groups(items)
            top = top_candidates(queries, [item.fields["candidates"] for item in items], corpus, ctx, options)
            ranked = merged_ranking(items, top, list(groups.values()), corpus, options.top_k)
            return Outputs(unit=self.info.unit, ids=list(groups), arrays=measures(
                ranked, [items[members[0]].fields["qrels"] for members in groups.values()], corpus))
        ranked = ranked_candidates(queries, [item.fields["candidates"] for item in items], corpus, ctx, options)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays=measures(ranked, [item.fields["qrels"] for item in items], corpus))

    def example(self) -> KindExample:
        corpus = SharedCorpus.from_lists(ids=[f"d{i}" for i in range(7)], texts=[
            "how to compile java", "java cannot find symbol", "int versus Integer", "read input with Scanner",
            "null pointer exception", "convert a string to an int", "how to compile java"])
        queries = [("compiling java in a terminal", {"d0": 2, "d1": 1, "d3": 1}, ["d6", "d1", "d0", "d2"]),
                   ("parse a number", {"d5": 1, "d2": 0}, ["d5", "d2", "d3"]),
                   ("crash with null", {"d4": 0}, ["d4", "d1"]), ("read a line", {"d3": 1}, [])]
        return KindExample(items=[Item(id=f"q{i}", fields={"query": q, "qrels": r, "corpus": corpus,
                                                           "candidates": c})
                                  for i, (q, r, c) in enumerate(queries)], options={"top_k": 3, "chunk_size": 4},
                           metrics=("ndcg_cut_10", "map_cut_1000", "mrr_cut_10", "recall_cut_3", "precision_cut_1"))


def ranked_candidates(queries: np.ndarray, candidates: Sequence[Sequence[str]], corpus: SharedCorpus,
                      ctx: RunContext, options: CandidateOptions) -> np.ndarray:
    """Each query's (a row of `queries`, checked vectors) candidates best first by the similarity, ties by
    document id descending (pytrec_eval's order), cut at top_k: (queries, depth) corpus positions, -1 past the end
    of a shorter list. Also the paired kind's ranking (paired_reranking)."""
    return padded([positions for positions, _ in top_candidates(queries, candidates, corpus, ctx, options)],
                  options.top_k)


def top_candidates(queries: np.ndarray, candidates: Sequence[Sequence[str]], corpus: SharedCorpus,
                   ctx: RunContext, options: CandidateOptions) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each query's run as MTEB keeps it: its candidates' corpus positions and similarities, best first, ties by
    document id descending, cut at top_k."""
    ids = [sorted(set(docs), reverse=True) for docs in candidates]  # ties: id descending
    lists = [np.array([corpus.position[doc] for doc in docs], dtype=np.int64) for docs in ids]
    documents = lambda start, stop: ctx.embed(corpus.slice(start, stop), "corpus")  # noqa: E731
    scores = candidate_scores(queries, lists, documents, len(corpus), options.chunk_size, ctx.similarity)
    ranked_lists = [values for values in scores if len(values) > 1]
    if ranked_lists and all(values.max() == values.min() for values in ranked_lists):
        raise DataError(f"every query's candidates tie ({len(ranked_lists)} lists of two or more): the order "
                        "would be document ids, a constant prediction that measures nothing (are the vectors all "
                        "the same?)")
    runs = []
    for positions, values in zip(lists, scores, strict=True):
        order = np.argsort(-values, kind="stable")[:options.top_k]
        runs.append((positions[order], values[order]))
    return runs


def padded(lists: Sequence[np.ndarray], top_k: int) -> np.ndarray:
    """(queries, depth) corpus positions from each query's ranked list, -1 past the end of a shorter one."""
    ranked = np.full((len(lists), max(1, min(top_k, max(map(len, lists), default=0)))), -1, dtype=np.int64)
    for row, positions in enumerate(lists):
        ranked[row, :min(len(positions), top_k)] = positions[:top_k]
    return ranked


def subquery_groups(items: Sequence[Item]) -> dict[str, list[int]]:
    """Group id -> its subqueries (item indices), in first-seen order: MTEB's `max_over_subqueries` groups query
    ids by the part before their last '_' (`"_".join(id.split("_")[:-1])`). An id without '_' (MTEB would pool
    all such queries into one group named '') or a group whose subqueries' qrels differ (MTEB keeps one of them,
    whichever its qrels order lists last) is one line."""
    groups: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        base, underscore, _ = item.id.rpartition("_")
        if not underscore or not base:
            raise DataError(f"query {item.id!r}: option max_over_subqueries groups query ids by the part before "
                            "their last '_', and this one has none")
        members = groups.setdefault(base, [])
        if members and item.fields["qrels"] != items[members[0]].fields["qrels"]:
            raise DataError(f"query {item.id!r}: its qrels differ from those of {items[members[0]].id!r}, a "
                            f"subquery of the same group {base!r} (MTEB scores a group against one of them)")
        members.append(index)
    return groups


def merged_ranking(items: Sequence[Item], runs: Sequence[tuple[np.ndarray, np.ndarray]],
                   groups: Sequence[Sequence[int]], corpus: SharedCorpus, top_k: int) -> np.ndarray:
    """Each group's run: every document of its subqueries' runs at its highest score among them, best first,
    ties by document id descending (pytrec_eval's order of MTEB's merged run), cut at top_k. Sorted as arrays
    (MTEB's MIND holds 2.4 million subqueries): by group, document and score, the first of each (group,
    document) its max; then by group, score and id."""
    descending = sorted({doc for item in items for doc in item.fields["candidates"]}, reverse=True)
    tie = np.zeros(len(corpus), dtype=np.int64)
    tie[[corpus.position[doc] for doc in descending]] = np.arange(len(descending))
    group_of = np.empty(len(runs), dtype=np.int64)
    for number, members in enumerate(groups):
        group_of[members] = number
    group = np.repeat(group_of, [len(positions) for positions, _ in runs])
    position = np.concatenate([np.empty(0, dtype=np.int64), *(positions for positions, _ in runs)])
    score = np.concatenate([np.empty(0), *(values for _, values in runs)])
    order = np.lexsort((-score, position, group))
    group, position, score = group[order], position[order], score[order]
    first = np.ones(len(group), dtype=bool)
    first[1:] = (group[1:] != group[:-1]) | (position[1:] != position[:-1])
    group, position, score = group[first], position[first], score[first]
    order = np.lexsort((tie[position], -score, group))
    group, position = group[order], position[order]
    bounds = np.searchsorted(group, np.arange(len(groups) + 1))
    return padded([position[bounds[g]:bounds[g + 1]] for g in range(len(groups))], top_k)


def checked(vectors: np.ndarray, function: str) -> np.ndarray:
    """Vectors as the similarity takes them, refused (one line) where one is zero (cosine) or not finite, also
    when no pair would read it: a broken embedding is never silently left out."""
    if function == "cosine":
        checked_norms(vectors)
        return vectors
    return checked_finite(vectors, function)


def candidate_scores(queries: np.ndarray, lists: Sequence[np.ndarray],
                     documents: Callable[[int, int], np.ndarray], size: int, chunk_size: int,
                     function: str) -> list[np.ndarray]:
    """Each query's similarity to each of its candidates (corpus positions, `lists`), the corpus read a chunk at
    a time through `documents(start, stop)`; a chunk no candidate lies in is not embedded."""
    rows = np.repeat(np.arange(len(lists)), [len(positions) for positions in lists])
    positions = np.concatenate([*lists, np.empty(0, dtype=np.int64)])
    order = np.argsort(positions, kind="stable")
    bounds = np.searchsorted(positions[order], np.arange(0, size + chunk_size, chunk_size))
    scores = np.empty(len(positions))
    for chunk, start in enumerate(range(0, size, chunk_size)):
        low, high = int(bounds[chunk]), int(bounds[chunk + 1])
        if low == high:
            continue
        vectors = checked(documents(start, min(start + chunk_size, size)), function)
        for block in range(low, high, PAIRS):
            at = order[block:min(block + PAIRS, high)]
            scores[at] = similarity_rows(queries[rows[at]], vectors[positions[at] - start], function)
    return np.split(scores, np.cumsum([len(p) for p in lists])[:-1])


def measures(ranked: np.ndarray, qrels: Sequence[dict[str, int]], corpus: SharedCorpus) -> dict[str, np.ndarray]:
    """`corpus_measures` of the queries with a relevant document; 0 on every measure for the others (pytrec_eval
    scores a query without one so, and MTEB averages it in)."""
    scored = np.array([any(score >= 1 for score in judged.values()) for judged in qrels], dtype=bool)
    found = corpus_measures(ranked[scored], [qrels[i] for i in np.flatnonzero(scored)], corpus.position) \
        if scored.any() else {}
    out = {}
    for name in CorpusRerankingProtocol.info.outputs:
        out[name] = np.zeros(len(qrels))
        if scored.any():
            out[name][scored] = found[name]
    return out


FIELD_KINDS.register("document_ids", to_document_ids)
PROTOCOLS.register("corpus_reranking", CorpusRerankingProtocol())
