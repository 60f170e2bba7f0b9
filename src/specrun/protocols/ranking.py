"""Per-query measures of a ranked list, shared by the ranking kinds: `rank_measures` for a candidate list with
binary relevance (retrieval), `trec_measures` / `corpus_measures` for trec_eval's measures at cutoffs on graded
qrels (corpus retrieval). Metrics average what these return; they never rank."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from specrun.core.contracts import Rerank, RunContext
from specrun.core.errors import DataError, SpecrunError
from specrun.core.types import CORPUS_CUTOFFS, RANK_CUTOFFS, Embed, Item, trec_output
from specrun.search.similarity import similarity_rows


def check_candidate_lists(items: Sequence[Item], origin: str) -> None:
    """Each query's candidates and labels align, and at least one candidate is relevant."""
    for item in items:
        if len(item.fields["candidates"]) != len(item.fields["relevance"]):
            raise DataError(f"query {item.id}: {len(item.fields['candidates'])} candidates but "
                            f"{len(item.fields['relevance'])} labels", file=origin)
        if not any(item.fields["relevance"]):
            raise DataError(f"query {item.id}: no relevant candidate; AP is undefined", file=origin)


def order_by_similarity(item: Item, embed: Embed, function: str = "cosine") -> np.ndarray:
    """A query's candidates (their indices) in the order of their similarity to it (`function`: the protocol's;
    cosine by default), highest first; ties keep the data's order (a stable sort); a list whose candidates all
    score the same is refused (its order would be arbitrary)."""
    candidates = item.fields["candidates"]
    query = embed([item.fields["query"]], "query")
    scores = similarity_rows(np.repeat(query, len(candidates), axis=0), embed(candidates, "candidates"), function)
    if np.ptp(scores) == 0:
        raise SpecrunError(f"query {item.id}: every candidate has the same score; the ranking is arbitrary")
    return np.argsort(-scores, kind="stable")


def relevance_by_similarity(item: Item, embed: Embed, function: str = "cosine") -> np.ndarray:
    """A query's candidate relevance in the order of `order_by_similarity`."""
    return np.asarray(item.fields["relevance"], dtype=np.float64)[order_by_similarity(item, embed, function)]


def candidate_order(item: Item, ctx: RunContext) -> np.ndarray:
    """A query's candidates (indices) as the run ranks them: by similarity, and with --reranker its top k
    rescored by the cross-encoder (`reranked`; the rest dropped)."""
    order = order_by_similarity(item, ctx.embed, ctx.similarity)
    if ctx.rerank is None:
        return order
    candidates = item.fields["candidates"]
    return reranked(order[None, :], [item.fields["query"]], lambda at: [candidates[i] for i in at.tolist()],
                    ctx.rerank, [item.id])[0]


def reranked(ranked: np.ndarray, queries: Sequence[str], texts_of: Callable[[np.ndarray], list[str]],
             rerank: Rerank, query_ids: Sequence[str], block: int = 256) -> np.ndarray:
    """Two-stage ranking: each row's first `rerank.top_k` entries (a query's first-stage ranking, best first, as
    corpus positions or candidate indices; `texts_of` gives their texts) reordered by the cross-encoder's score of
    (query, text), highest first, ties in first-stage order; the rest are dropped, as MTEB's two-stage evaluation
    (convert_to_reranking, then a CrossEncoder) scores only the documents it reranks. Queries a block at a time,
    so the pairs held are block x top_k. A score that is not finite, or a query whose pairs all score the same
    (its order would be the first stage's, unannounced), is refused."""
    k = min(rerank.top_k, ranked.shape[1])
    out = np.empty((len(ranked), k), dtype=ranked.dtype)
    for start in range(0, len(ranked), block):
        rows = ranked[start:start + block, :k]
        pairs_queries = [query for query in queries[start:start + block] for _ in range(k)]
        scores = np.asarray(rerank.score(pairs_queries, texts_of(rows.ravel())), dtype=np.float64)
        scores = scores.reshape(rows.shape)
        if not np.isfinite(scores).all():
            raise SpecrunError("the reranker gave a score that is not a finite number")
        flat = np.flatnonzero(np.ptp(scores, axis=1) == 0) if k > 1 else np.array([], dtype=np.int64)
        if len(flat):
            raise SpecrunError(f"query {query_ids[start + int(flat[0])]}: the reranker gives its {k} documents "
                               "the same score; the reranked order would be arbitrary")
        out[start:start + block] = np.take_along_axis(rows, np.argsort(-scores, axis=1, kind="stable"), axis=1)
    return out


def rank_measures(relevance_in_rank_order: np.ndarray, n_relevant: int) -> dict[str, float]:
    """AP, RR, P@k, R@k and nDCG@10 of one ranked list of binary relevance.

    AP divides by the number of relevant items; P@k divides by min(k, list length) even when fewer are relevant
    (trec_eval's P_k divides by k; the two differ only for lists shorter than k)."""
    rel = np.asarray(relevance_in_rank_order, dtype=np.float64)
    ranks = np.arange(1, len(rel) + 1)
    hits = np.cumsum(rel)
    found = np.flatnonzero(rel)
    out = {
        "ap": float(np.sum(hits[found] / ranks[found]) / n_relevant),
        "rr": float(1.0 / (found[0] + 1)) if len(found) else 0.0,
    }
    for k in RANK_CUTOFFS:
        cut = min(k, len(rel))
        out[f"precision_at_{k}"] = float(hits[cut - 1] / cut)
        out[f"recall_at_{k}"] = float(hits[cut - 1] / n_relevant)
    discounts = 1.0 / np.log2(np.arange(2, 12))
    dcg = float(np.sum(rel[:10] * discounts[: min(10, len(rel))]))
    ideal = float(np.sum(discounts[: min(10, n_relevant)]))
    out["ndcg_at_10"] = dcg / ideal
    return out


