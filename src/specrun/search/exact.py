"""Exact top-k search of a corpus by cosine, without a queries x documents matrix.

The corpus is read through `documents(start, stop)` in chunks of `chunk_size` rows and searched exactly:

1. candidates: float32 cosines of the normalised queries with the chunk, normalised once (numpy, by blocks of
   at most `BLOCK_BYTES` of scores; or faiss' exact `IndexFlatIP`), keeping the best `top_k + margin` per query
   in `BestScores` (a compare per block; a query is cut back to its best only when its spare slots run out);
   numpy's blocks (disjoint queries) are met on threads, BLAS at one thread each (`_block_threads`);
2. exact order: the candidates that can still reach the top `top_k` (float32 score within twice the error bound
   of the query's top_k-th) are re-scored as `cosine_rows` scores (float64, rounded to 12 decimals, so equal
   cosines are equal numbers) in a second pass over the corpus in chunk order (`pairs.exact_scores`), and sorted by
   score, highest first, then by corpus order. A bound on the float32 error proves, per query, that no document
   outside the candidates can enter (or tie into) the top `top_k`; a query without that proof is ranked by an
   exact float64 scan of the corpus. `rank_positions` (the protocol's call: no scores) orders the same
   candidates by approximate float64 cosines, proven to order all but near-ties, and re-scores only those
   (`ranking`): the same positions for about half the re-scoring's time.

So numpy and faiss give the same ranking, and the ranking is the one a full float64 sort would give.
Memory: Q x 2 (top_k + margin) candidate slots (float32 scores and positions), their exact scores, one chunk of
vectors as `documents` returns it and its normalised copy, and one block of scores; never Q x N, never the corpus
matrix. With a mapper given (`core.mapping`: `--executor ray`), step 1's chunks are searched by Ray
actors (`chunk_candidates`, the same arithmetic) and merged here; the mapper bounds the chunks in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

from specrun.core.errors import SpecrunError
from specrun.core.mapping import ChunkMap
from specrun.search.cosine import COSINE_DECIMALS, check_norms, cosine_rows
from specrun.search.pairs import exact_scores, one_blas_thread, search_threads
from specrun.search.ranking import ranked_by_bounds

BLOCK_BYTES = 8 * 2**20  # one block of float32 scores, queries x documents
COLUMNS = 4_096  # a block's documents after the first chunk: sgemm 1.35 x as fast at 512 x 4,096 as at 128 x 16,384
SAMPLE = 8  # a first chunk's bar is guessed from every 8th score
PRESELECT = 4  # a row of a block with over 4 x width scores above its bar is cut within the block first
MERGE_ROWS = 256  # queries of another search's best met at once (a cut copies their slots)
UNIT_ROUNDOFF = 2.0**-24  # float32


def _pad(rows: int, columns: int, first: int = 0) -> np.ndarray:
    """Scores for empty slots: below every cosine (-1 at worst) and all distinct, since introselect on rows of one
    repeated value (-inf) is several times slower (72 against 10 ns a cell, measured at 1,125 of 2,250)."""
    return np.broadcast_to(-2.0 - np.arange(first, first + columns, dtype=np.float32) / 1024, (rows, columns))


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


class BestScores:
    """The best `width` (float32 score, corpus position) of each query seen so far, in `width + spare` slots per
    query: scores above a query's bar (its width-th best when it was last cut) are appended to its free slots,
    and the query is cut back to its best `width` only when they run out. So a block of scores costs one compare
    and the gathering of its few hits, not a partition per chunk (the hits per query fall as 1 / chunks read)."""

    def __init__(self, rows: int, width: int, spare: int | None = None, positions: type = np.int64,
                 pool: ThreadPoolExecutor | None = None) -> None:
        self.width = width  # the slots (C order) are filled on the pool where given: a first touch, zeroed memory
        slots = width + (width if spare is None else spare)
        self.scores = np.empty((rows, slots), dtype=np.float32)
        self.positions = np.empty((rows, slots), dtype=positions)  # int32 where the corpus allows

        def fill(low: int) -> None:
            self.scores[low:low + 1024], self.positions[low:low + 1024] = _pad(1, slots), -1

        list((pool.map if pool is not None else map)(fill, range(0, rows, 1024)))
        self.filled = np.zeros(rows, dtype=np.int64)
        self.bar = np.full(rows, -np.inf, dtype=np.float32)

    def add(self, first: int, scores: np.ndarray, positions: np.ndarray, above: np.ndarray | None = None) -> None:
        """Meet rows first..first + len(scores) with `scores` (those rows x m) of documents at `positions` (m,
        the same for every row, or rows x m); `above`, where given, a caller's buffer of at least rows x m booleans
        for the compare (a fresh one a block is fresh memory the kernel zeroes)."""
        rows = slice(first, first + len(scores))
        scores = np.ascontiguousarray(scores, dtype=np.float32)
        n, m = scores.shape
        bar = self.bar[rows]
        if m > PRESELECT * self.width and not np.isfinite(bar).any():  # rows that hold nothing yet: a first chunk
            bar = self.bar[rows] = self._guess(scores)
        above = np.empty(n * m, dtype=bool) if above is None else above[:n * m]
        hits = np.flatnonzero(np.greater(scores, bar[:, None], out=above.reshape(n, m)))  # in row order
        counts = np.diff(np.searchsorted(hits, np.arange(0, (n + 1) * m, m)))
        if int((self.filled[rows] + counts).max()) > self.scores.shape[1]:
            self._cut(rows, scores, positions, hits, counts)
            return
        if not hits.size:
            return
        places = _places(counts, self.filled[rows], self.scores.shape[1], first)
        self.scores.reshape(-1)[places] = scores.reshape(-1)[hits]
        self.positions.reshape(-1)[places] = _at(positions, hits, m)
        self.filled[rows] += counts

    def _guess(self, scores: np.ndarray) -> np.ndarray:
        """Bars for rows that hold nothing yet, from every SAMPLE-th score: about 1.5 x width of a row's scores
        lie above its bar (checked: a row with fewer than width gets -inf, so all of its scores are met). A
        partition of an eighth of the block and a compare, where a partition of each row with its positions
        cost 3 x as much (measured)."""
        sample = scores[:, ::SAMPLE]
        keep = min(sample.shape[1], -(-3 * self.width // (2 * SAMPLE)))
        guess = np.partition(sample, sample.shape[1] - keep, axis=1)[:, sample.shape[1] - keep]
        guess[np.count_nonzero(scores > guess[:, None], axis=1) < self.width] = -np.inf
        return guess

    def _cut(self, rows: slice, scores: np.ndarray, positions: np.ndarray, hits: np.ndarray,
             counts: np.ndarray) -> None:
        """A block in which some row's slots would overflow: every row of it keeps the best `width` of its slots
        and its new scores (the flat `hits` above its bar, `counts` a row) together. A row with most of the
        block above its bar (the first chunk) brings only the block's own best `width` (one argpartition of the
        row, none of its hits); a block whose rows held nothing yet is not met with their empty slots."""
        width, m, n = self.width, scores.shape[1], len(scores)
        many = np.flatnonzero(counts > PRESELECT * width) if m > width else np.empty(0, dtype=np.int64)
        if many.size and hits.size:
            is_many = np.zeros(n, dtype=bool)
            is_many[many] = True
            hits = hits[~np.repeat(is_many, counts)]
        counts = counts.copy()
        counts[many] = 0
        most = max(width if many.size else 0, int(counts.max()))
        new_s = np.array(_pad(n, most), order="C")
        new_i = np.full((n, most), -1, dtype=self.positions.dtype)
        if many.size:
            block = scores if many.size == n else scores[many]  # (all of them: the first chunk, not copied)
            keep = np.argpartition(block, m - width, axis=1)[:, m - width:]
            new_s[many, :width] = np.take_along_axis(block, keep, axis=1)
            new_i[many, :width] = (positions[keep] if positions.ndim == 1
                                   else np.take_along_axis(positions[many], keep, axis=1))
            del block, keep
        places = _places(counts, np.zeros(n, dtype=np.int64), most)
        new_s.reshape(-1)[places] = scores.reshape(-1)[hits]
        new_i.reshape(-1)[places] = _at(positions, hits, m)
        held = int(self.filled[rows].max())
        if held:  # the slots held, not the empty ones after them
            new_s = np.concatenate([self.scores[rows, :held], new_s], axis=1)
            new_i = np.concatenate([self.positions[rows, :held], new_i], axis=1)
        if new_s.shape[1] > width:  # (never fewer: an overflow brings over width + spare, or width from many)
            keep = np.argpartition(new_s, new_s.shape[1] - width, axis=1)[:, new_s.shape[1] - width:]
            new_s, new_i = np.take_along_axis(new_s, keep, axis=1), np.take_along_axis(new_i, keep, axis=1)
        self.scores[rows, :width] = new_s
        self.positions[rows, :width] = new_i
        self.scores[rows, width:] = _pad(1, self.scores.shape[1] - width, width)
        self.positions[rows, width:] = -1
        self.filled[rows] = width
        self.bar[rows] = new_s.min(axis=1)

    def best(self, pool: ThreadPoolExecutor | None = None, rows_per_cut: int = 1024) -> tuple[np.ndarray, np.ndarray]:
        """Each row's best `width` (scores, positions), unordered, a block of rows at a time (on the pool's threads
        where given: the argpartitions release the GIL); the slots are released."""
        width, n = self.width, len(self.scores)
        out_s, out_i = np.empty((n, width), dtype=np.float32), np.empty((n, width), dtype=np.int64)

        def cut(low: int) -> None:
            held = max(width, int(self.filled[low:low + rows_per_cut].max()))  # a row just cut holds `width`
            block_s, block_i = self.scores[low:low + rows_per_cut, :held], self.positions[low:low + rows_per_cut, :held]
            if held > width:
                keep = np.argpartition(block_s, held - width, axis=1)[:, held - width:]
                block_s, block_i = np.take_along_axis(block_s, keep, axis=1), np.take_along_axis(block_i, keep, axis=1)
            out_s[low:low + rows_per_cut], out_i[low:low + rows_per_cut] = block_s, block_i

        list((pool.map if pool is not None else map)(cut, range(0, n, rows_per_cut)))
        self.scores = self.positions = np.empty((0, 0))
        return out_s, out_i


def _places(counts: np.ndarray, first_free: np.ndarray, columns: int, first: int = 0) -> np.ndarray:
    """Where a block's flat hits (in row order, `counts` a row) go in a C-ordered array of `columns` a row: each
    hit's flat index, in row first + its row, from that row's first free slot on (one flat index, where a
    (row, slot) pair of indices cost 5 x the time to write, measured)."""
    rows = np.arange(first, first + len(counts)) * columns + first_free - (np.cumsum(counts) - counts)
    return np.arange(int(counts.sum())) + np.repeat(rows, counts)


def _at(positions: np.ndarray, hits: np.ndarray, columns: int) -> np.ndarray:
    """The corpus positions of flat hits in a rows x columns block (positions: one per column, or per cell)."""
    return positions[hits % columns] if positions.ndim == 1 else positions.reshape(-1)[hits]


def _faiss() -> Any:
    try:
        import faiss
    except ImportError:
        raise SpecrunError("search: faiss needs faiss-cpu: pip install 'specrun[faiss]'") from None
    return faiss


def _search_chunk(unit_q: np.ndarray, chunk: np.ndarray, start: int, best: BestScores, search: str,
                  pool: ThreadPoolExecutor | None = None) -> None:
    """Meet every query with one chunk's float32 cosines (corpus rows start..start + len(chunk)): the arithmetic
    of every candidate search, in this process or on an actor (`chunk_candidates`). With a `pool`, the blocks of
    queries (disjoint rows of `best`, each met exactly as alone) are met on its threads."""
    unit = np.ascontiguousarray(_unit_rows(chunk))  # once per chunk: a division per block costs a quarter of it
    del chunk
    stop = start + len(unit)
    if search == "faiss":
        index = _faiss().IndexFlatIP(unit.shape[1])
        index.add(unit)
        del unit
        found_s, found_i = index.search(np.ascontiguousarray(unit_q), min(best.width, stop - start))
        _add_in_blocks(best, found_s, found_i.astype(np.int64) + start)
        return
    columns = min(len(unit), COLUMNS) if best.filled.any() else len(unit)  # empty rows: the whole chunk (`_guess`)
    block = max(1, BLOCK_BYTES // (4 * columns))
    block = -(-len(unit_q) // -(-len(unit_q) // block))  # the same rows a block, so the threads finish together
    positions = np.arange(start, stop, dtype=np.int64)
    buffers = threading.local()

    def meet(q: int) -> None:
        queries = unit_q[q:q + block]
        if not hasattr(buffers, "scores"):  # one block of scores a thread, reused: no fresh mapping a block
            buffers.scores = np.empty(block * columns, dtype=np.float32)
            buffers.above = np.empty(block * columns, dtype=bool)
        for low in range(0, len(unit), columns):  # a row's blocks in corpus order, one after the other
            part = unit[low:low + columns]
            scores = buffers.scores[:len(queries) * len(part)].reshape(len(queries), len(part))
            best.add(q, np.matmul(queries, part.T, out=scores), positions[low:low + columns], buffers.above)

    list((pool.map if pool is not None else map)(meet, range(0, len(unit_q), block)))


@contextmanager
def _block_threads(n_queries: int, chunk_rows: int, search: str,
                   threads: int | None = None) -> Iterator[ThreadPoolExecutor | None]:
    """Threads for a search's blocks of queries, `pairs.search_threads(threads)` of them (at most half the blocks
    of a chunk), BLAS at one thread each meanwhile: a block's cut (compares, argpartition, gathers: numpy releases
    the GIL) then runs beside the other blocks' products instead of alone while BLAS' threads wait. None where a
    chunk has too few blocks to share or faiss multiplies: BLAS as it is, or at `threads` when they are given."""
    blocks = -(-n_queries // max(1, BLOCK_BYTES // (4 * max(1, chunk_rows))))
    width = min(search_threads(threads), blocks // 2) if search == "numpy" and blocks >= 4 else 1
    if width > 1:
        with one_blas_thread(), ThreadPoolExecutor(width) as pool:
            yield pool
    elif threads is not None:
        with one_blas_thread(search_threads(threads)):
            yield None
    else:
        yield None


def _add_in_blocks(best: BestScores, scores: np.ndarray, positions: np.ndarray) -> None:
    """Another search's best per query (queries x width) met a block of queries at a time, so a cut never
    copies every query's slots at once."""
    for q in range(0, len(scores), MERGE_ROWS):
        best.add(q, scores[q:q + MERGE_ROWS], positions[q:q + MERGE_ROWS])


