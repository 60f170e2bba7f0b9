"""Exact top-k search of a corpus by cosine, without a queries x documents matrix.

The corpus is read through `documents(start, stop)` in chunks of `chunk_size` rows and searched exactly:

1. candidates: float32 cosines, by blocks of at most `BLOCK_BYTES` of scores (numpy: normalised queries times
   the chunk's raw vectors, each column divided by its document's norm, so no normalised copy of the chunk is
   made; with a running per-query threshold and `np.argpartition`; or faiss' exact `IndexFlatIP` of the
   normalised chunk), keeping the best `top_k + margin` per query;
2. exact order: the candidates are re-scored as `cosine_rows` scores (float64, rounded to 12 decimals, so equal
   cosines are equal numbers) in a second pass over the corpus in chunk order (`exact_scores`), and sorted by
   score, highest first, then by corpus order. A bound on the float32
   error proves, per query, that no document outside the candidates can enter (or tie into) the top `top_k`; a
   query without that proof is ranked by an exact float64 scan of the corpus.

So numpy and faiss give the same ranking, and the ranking is the one a full float64 sort would give.
Memory: Q x (top_k + margin) candidates (their float32 and exact scores and positions), one chunk of vectors (as
`documents` returns it) and one block of scores; never Q x N, never the corpus matrix, and never a second copy of
the chunk (numpy). With a mapper set for the run (`core.mapping`: `--executor ray`), step 1's chunks are searched
by Ray actors (`chunk_candidates`, the same arithmetic) and merged here; the mapper bounds the chunks in flight.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from specrun.core.errors import SpecrunError
from specrun.core.mapping import chunk_map
from specrun.search.cosine import check_norms, checked_norms, cosine_rows, cosine_with_norms

BLOCK_BYTES = 8 * 2**20  # one block of float32 scores, queries x documents
RESCORE_ROWS = 4_096  # (query, candidate) pairs re-scored per block (float64 rows of both sides: ~25 MB at 384)
UNIT_ROUNDOFF = 2.0**-24  # float32


def float32_error(dim: int) -> float:
    """An upper bound on |float32 score - float64 cosine| for vectors of `dim` dimensions: the dot product's
    accumulated rounding (dim u), the query's normalisation and the document's norm (each at most dim/2 u + 2u,
    sums of squares), the division (u): under 2 (dim + 4) u; the bound is 2 (dim + 16) u."""
    return 2.0 * (dim + 16) * UNIT_ROUNDOFF


def _norms(matrix: np.ndarray) -> np.ndarray:
    """Float32 row norms, summed row by row (einsum), so no temporary the size of the matrix is made."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    check_norms(norms)  # a NaN or inf row would otherwise score NaN and silently never be ranked
    return norms


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / _norms(matrix)[:, None]


