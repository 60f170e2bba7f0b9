"""Float64 cosines of chosen (query, candidate document) pairs, in one pass over the corpus in chunk order: the
exact search's second pass (`exact.rank_corpus`).

Two kernels, the same pass: `exact` gives cosine_rows' numbers (einsum dot products, rounded to 12 decimals);
`approximate` gives the unrounded cosine from BLAS dot products (about 4 x faster a pair than einsum, measured),
within `approximate_error` of the exact one before rounding: enough to order every pair but near-ties by it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from specrun.search.cosine import checked_norms, cosine_of_dots, row_dots

RESCORE_ROWS = 1_024  # (query, candidate) pairs re-scored per block (float64 rows of both sides: ~6 MB at 384)
RUN_PAIRS = 16  # pairs of one query a block, on average, from which its row is met as one row, not copied
RESCORE_THREADS = 4  # by default at most this many re-scoring threads (gathers, einsum and BLAS release the GIL)
NORM_ROWS = 4_096  # rows whose norms are taken at once: a chunk's rows are never all copied to float64
DOUBLE_ROUNDOFF = 2.0**-53


def search_threads(requested: int | None = None) -> int:
    """The threads a search computes on: `requested` (the run's --search-threads), else as many as BLAS has (it
    honours OMP_NUM_THREADS and OPENBLAS_NUM_THREADS), at most the cores."""
    if requested:
        return requested
    from threadpoolctl import threadpool_info

    blas = max((lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"), default=1)
    return max(1, min(blas, os.cpu_count() or 1))


def rescore_threads(requested: int | None = None) -> int:
    """The re-scoring's threads: `requested`, else search_threads' default up to RESCORE_THREADS."""
    return requested or min(RESCORE_THREADS, search_threads())


def approximate_error(dim: int) -> float:
    """An upper bound on |approximate - exact| cosine (both unrounded, the same norms): two float64 dot products
    of the same float64 numbers in any order differ by at most 2 gamma_dim |q| |d| (gamma_dim ~ dim u), the
    divisions add u each; doubled for room."""
    return (4.0 * dim + 16.0) * DOUBLE_ROUNDOFF


def exact_scores(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int,
                 positions: np.ndarray, chunk_size: int, wanted: np.ndarray | None = None,
                 exact: bool = True, threads: int | None = None) -> np.ndarray:
    """cosine_rows of each query (row) with each of its candidate documents (corpus positions) where `wanted`
    (default: all; -inf elsewhere), in one pass over the corpus in chunk order: the pairs are sorted by chunk,
    then by query, once; each chunk that holds some is read once (`documents`), its candidates' rows taken (in
    float32 where the chunk is, widened a block at a time) and scored in blocks of RESCORE_ROWS pairs (a query's
    pairs in a chunk side by side, so its row is read from cache). Never a gather of rows from all over the
    store, never more than one chunk of vectors. `exact=False`: the approximate kernel (unrounded, BLAS).
    `threads`: the blocks' threads (default: `rescore_threads()`)."""
    width = positions.shape[1]
    pairs = np.flatnonzero(wanted) if wanted is not None else np.arange(positions.size)
    pairs = pairs.astype(np.int32 if positions.size < 2**31 else np.int64)  # Q x width of them: kept small
    chunk_of = positions.reshape(-1)[pairs]
    np.floor_divide(chunk_of, chunk_size, out=chunk_of)
    n_chunks = -(-n_docs // chunk_size)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(chunk_of, minlength=n_chunks))])
    keys = chunk_of.astype(np.int16 if n_chunks < 2**15 else np.int64)  # 16-bit keys sort by radix
    del chunk_of
    pairs = pairs[np.argsort(keys, kind="stable")]  # stable: within a chunk, pairs stay in query order
    del keys
    scores = np.full(positions.size, -np.inf, dtype=np.float64)
    queries64 = np.asarray(queries, dtype=np.float64)
    query_norms = checked_norms(queries64)  # once, not per pair: the same numbers (checked_norms)
    pair_rows = PairRows(queries64.shape[1])
    with ThreadPoolExecutor(rescore_threads(threads)) as pool:
        for number in range(n_chunks):
            low, high = int(bounds[number]), int(bounds[number + 1])
            if low == high:
                continue  # no candidate in this chunk: not read
            start = number * chunk_size
            chunk = documents(start, min(start + chunk_size, n_docs))
            in_chunk = pairs[low:high]
            local = positions.reshape(-1)[in_chunk] - start
            needed = np.flatnonzero(np.bincount(local, minlength=len(chunk)))
            row_of = np.empty(len(chunk), dtype=np.int64)
            row_of[needed] = np.arange(len(needed))
            rows = np.asarray(chunk)[needed]  # only the candidates' rows: float32 stays float32 (half the gather)
            if rows.dtype != np.float32:
                rows = rows.astype(np.float64)
            del chunk
            row_norms = np.concatenate([checked_norms(rows[r:r + NORM_ROWS]) for r in range(0, len(rows), NORM_ROWS)])
            where = row_of[local]

            def score(block: int, in_chunk: np.ndarray = in_chunk, where: np.ndarray = where,
                      rows: np.ndarray = rows, row_norms: np.ndarray = row_norms) -> None:
                these = in_chunk[block:block + RESCORE_ROWS]
                queries_of, docs_of = these // width, where[block:block + RESCORE_ROWS]
                dots = pair_dots(queries64, queries_of, rows, docs_of, pair_rows, exact)
                q_norms, d_norms = query_norms[queries_of], row_norms[docs_of]
                scores[these] = cosine_of_dots(dots, q_norms, d_norms) if exact else dots / (q_norms * d_norms)

            list(pool.map(score, range(0, high - low, RESCORE_ROWS)))
            del rows, score  # score's defaults hold this chunk's rows: gone before the next chunk's are made
    return scores.reshape(positions.shape)


class PairRows(threading.local):
    """One re-scoring thread's float64 rows for a block of pairs (and the float32 rows they are widened from),
    made once per thread: a fresh array of a few MB a block is a fresh mapping whose page faults cost more than
    the arithmetic (5 x, measured on this machine)."""

    def __init__(self, dim: int) -> None:
        self.queries = np.empty((RESCORE_ROWS, dim))
        self.docs = np.empty((RESCORE_ROWS, dim))
        self.narrow = np.empty((RESCORE_ROWS, dim), dtype=np.float32)


def pair_dots(queries64: np.ndarray, queries_of: np.ndarray, rows: np.ndarray, docs_of: np.ndarray,
               buffers: PairRows, exact: bool = True) -> np.ndarray:
    """row_dots of each pair (query row, document row; rows float64, or float32 widened here: the same float64
    numbers), the pairs in runs of one query: where the runs are long (few queries a block, a small corpus),
    each run meets its query's one row, not a copy of it a pair. Not `exact`: BLAS products for the runs."""
    n = len(docs_of)
    docs = buffers.docs[:n]
    if rows.dtype == np.float64:
        np.take(rows, docs_of, axis=0, out=docs, mode="clip")  # in range: clip never clips
    else:
        docs[...] = np.take(rows, docs_of, axis=0, out=buffers.narrow[:n], mode="clip")
    starts = np.flatnonzero(queries_of[1:] != queries_of[:-1]) + 1
    if (len(starts) + 1) * RUN_PAIRS > n:
        return row_dots(np.take(queries64, queries_of, axis=0, out=buffers.queries[:n], mode="clip"), docs)
    dots = np.empty(n)
    for low, high in zip([0, *starts.tolist()], [*starts.tolist(), n], strict=True):
        query = queries64[queries_of[low]]
        dots[low:high] = row_dots(docs[low:high], query) if exact else docs[low:high] @ query
    return dots
