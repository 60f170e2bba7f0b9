"""The exact search's order without its scores (`exact.rank_positions`): `rank_corpus`'s ranking, to the last
position, from cheaper arithmetic where it proves the order.

A ranking needs cosine_rows' numbers (einsum, rounded to 12 decimals) only to order pairs whose cosines are
within about 1e-12 of each other. So the candidates that can reach the top (as `rank_corpus` chooses them) get
approximate float64 cosines (`pairs`: BLAS dot products, within `approximate_error` of the exact ones), are
sorted by them, and split into groups wherever two neighbours' approximate cosines differ by more than twice that
error plus 2.5e-12: such a gap leaves the exact cosines over 2.5e-12 apart, so distinct after rounding, in the
same order. Only the groups of two or more that reach into the top `depth` (near-ties: equal documents, mostly)
are re-scored exactly, in a third pass over the chunks that hold them, and ordered within their group by
(exact score descending, corpus position ascending): `rank_corpus`'s order.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from specrun.search.cosine import COSINE_DECIMALS
from specrun.search.pairs import approximate_error, exact_scores, rescore_threads

TIE_GAP = 2.5e-12  # exact cosines further apart than this are distinct after rounding to 12 decimals
ROUNDING = 1e-12  # a rounded score is within half of this of its cosine; the rest is room for the arithmetic
ROWS = 1_024  # queries ordered at once: the order's own arrays are a block of rows, never Q x width


def ranked_by_bounds(queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int, depth: int,
                     cand_s: np.ndarray, cand_i: np.ndarray, chunk_size: int,
                     slack: float, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each query's top `depth` corpus positions (rank_corpus's order) from its float32 candidates (`cand_s`,
    `cand_i`, within `slack` of the cosines), and the queries whose candidates cannot be proven to hold their
    top `depth`: those are left to the exact scan (their rows here are not an answer). Q x width arrays: the
    scores of one pass at a time (float64, as rank_corpus holds), the rest narrow or a block of rows at a time.
    `threads`: the re-scoring's and the order's (default: `pairs.rescore_threads()`)."""
    width, threads = cand_s.shape[1], rescore_threads(threads)
    error = approximate_error(queries.shape[1])
    approx = exact_scores(queries, documents, n_docs, cand_i, chunk_size, wanted=_reaching(cand_s, depth, slack,
                                                                                           threads),
                          exact=False, threads=threads)
    narrow = np.int16 if width < 2**15 else np.int64
    by_approx, group = np.empty(cand_s.shape, dtype=narrow), np.empty(cand_s.shape, dtype=narrow)
    tied = np.empty(cand_s.shape, dtype=bool)
    kth_approx = np.empty(len(cand_s))

    def grouped(rows: slice, approx: np.ndarray = approx) -> None:
        by_approx[rows], group[rows], tied[rows], kth_approx[rows] = _groups(approx[rows], depth, error)

    _by_rows(grouped, len(cand_s), threads)
    del grouped  # (its default held the scores; the array is the exact pass's, refilled: no fresh memory)
    proven = np.ones(len(cand_s), dtype=bool)
    if width < n_docs:  # outside the candidates: float32 <= weakest, so cosine <= weakest + slack
        weakest = cand_s.min(axis=1).astype(np.float64)
        proven = weakest + slack + ROUNDING < kth_approx - error - ROUNDING
    tied &= proven[:, None]
    exact = None
    if tied.any():  # the near-ties, by their candidates' columns, re-scored exactly into the approximate array
        exact = exact_scores(queries, documents, n_docs, cand_i, chunk_size, wanted=_in_columns(by_approx, tied),
                             out=approx, threads=threads)
    del approx
    ranked = np.empty((len(cand_s), depth), dtype=cand_i.dtype)

    def order(rows: slice) -> None:
        by = by_approx[rows].astype(np.int64)
        units = np.zeros(by.shape, dtype=np.int64)
        if exact is not None:
            scored = np.take_along_axis(exact[rows], by, axis=1)
            units[tied[rows]] = np.rint(scored[tied[rows]] * 10.0**COSINE_DECIMALS)
        ranked[rows] = _in_groups(group[rows].astype(np.int64), units, np.take_along_axis(cand_i[rows], by, axis=1),
                                  depth)

    _by_rows(order, len(cand_s), threads)
    return ranked, np.flatnonzero(~proven)


