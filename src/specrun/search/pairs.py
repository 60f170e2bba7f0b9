"""Float64 cosines of chosen (query, candidate document) pairs, in one pass over the corpus in chunk order: the
exact search's second pass (`exact.rank_corpus`).

Two kernels, the same pass: `exact` gives cosine_rows' numbers (einsum dot products, rounded to 12 decimals);
`approximate` gives the unrounded cosine from BLAS dot products (about 4 x faster a pair than einsum, measured),
within `approximate_error` of the exact one before rounding: enough to order every pair but near-ties by it.
Where a chunk's pairs fill over 1 / DENSE_SHARE of its queries x rows (a small corpus: a query keeps a tenth of
10k documents), the approximate kernel multiplies blocks of queries with the chunk whole (dgemm, DENSE_BYTES of
dots a thread) and picks its pairs' dots: more arithmetic, but no gather of a row a pair.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import partial

import numpy as np

from specrun.search.cosine import checked_norms, cosine_of_dots, row_dots

RESCORE_ROWS = 1_024  # (query, candidate) pairs re-scored per block (float64 rows of both sides: ~6 MB at 384)
TASK_PAIRS = 8 * RESCORE_ROWS  # pairs a thread's task: fewer tasks, fewer wake-ups of the waiting thread
RUN_PAIRS = 16  # pairs of one query a block, on average, from which its row is met as one row, not copied
RESCORE_THREADS = 4  # by default at most this many re-scoring threads (gathers, einsum and BLAS release the GIL)
DENSE_SHARE = 20  # a chunk with pairs in over 1 / 20 of its (query, row) cells is multiplied whole (approximate)
DENSE_BYTES = 16 * 2**20  # one block of a dense product's float64 dots, queries x the chunk's rows
NORM_ROWS = 4_096  # rows whose norms are taken at once: a chunk's rows are never all copied to float64
DOUBLE_ROUNDOFF = 2.0**-53
_BLAS_LIMIT = threading.Lock()  # held while a search holds BLAS at one thread


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system says, else the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def search_threads(requested: int | None = None) -> int:
    """The threads a search computes on: `requested` (the run's --search-threads), else as many as BLAS has (it
    honours OMP_NUM_THREADS and OPENBLAS_NUM_THREADS); at most the usable cores (more only wait on each other)."""
    if not requested:
        from threadpoolctl import threadpool_info

        requested = max((lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"), default=1)
    return max(1, min(requested, usable_cores()))


def rescore_threads(requested: int | None = None) -> int:
    """The re-scoring's and the order's threads: `requested`'s, else search_threads' default up to RESCORE_THREADS."""
    return search_threads(requested) if requested else min(RESCORE_THREADS, search_threads())


@contextmanager
def one_blas_thread(threads: int = 1) -> Iterator[None]:
    """BLAS at one thread (or `threads`) while a search's own threads multiply (BLAS' threads would wait spinning
    beside them). The limit is process-wide: two searches on threads at once take turns, or one could restore the
    other's limit under it (and BLAS stay at one thread after both)."""
    from threadpoolctl import threadpool_limits

    with _BLAS_LIMIT, threadpool_limits(threads, user_api="blas"):
        yield


def approximate_error(dim: int) -> float:
    """An upper bound on |approximate - exact| cosine (both unrounded, the same norms): two float64 dot products
    of the same float64 numbers in any order differ by at most 2 gamma_dim |q| |d| (gamma_dim ~ dim u), the
    divisions add u each; doubled for room."""
    return (4.0 * dim + 16.0) * DOUBLE_ROUNDOFF