def chunk_candidates(unit_q: np.ndarray, chunk: np.ndarray, start: int, width: int,
                     search: str) -> tuple[np.ndarray, np.ndarray]:
    """One chunk's best min(width, rows) documents per query (float32 scores, corpus positions): what a mapper
    (`core.mapping`, e.g. a Ray actor) computes per chunk; met with the others in `BestScores` it keeps the same
    best `width` scores as the loop in this process, whatever the order of the chunks."""
    chunk = np.asarray(chunk, dtype=np.float32)
    best = BestScores(len(unit_q), min(width, len(chunk)))
    _search_chunk(unit_q, chunk, start, best, search)
    return best.best()


def candidates(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int, width: int, *,
               search: str = "numpy", chunk_size: int = 16_384, mapper: ChunkMap | None = None,
               threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The best `width` documents of each query by float32 cosine, as (scores, corpus positions), unordered.

    `documents(start, stop)` gives the raw vectors of corpus rows start..stop; it is called once per chunk, here,
    in chunk order. With a mapper (`core.mapping`, the run's, e.g. `--executor ray`) each chunk is searched
    there (`chunk_candidates`) and its best merged here; else the chunks are searched in this process, on
    `threads` threads (`_block_threads`)."""
    unit_q = _unit_rows(queries)
    kind = np.int32 if n_docs < 2**31 else np.int64
    if search == "faiss":
        _faiss()  # a missing faiss is one line before any chunk is read
    spans = [(start, min(start + chunk_size, n_docs)) for start in range(0, n_docs, chunk_size)]
    if mapper is not None:
        best = BestScores(len(unit_q), width, positions=kind)
        chunks = ((np.asarray(documents(start, stop), dtype=np.float32), start, width, search)
                  for start, stop in spans)
        for found_s, found_i in mapper(chunk_candidates, unit_q, chunks):
            _add_in_blocks(best, found_s, found_i)
        return best.best()
    with _block_threads(len(unit_q), min(chunk_size, n_docs), search, threads) as pool:
        best = BestScores(len(unit_q), width, positions=kind, pool=pool)
        for start, stop in spans:  # the chunk is held by _search_chunk alone, which frees it once normalised
            _search_chunk(unit_q, np.asarray(documents(start, stop), dtype=np.float32), start, best, search, pool)
        return best.best(pool)


def _ordered(scores: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Per row, the column order: score descending, then corpus position ascending."""
    return np.lexsort((positions, -scores), axis=-1)


def _best_ordered(scores: np.ndarray, positions: np.ndarray, depth: int, rows: int = 1_024) -> np.ndarray:
    """_ordered's first `depth` columns of each row, for scores as cosine_of_dots gives them (an integer count of
    1e-12, or -inf where not scored) and positions distinct within a row: one int64 key a cell (that count, then
    the cell's rank by position in its row), sorted once, where lexsort sorts twice (measured: half the time);
    `rows` rows at a time, so its keys are never Q x width."""
    bits = max(1, (scores.shape[1] - 1).bit_length())
    if bits > 21:  # the key's 63 bits: 41 for the count (2e12 + 1 values), the rest for the rank
        return _ordered(scores, positions)[:, :depth]
    order = np.empty((len(scores), min(depth, scores.shape[1])), dtype=np.int64)
    for low in range(0, len(scores), rows):
        by_position = np.argsort(positions[low:low + rows], axis=1)
        units = np.rint(np.take_along_axis(scores[low:low + rows], by_position, axis=1) * 10.0**COSINE_DECIMALS)
        keys = np.where(np.isfinite(units), 10**COSINE_DECIMALS - units, 2.0**41).astype(np.int64)
        keys <<= bits
        keys |= np.arange(scores.shape[1])
        order[low:low + rows] = np.take_along_axis(by_position, np.argsort(keys, axis=1)[:, :depth], axis=1)
    return order


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


def rank_corpus(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int, depth: int, *,
                search: str = "numpy", chunk_size: int = 16_384, mapper: ChunkMap | None = None,
                threads: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Each query's top min(depth, n_docs) corpus positions and their cosine_rows scores, highest first, ties
    by corpus order; plus how many queries needed the exact scan. The corpus is read only through
    `documents(start, stop)`, a chunk at a time: one pass for the candidates, one for their exact scores; both
    on `threads` threads (default: `pairs.search_threads()`; the same numbers for any count)."""
    queries = np.asarray(queries)
    depth = min(depth, n_docs)
    width = min(n_docs, depth + max(64, depth // 8))
    cand_s, cand_i = candidates(queries, documents, n_docs, width, search=search, chunk_size=chunk_size,
                                mapper=mapper, threads=threads)
    slack = float32_error(queries.shape[1])
    # A candidate more than 2 slack below its query's depth-th best float32 score is below depth others in exact
    # cosine too (each float32 within slack of it, with room to spare for the 12-decimal rounding): not re-scored.
    kth = np.partition(cand_s, width - depth, axis=1)[:, width - depth].astype(np.float64)
    exact = exact_scores(queries, documents, n_docs, cand_i, chunk_size, wanted=cand_s >= (kth - 2 * slack)[:, None],
                         threads=threads)
    order = _best_ordered(exact, cand_i, depth)
    ranked_i = np.take_along_axis(cand_i, order, axis=1)
    ranked_s = np.take_along_axis(exact, order, axis=1)
    del exact, order
    unproven: list[int] = []
    if width < n_docs:  # outside the candidates: float32 <= weakest, so cosine <= weakest + slack
        weakest = cand_s.min(axis=1).astype(np.float64)
        unproven = list(np.flatnonzero(~(weakest + slack < ranked_s[:, -1])))
    for q in unproven:
        ranked_s[q], ranked_i[q] = exact_scan(queries[q], documents, n_docs, depth, chunk_size)
    return ranked_i, ranked_s, len(unproven)


def rank_positions(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int, depth: int, *,
                   search: str = "numpy", chunk_size: int = 16_384, mapper: ChunkMap | None = None,
                   threads: int | None = None) -> tuple[np.ndarray, int]:
    """rank_corpus's positions (the same, to the last one) and fallback count, without its scores: a ranking
    needs exact cosines only for near-ties, so the other candidates are ordered by approximate float64 ones
    (`ranking.ranked_by_bounds`: about half the re-scoring's time)."""
    queries = np.asarray(queries)
    depth = min(depth, n_docs)
    width = min(n_docs, depth + max(64, depth // 8))
    cand_s, cand_i = candidates(queries, documents, n_docs, width, search=search, chunk_size=chunk_size,
                                mapper=mapper, threads=threads)
    ranked_i, unproven = ranked_by_bounds(queries, documents, n_docs, depth, cand_s, cand_i, chunk_size,
                                          float32_error(queries.shape[1]), threads)
    for q in unproven:
        ranked_i[q] = exact_scan(queries[q], documents, n_docs, depth, chunk_size)[1]
    return ranked_i, len(unproven)