def _reaching(cand_s: np.ndarray, depth: int, slack: float, threads: int) -> np.ndarray:
    """Which candidates can still reach their query's top `depth`: a float32 score within twice `slack` of the
    row's depth-th (the others are below `depth` of these: rank_corpus' rule), a block of rows at a time."""
    width = cand_s.shape[1]
    wanted = np.empty(cand_s.shape, dtype=bool)

    def reaching(rows: slice) -> None:
        kth = np.partition(cand_s[rows], width - depth, axis=1)[:, width - depth].astype(np.float64)
        wanted[rows] = cand_s[rows] >= (kth - 2 * slack)[:, None]

    _by_rows(reaching, len(cand_s), threads)
    return wanted


def _in_columns(by_approx: np.ndarray, tied: np.ndarray) -> np.ndarray:
    """A mask over the sorted cells (`tied`) put back in the candidates' own columns (`by_approx`: each sorted
    cell's column), a block of rows at a time."""
    out = np.zeros(tied.shape, dtype=bool)
    for low in range(0, len(tied), ROWS):
        rows = slice(low, low + ROWS)
        np.put_along_axis(out[rows], by_approx[rows].astype(np.int64), tied[rows], axis=1)
    return out


def _by_rows(function: Callable[[slice], None], n: int, threads: int) -> None:
    """`function` of each block of rows of n (each writes its own rows only), the blocks on `threads` threads:
    sorts, takes and compares release the GIL, so the order's one-thread stages share the cores. A block is
    ROWS / threads rows, so the blocks in flight hold what one block of ROWS did."""
    threads = threads if n > ROWS else 1
    rows = max(1, ROWS // threads)
    blocks = [slice(low, low + rows) for low in range(0, n, rows)]
    if threads < 2:
        list(map(function, blocks))
        return
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(function, blocks))


def _groups(approx: np.ndarray, depth: int, error: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For rows of approximate cosines (-inf: not scored): the columns by approximate cosine, descending; each
    sorted cell's group (the sorted column its group starts at: neighbours within 2 error + TIE_GAP are one
    group); whether it is a near-tie that decides the top `depth` (a group of 2+ starting there); and each
    row's depth-th approximate cosine."""
    by_approx = np.argsort(-approx, axis=1)  # not scored (-inf) last
    approx = np.take_along_axis(approx, by_approx, axis=1)
    with np.errstate(invalid="ignore"):  # -inf - -inf: not linked
        linked = approx[:, :-1] - approx[:, 1:] <= 2 * error + TIE_GAP
    starts = np.ones(approx.shape, dtype=bool)
    starts[:, 1:] = ~linked
    group = np.where(starts, np.arange(approx.shape[1]), 0)
    np.maximum.accumulate(group, axis=1, out=group)
    tied = ~starts
    tied[:, :-1] |= linked
    tied &= group < depth
    return by_approx, group, tied, approx[:, depth - 1]


def _in_groups(group: np.ndarray, units: np.ndarray, positions: np.ndarray, depth: int) -> np.ndarray:
    """The first `depth` positions of each row ordered by (group, exact score descending, position ascending),
    the cells already in group order: one int64 key a cell (the group, the score's count of 1e-12 below its
    group's first member, the position), sorted once; lexsort where the key's 63 bits do not hold them."""
    below = np.take_along_axis(units, group, axis=1) - units  # 0 outside a near-tie; a few units within one
    below -= below.min()
    group_bits, below_bits = int(group.max()).bit_length(), int(below.max()).bit_length()
    position_bits = max(1, int(positions.max()).bit_length())
    if group_bits + below_bits + position_bits > 63:
        order = np.lexsort((positions, below, group), axis=-1)[:, :depth]
    else:
        keys = (group.astype(np.int64) << (below_bits + position_bits)) | (below << position_bits) | positions
        order = np.argsort(keys, axis=1, kind="stable")[:, :depth]  # nearly sorted already: timsort's best case
    return np.take_along_axis(positions, order, axis=1)