def exact_scores(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int,
                 positions: np.ndarray, chunk_size: int, wanted: np.ndarray | None = None,
                 exact: bool = True, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
    """cosine_rows of each query (row) with each of its candidate documents (corpus positions) where `wanted`
    (default: all; -inf elsewhere), in one pass over the corpus in chunk order: the pairs are sorted by chunk,
    then by query, once (a group of queries a thread); each chunk that holds some is read once (`documents`), its
    candidates' rows taken (in float32 where the chunk is, widened a block at a time; for the approximate kernel
    widened once into a float64 buffer the size of a chunk) and scored in blocks of RESCORE_ROWS pairs, tasks of
    TASK_PAIRS on the threads (a query's pairs in a chunk side by side, so its row is read from cache). Never a
    gather of rows from all over the store, never more than one chunk of vectors. `exact=False`: the approximate
    kernel (unrounded, BLAS at one thread). `out`: a float64 array of positions' shape to fill (a fresh one is
    memory the kernel zeroes, 90 MB at 10k x 1,125). `threads`: the pass' threads (`rescore_threads`)."""
    n_chunks = -(-n_docs // chunk_size)
    scores = np.empty(positions.size) if out is None else out.reshape(-1)
    scores.fill(-np.inf)
    queries64 = np.asarray(queries, dtype=np.float64)
    wide = None if exact else np.empty((min(chunk_size, n_docs), queries64.shape[1]))  # (reused by every chunk)
    threads = rescore_threads(threads)
    step = -(-len(positions) // threads) or 1
    with one_blas_thread() if not exact else nullcontext(), ThreadPoolExecutor(threads) as pool:
        scoring = _ChunkScoring(scores, queries64, positions.shape[1], exact, pool, threads)
        sorted_by = list(pool.map(partial(_by_chunk, positions, wanted, chunk_size, n_chunks),
                                  [slice(low, low + step) for low in range(0, len(positions), step)]))
        for number in range(n_chunks):
            in_chunk = np.concatenate([cells[bounds[number]:bounds[number + 1]] for cells, bounds in sorted_by])
            if not in_chunk.size:
                continue  # no candidate in this chunk: not read
            start = number * chunk_size
            chunk = documents(start, min(start + chunk_size, n_docs))
            rows, where = _rows_of(chunk, positions.reshape(-1)[in_chunk] - start)
            del chunk
            scoring.chunk(in_chunk, where, *_normed(rows, pool, wide))
            del rows  # gone before the next chunk's are made
    return scores.reshape(positions.shape)


class _ChunkScoring:
    """One pass' scoring of its chunks' pairs: where the scores go, the queries (float64, their norms taken once,
    not per pair: the same numbers, `checked_norms`), the kernel, and the pool with each thread's buffers."""

    def __init__(self, scores: np.ndarray, queries64: np.ndarray, width: int, exact: bool,
                 pool: ThreadPoolExecutor, threads: int) -> None:
        self.scores, self.queries64, self.width, self.exact = scores, queries64, width, exact
        self.query_norms = checked_norms(queries64)
        self.pool, self.threads = pool, threads
        self.pair_rows = PairRows(queries64.shape[1])
        self.dense_blocks = threading.local()

    def chunk(self, in_chunk: np.ndarray, where: np.ndarray, rows: np.ndarray, row_norms: np.ndarray) -> None:
        """Score a chunk's pairs (`in_chunk`, flat cells in query order; `where`, each one's row of `rows`): by
        the dense product where the approximate kernel's pairs fill enough of it (DENSE_SHARE), else gathered
        in blocks of RESCORE_ROWS pairs, tasks of TASK_PAIRS on the threads."""
        if not self.exact and len(in_chunk) * DENSE_SHARE >= len(self.queries64) * len(rows):
            self._dense(in_chunk, where, rows, row_norms)
            return
        gathered = partial(self._gathered, in_chunk, where, rows, row_norms)
        list(self.pool.map(gathered, range(0, len(in_chunk), TASK_PAIRS)))

    def _gathered(self, in_chunk: np.ndarray, where: np.ndarray, rows: np.ndarray, row_norms: np.ndarray,
                  task: int) -> None:
        """One task's pairs, a block at a time: each pair's row gathered (`pair_dots`)."""
        for block in range(task, min(task + TASK_PAIRS, len(in_chunk)), RESCORE_ROWS):
            these = in_chunk[block:block + RESCORE_ROWS]
            queries_of, docs_of = these // self.width, where[block:block + RESCORE_ROWS]
            dots = pair_dots(self.queries64, queries_of, rows, docs_of, self.pair_rows, self.exact)
            q_norms, d_norms = self.query_norms[queries_of], row_norms[docs_of]
            self.scores[these] = cosine_of_dots(dots, q_norms, d_norms) if self.exact else dots / (q_norms * d_norms)

    def _dense(self, in_chunk: np.ndarray, where: np.ndarray, rows: np.ndarray, row_norms: np.ndarray) -> None:
        """The approximate kernel's cosines of a chunk's pairs from the whole product of blocks of queries with
        the rows (dgemm, float64 rows): every dot there is a BLAS dot product of the same float64 numbers, so
        within `approximate_error` of the exact cosine as the gathered one is. Where a query keeps a tenth of the
        chunk (10k documents, top 1,000) the pass takes two thirds of the gathers' time (1.45 against 2.2 s at
        10k queries; measured: the break-even near a twentieth, DENSE_SHARE). A block of queries a task, its dots
        in the thread's buffer (DENSE_BYTES), and at least one block for each thread."""
        n_queries, width = len(self.queries64), self.width
        block = max(1, min(DENSE_BYTES // (8 * len(rows)), -(-n_queries // self.threads)))
        firsts = np.minimum(np.arange(0, n_queries + block, block), n_queries) * width  # in in_chunk's range
        bounds = np.searchsorted(in_chunk, firsts.astype(in_chunk.dtype))  # (no int64 copy of in_chunk)
        buffers = self.dense_blocks

        def score(number: int) -> None:
            low, high = int(bounds[number]), int(bounds[number + 1])
            if low == high:
                return
            first = number * block
            queries = self.queries64[first:first + block]
            if not hasattr(buffers, "dots") or buffers.dots.shape[1] != len(rows):
                buffers.dots = np.empty((block, len(rows)))
            dots = np.matmul(queries, rows.T, out=buffers.dots[:len(queries)])
            cells, docs_of = in_chunk[low:high], where[low:high]
            queries_of = cells // width
            flat = (queries_of - first) * len(rows) + docs_of  # one flat index: a (row, column) pair's costs 2 x
            self.scores[cells] = dots.reshape(-1)[flat] / (self.query_norms[queries_of] * row_norms[docs_of])

        list(self.pool.map(score, range(len(bounds) - 1)))


def _by_chunk(positions: np.ndarray, wanted: np.ndarray | None, chunk_size: int, n_chunks: int,
              rows: slice) -> tuple[np.ndarray, np.ndarray]:
    """The wanted cells of `rows` (flat indices into `positions`) sorted by chunk, then by query, and where each
    chunk's start: one group of rows a thread (the sort and its gathers are most of the pass' setup)."""
    width = positions.shape[1]
    part = positions[rows]
    cells = np.flatnonzero(wanted[rows]) if wanted is not None else np.arange(part.size)
    cells = cells.astype(np.int32 if positions.size < 2**31 else np.int64)  # Q x width of them: kept small
    chunk_of = part.reshape(-1)[cells]
    np.floor_divide(chunk_of, chunk_size, out=chunk_of)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(chunk_of, minlength=n_chunks))])
    keys = chunk_of.astype(np.int16 if n_chunks < 2**15 else np.int64)  # 16-bit keys sort by radix
    del chunk_of
    cells = cells[np.argsort(keys, kind="stable")]  # stable: within a chunk, pairs stay in query order
    cells += (rows.start or 0) * width
    return cells, bounds


def _normed(rows: np.ndarray, pool: ThreadPoolExecutor,
            wide: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """A chunk's rows and their checked_norms, NORM_ROWS rows a task on the pool; with `wide` (a float64 buffer),
    the rows widened into it first and returned in their place: the approximate kernel then takes float64 rows
    (one cast a chunk, not one a pair: 0.13 against 0.17 us a pair on 2 threads, measured)."""
    into = rows if wide is None else wide[:len(rows)]

    def normed(low: int) -> np.ndarray:
        if wide is not None:
            into[low:low + NORM_ROWS] = rows[low:low + NORM_ROWS]
        return checked_norms(into[low:low + NORM_ROWS])

    return into, np.concatenate(list(pool.map(normed, range(0, len(rows), NORM_ROWS))))


def _rows_of(chunk: np.ndarray, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a chunk its pairs need (float32 stays float32: half the gather; all of them: the chunk as it
    is, not copied) and each pair's row among them."""
    counts = np.bincount(local, minlength=len(chunk))
    chunk = np.asarray(chunk)
    if counts.all():
        rows, where = chunk, local
    else:
        needed = np.flatnonzero(counts)
        row_of = np.empty(len(chunk), dtype=np.int64)
        row_of[needed] = np.arange(len(needed))
        rows, where = chunk[needed], row_of[local]
    return (rows if rows.dtype == np.float32 else rows.astype(np.float64)), where


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
    each run meets its query's one row, not a copy of it a pair. Not `exact`: a BLAS product a run, its rows
    taken for it alone, so they are still in cache when multiplied (a block's rows at once were 3 MB of float64
    written and read back: 1.8 x the time a pair, measured)."""
    n = len(docs_of)
    starts = np.flatnonzero(queries_of[1:] != queries_of[:-1]) + 1
    if (len(starts) + 1) * RUN_PAIRS > n:
        docs = _widened(rows, docs_of, buffers)
        return row_dots(np.take(queries64, queries_of, axis=0, out=buffers.queries[:n], mode="clip"), docs)
    dots = np.empty(n)
    runs = zip([0, *starts.tolist()], [*starts.tolist(), n], strict=True)
    if exact:
        docs = _widened(rows, docs_of, buffers)
        for low, high in runs:
            dots[low:high] = row_dots(docs[low:high], queries64[queries_of[low]])
        return dots
    for low, high in runs:
        np.dot(_widened(rows, docs_of[low:high], buffers), queries64[queries_of[low]], out=dots[low:high])
    return dots


def _widened(rows: np.ndarray, docs_of: np.ndarray, buffers: PairRows) -> np.ndarray:
    """The float64 rows `docs_of` of `rows` in the thread's buffer: taken as they are (float32 stays float32: half
    the gather), then widened."""
    n = len(docs_of)
    docs = buffers.docs[:n]
    if rows.dtype == np.float64:
        np.take(rows, docs_of, axis=0, out=docs, mode="clip")  # in range: clip never clips
    else:
        docs[...] = np.take(rows, docs_of, axis=0, out=buffers.narrow[:n], mode="clip")
    return docs