def _merge(state_s: np.ndarray, state_i: np.ndarray, scores: np.ndarray, index: np.ndarray) -> None:
    """Keep, in place, the best state_s.shape[1] of each row among the state and the new (scores, index): only
    scores above the row's current weakest are gathered, so after the first chunks a block costs one compare;
    a dense block (the first) is cut first at its own width-th best, so no index array of its size is made."""
    width = state_s.shape[1]
    bar = state_s.min(axis=1)
    mask = scores > bar[:, None]
    counts = mask.sum(axis=1)
    if len(counts) == 0 or counts.max() == 0:
        return
    if counts.max() > max(width, scores.shape[1] // 4) and scores.shape[1] > width:
        cut = np.partition(scores, scores.shape[1] - width, axis=1)[:, scores.shape[1] - width]
        mask = scores >= np.maximum(bar, cut)[:, None]
        counts = mask.sum(axis=1)
    rows, cols = np.nonzero(mask)
    most = int(counts.max())
    starts = np.cumsum(counts) - counts
    slot = np.arange(len(rows)) - starts[rows]
    cand_s = np.full((len(scores), most), -np.inf, dtype=np.float32)
    cand_i = np.full((len(scores), most), -1, dtype=np.int64)
    cand_s[rows, slot] = scores[rows, cols]
    cand_i[rows, slot] = index[cols] if index.ndim == 1 else index[rows, cols]
    all_s = np.concatenate([state_s, cand_s], axis=1)
    all_i = np.concatenate([state_i, cand_i], axis=1)
    keep = np.argpartition(all_s, all_s.shape[1] - width, axis=1)[:, all_s.shape[1] - width:]
    state_s[:] = np.take_along_axis(all_s, keep, axis=1)
    state_i[:] = np.take_along_axis(all_i, keep, axis=1)


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise SpecrunError("search: faiss needs faiss-cpu: pip install 'specrun[faiss]'") from None
    return faiss


def _search_chunk(unit_q: np.ndarray, chunk: np.ndarray, start: int, state_s: np.ndarray, state_i: np.ndarray,
                  search: str) -> None:
    """Merge one chunk's float32 cosines (corpus rows start..start + len(chunk)) into the state, in place: the
    arithmetic of every candidate search, in this process or on an actor (`chunk_candidates`)."""
    stop = start + len(chunk)
    if search == "faiss":
        index = _faiss().IndexFlatIP(chunk.shape[1])
        index.add(np.ascontiguousarray(_unit_rows(chunk)))
        del chunk
        found_s, found_i = index.search(np.ascontiguousarray(unit_q), min(state_s.shape[1], stop - start))
        _merge(state_s, state_i, found_s, found_i.astype(np.int64) + start)
        return
    norms = _norms(chunk)
    block = max(1, BLOCK_BYTES // (4 * (stop - start)))
    positions = np.arange(start, stop, dtype=np.int64)
    for q in range(0, len(unit_q), block):
        scores = unit_q[q:q + block] @ chunk.T
        scores /= norms  # cosine within float32_error of the float64 one, as with a normalised chunk
        _merge(state_s[q:q + block], state_i[q:q + block], scores, positions)


def chunk_candidates(unit_q: np.ndarray, chunk: np.ndarray, start: int, width: int,
                     search: str) -> tuple[np.ndarray, np.ndarray]:
    """One chunk's best min(width, rows) documents per query (float32 scores, corpus positions): what a mapper
    (`core.mapping`, e.g. a Ray actor) computes per chunk; merged with `_merge` it keeps the same best `width`
    scores as the loop in this process, whatever the order of the chunks."""
    chunk = np.asarray(chunk, dtype=np.float32)
    width = min(width, len(chunk))
    state_s = np.full((len(unit_q), width), -np.inf, dtype=np.float32)
    state_i = np.full((len(unit_q), width), -1, dtype=np.int64)
    _search_chunk(unit_q, chunk, start, state_s, state_i, search)
    return state_s, state_i


def candidates(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int, width: int, *,
               search: str = "numpy", chunk_size: int = 16_384) -> tuple[np.ndarray, np.ndarray]:
    """The best `width` documents of each query by float32 cosine, as (scores, corpus positions), unordered.

    `documents(start, stop)` gives the raw vectors of corpus rows start..stop; it is called once per chunk, here,
    in chunk order. With a mapper set for the run (`core.mapping`, e.g. `--executor ray`) each chunk is searched
    there (`chunk_candidates`) and its best merged here; else the chunks are searched in this process."""
    unit_q = _unit_rows(queries)
    state_s = np.full((len(unit_q), width), -np.inf, dtype=np.float32)
    state_i = np.full((len(unit_q), width), -1, dtype=np.int64)
    if search == "faiss":
        _faiss()  # a missing faiss is one line before any chunk is read
    spans = [(start, min(start + chunk_size, n_docs)) for start in range(0, n_docs, chunk_size)]
    mapper = chunk_map()
    if mapper is not None:
        chunks = ((np.asarray(documents(start, stop), dtype=np.float32), start, width, search)
                  for start, stop in spans)
        for found_s, found_i in mapper(chunk_candidates, unit_q, chunks):
            _merge(state_s, state_i, found_s, found_i)
        return state_s, state_i
    for start, stop in spans:  # the chunk is held by _search_chunk alone, which lets faiss free it early
        _search_chunk(unit_q, np.asarray(documents(start, stop), dtype=np.float32), start, state_s, state_i, search)
    return state_s, state_i


def _ordered(scores: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Per row, the column order: score descending, then corpus position ascending."""
    return np.lexsort((positions, -scores), axis=-1)


def exact_scan(query: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int, depth: int,
               chunk_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The top `depth` of one query over the whole corpus by cosine_rows scores, ties by corpus order: the
    fallback when the float32 candidates cannot be proven complete (many near-equal scores at the cut)."""
    best_s = np.empty(0)
    best_i = np.empty(0, dtype=np.int64)
    for start in range(0, n_docs, chunk_size):
        stop = min(start + chunk_size, n_docs)
        block = documents(start, stop)
        scores = cosine_rows(np.repeat(query[None, :], stop - start, axis=0), block)
        best_s = np.concatenate([best_s, scores])
        best_i = np.concatenate([best_i, np.arange(start, stop)])
        if len(best_s) > depth:  # keep every score tied with the depth-th best: corpus order decides later
            cut = np.partition(best_s, len(best_s) - depth)[len(best_s) - depth]
            keep = best_s >= cut
            best_s, best_i = best_s[keep], best_i[keep]
    order = _ordered(best_s, best_i)[:depth]
    return best_s[order], best_i[order]


def exact_scores(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int,
                 positions: np.ndarray, chunk_size: int) -> np.ndarray:
    """cosine_rows of each query (row) with each of its candidate documents (corpus positions), in one pass over
    the corpus in chunk order: the candidates are sorted by position once, and each chunk that holds some is read
    once (`documents`) and scored in blocks of RESCORE_ROWS pairs. Never a gather of rows from all over the store,
    never more than one chunk of vectors at once."""
    width = positions.shape[1]
    flat = positions.ravel()
    order = np.argsort(flat, kind="stable")
    starts = np.arange(0, n_docs, chunk_size)
    bounds = np.searchsorted(flat[order], np.append(starts, n_docs))
    exact = np.empty(flat.shape, dtype=np.float64)
    queries64 = np.asarray(queries, dtype=np.float64)
    query_norms = checked_norms(queries64)  # once, not per pair: the same numbers (checked_norms)
    for number, start in enumerate(starts):
        low, high = int(bounds[number]), int(bounds[number + 1])
        if low == high:
            continue  # no candidate in this chunk: not read
        chunk = documents(int(start), min(int(start) + chunk_size, n_docs))
        needed, where = np.unique(flat[order[low:high]] - start, return_inverse=True)
        rows64 = np.asarray(chunk[needed], dtype=np.float64)  # only the candidates' rows, in float64
        del chunk
        row_norms = checked_norms(rows64)
        where = where.reshape(-1)
        for block in range(low, high, RESCORE_ROWS):
            pairs = order[block:min(block + RESCORE_ROWS, high)]
            queries_of, docs_of = pairs // width, where[block - low:block - low + len(pairs)]
            exact[pairs] = cosine_with_norms(queries64[queries_of], rows64[docs_of], query_norms[queries_of],
                                             row_norms[docs_of])
        del rows64
    return exact.reshape(positions.shape)


def rank_corpus(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int, depth: int, *,
                search: str = "numpy", chunk_size: int = 16_384) -> tuple[np.ndarray, np.ndarray, int]:
    """Each query's top min(depth, n_docs) corpus positions and their cosine_rows scores, highest first, ties
    by corpus order; plus how many queries needed the exact scan. The corpus is read only through
    `documents(start, stop)`, a chunk at a time: one pass for the candidates, one for their exact scores."""
    queries = np.asarray(queries)
    depth = min(depth, n_docs)
    width = min(n_docs, depth + max(64, depth // 8))
    cand_s, cand_i = candidates(queries, documents, n_docs, width, search=search, chunk_size=chunk_size)
    exact = exact_scores(queries, documents, n_docs, cand_i, chunk_size)
    order = _ordered(exact, cand_i)[:, :depth]
    ranked_i = np.take_along_axis(cand_i, order, axis=1)
    ranked_s = np.take_along_axis(exact, order, axis=1)
    del exact, order
    unproven: list[int] = []
    if width < n_docs:  # outside the candidates: float32 <= weakest, so cosine <= weakest + slack
        weakest = cand_s.min(axis=1).astype(np.float64)
        unproven = list(np.flatnonzero(~(weakest + float32_error(queries.shape[1]) < ranked_s[:, -1])))
    for q in unproven:
        ranked_s[q], ranked_i[q] = exact_scan(queries[q], documents, n_docs, depth, chunk_size)
    return ranked_i, ranked_s, len(unproven)