def trec_measures(gains: np.ndarray, ideal: np.ndarray, n_relevant: np.ndarray,
                  cutoffs: Sequence[int] = CORPUS_CUTOFFS) -> dict[str, np.ndarray]:
    """trec_eval's measures per query from the gains of its ranked run (queries x depth, the qrels score of each
    ranked document, 0 when unjudged) and its ideal gains (queries x any, qrels scores sorted descending, 0
    padded); relevant means score >= 1.

    ndcg_cut_K: sum of gain / log2(rank + 1) over the top K, over the same for the ideal gains (linear gain, as
    trec_eval and BEIR/MTEB). map_cut_K: precision at each relevant rank <= K, summed, over the number of relevant
    documents in the qrels. mrr_cut_K: 1 / rank of the first relevant document within K, else 0. recall_cut_K:
    relevant in the top K over relevant in the qrels. precision_cut_K: relevant in the top K over K (even when
    the run or the relevant set is shorter)."""
    gains = np.asarray(gains, dtype=np.float64)
    depth = gains.shape[1]
    relevant = gains >= 1
    ranks = np.arange(1, depth + 1)
    hits = np.cumsum(relevant, axis=1)
    ap_sum = np.cumsum(np.where(relevant, hits / ranks, 0.0), axis=1)
    discount = 1.0 / np.log2(np.arange(2, max(depth, ideal.shape[1], max(cutoffs)) + 2))
    dcg = np.cumsum(gains * discount[:depth], axis=1)
    idcg = np.cumsum(ideal * discount[:ideal.shape[1]], axis=1)
    first = np.where(relevant.any(axis=1), np.argmax(relevant, axis=1) + 1, np.inf)
    out = {}
    for k in cutoffs:
        c = min(k, depth) - 1
        ideal_k = idcg[:, min(k, ideal.shape[1]) - 1]
        out[trec_output("ndcg", k)] = np.divide(dcg[:, c], ideal_k, out=np.zeros(len(gains)), where=ideal_k > 0)
        out[trec_output("map", k)] = ap_sum[:, c] / n_relevant
        out[trec_output("mrr", k)] = np.where(first <= k, 1.0 / first, 0.0)
        out[trec_output("recall", k)] = hits[:, c] / n_relevant
        out[trec_output("precision", k)] = hits[:, c] / k
    return out


def corpus_measures(ranked: np.ndarray, qrels: Sequence[dict[str, int]], position: dict[str, int],
                    block: int = 1024) -> dict[str, np.ndarray]:
    """trec_measures of each query's ranked corpus positions against its qrels (doc id -> score), by blocks of
    queries so the gain matrices stay small."""
    parts: list[dict[str, np.ndarray]] = []
    for q in range(0, len(ranked), block):
        chunk = ranked[q:q + block]
        judged = qrels[q:q + block]
        gains = np.zeros(chunk.shape)
        for row, (ranking, scores) in enumerate(zip(chunk, judged, strict=True)):
            where = np.array([position[doc] for doc in scores], dtype=np.int64)
            values = np.array(list(scores.values()), dtype=np.float64)
            hit = np.isin(ranking, where)
            if hit.any():
                lookup = dict(zip(where.tolist(), values.tolist(), strict=True))
                gains[row, hit] = [lookup[p] for p in ranking[hit].tolist()]
        width = max(len(s) for s in judged)
        ideal = np.zeros((len(judged), width))
        for row, scores in enumerate(judged):
            values = sorted((v for v in scores.values() if v > 0), reverse=True)
            ideal[row, :len(values)] = values
        n_relevant = np.array([sum(1 for v in s.values() if v >= 1) for s in judged], dtype=np.float64)
        parts.append(trec_measures(gains, ideal, n_relevant))
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def changed_documents(relevance: Sequence[int], changed_relevance: Sequence[int]) -> np.ndarray:
    """The candidates the changed instruction made non-relevant (relevant, >= 1, under the original, not under the
    changed): FollowIR's qrel diff, whose documents p-MRR expects to move down."""
    return (np.asarray(relevance) >= 1) & (np.asarray(changed_relevance) < 1)


def p_mrr(og_ranks: np.ndarray, new_ranks: np.ndarray) -> float:
    """One query's p-MRR: the mean over its changed documents of MTEB's `rank_score`, (1/og)/(1/new) - 1 when
    og >= new (moved up or stayed: <= 0), else 1 - (1/new)/(1/og) (moved down: > 0), ranks from 1."""
    og = np.asarray(og_ranks, dtype=np.float64)
    new = np.asarray(new_ranks, dtype=np.float64)
    return float(np.mean(np.where(og >= new, new / og - 1.0, 1.0 - og / new)))
