"""rank_positions (the protocol's search: positions only) against rank_corpus, the full float64 sort it must
equal: ties (equal documents, coarse vectors), near-ties (copies one float32 ulp apart, scaled copies), numpy
and faiss candidates, chunks that split the candidates, a mapper, and the approximate kernel's error bound."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from specrun.search import exact, pairs, ranking
from specrun.search.cosine import checked_norms, row_dots
from specrun.search.exact import rank_corpus, rank_positions
from tests.conftest import require
from tests.protocols.test_corpus_retrieval import brute_force, clustered


def near_ties(seed: int, n_docs: int, n_queries: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Documents that are copies of others, a third of them one float32 ulp away in one coordinate, some scaled
    (the same cosine in another norm): cosines equal, or apart by less than 1e-12 or by a few 1e-12."""
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(n_docs, dim)).astype(np.float32)
    copies = rng.choice(n_docs, n_docs // 4, replace=False)
    docs[copies] = docs[rng.integers(0, n_docs, len(copies))]
    nudged = copies[: len(copies) // 3]
    column = rng.integers(0, dim, len(nudged))
    docs[nudged, column] = np.nextafter(docs[nudged, column], np.float32(np.inf))
    docs[copies[-len(copies) // 5:]] *= np.float32(4.0)
    queries = docs[rng.integers(0, n_docs, n_queries)] + rng.normal(size=(n_queries, dim)).astype(np.float32)
    return queries.astype(np.float32), docs


@pytest.mark.parametrize("search", ["numpy", "faiss"])
@pytest.mark.parametrize("case", [
    {"maker": near_ties, "seed": 1, "n_docs": 1_500, "n_queries": 30, "dim": 24},
    {"maker": near_ties, "seed": 2, "n_docs": 3_000, "n_queries": 20, "dim": 384},
    {"maker": clustered, "seed": 3, "n_docs": 800, "n_queries": 25, "dim": 8, "levels": 1},  # ties everywhere
    {"maker": clustered, "seed": 4, "n_docs": 900, "n_queries": 25, "duplicates": 300},
    {"maker": clustered, "seed": 5, "n_docs": 40, "n_queries": 5},  # depth + margin covers the corpus
])
@pytest.mark.parametrize("depth", [1, 25, 300])
def test_positions_are_rank_corpus_positions(case: dict, depth: int, search: str) -> None:
    if search == "faiss":
        require("faiss")
    options = dict(case)
    queries, docs = options.pop("maker")(**options)
    for chunk in (97, 1_000):
        want_i, _, want_fallbacks = rank_corpus(queries, lambda a, b: docs[a:b], len(docs), depth, search=search,
                                                chunk_size=chunk)
        got_i, fallbacks = rank_positions(queries, lambda a, b: docs[a:b], len(docs), depth, search=search,
                                          chunk_size=chunk)
        np.testing.assert_array_equal(got_i, want_i)
        assert fallbacks >= want_fallbacks  # its proof is rank_corpus's, from a bound a hair looser
    np.testing.assert_array_equal(got_i, brute_force(queries, docs, depth)[0])


def test_near_ties_are_scored_exactly_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kept candidate gets the approximate kernel; the exact one only the few near-ties (the copies)."""
    queries, docs = near_ties(6, 2_000, 20, 32)
    asked: list[tuple[bool, int]] = []
    score_pairs = ranking.exact_scores

    def counting(*args: object, **kwargs: object) -> np.ndarray:
        asked.append((bool(kwargs.get("exact", True)), int(kwargs["wanted"].sum())))  # type: ignore[union-attr]
        return score_pairs(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ranking, "exact_scores", counting)
    got_i, fallbacks = rank_positions(queries, lambda a, b: docs[a:b], len(docs), 100, chunk_size=300)
    assert [kind for kind, _ in asked] == [False, True]
    assert asked[0][1] >= 100 * len(queries) and 0 < asked[1][1] < asked[0][1] / 2, asked  # a quarter are copies
    np.testing.assert_array_equal(got_i, brute_force(queries, docs, 100)[0])
    assert fallbacks == 0


def test_a_chunk_mapper_gives_the_same_positions() -> None:
    queries, docs = near_ties(7, 1_200, 15, 16)

    def in_turn(function: object, shared: object, items: object) -> object:
        for item in items:  # type: ignore[attr-defined]
            yield function(shared, *item)  # type: ignore[operator]

    local = rank_positions(queries, lambda a, b: docs[a:b], len(docs), 40, chunk_size=128)
    mapped = rank_positions(queries, lambda a, b: docs[a:b], len(docs), 40, chunk_size=128, mapper=in_turn)
    assert np.array_equal(local[0], mapped[0]) and local[1] == mapped[1]
    np.testing.assert_array_equal(local[0], rank_corpus(queries, lambda a, b: docs[a:b], len(docs), 40,
                                                        chunk_size=128)[0])


def test_ties_beyond_the_candidates_take_the_exact_scan() -> None:
    rng = np.random.default_rng(4)
    docs = rng.normal(size=(400, 16)).astype(np.float32)
    docs[rng.choice(400, 150, replace=False)] = docs[7]  # 151 equal documents, more than top_k + margin
    queries = (docs[7] + 0.01 * rng.normal(size=(5, 16))).astype(np.float32)
    got_i, fallbacks = rank_positions(queries, lambda a, b: docs[a:b], len(docs), 10, chunk_size=64)
    assert fallbacks == 5
    np.testing.assert_array_equal(got_i, brute_force(queries, docs, 10)[0])


@pytest.mark.parametrize("dense_share", [0, 10**9], ids=["gathered", "dense"])
@pytest.mark.parametrize("dim", [1, 7, 384, 1024])
def test_the_approximate_kernel_is_within_its_bound(dim: int, dense_share: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """BLAS dot products against cosine_rows' einsum, unrounded, on float32 vectors of mixed scales (the bound
    holds for any order of summation; this checks the kernel is the one the bound speaks of), from both ways of
    computing them: a BLAS dot a query's run of gathered rows, or the chunk's whole product (dgemm)."""
    monkeypatch.setattr(pairs, "DENSE_SHARE", dense_share)
    monkeypatch.setattr(pairs, "DENSE_BYTES", 8 * 128 * 7)  # 7 queries a block of the 128-row chunks: 5 blocks
    rng = np.random.default_rng(dim)
    queries = (rng.normal(size=(30, dim)) * rng.uniform(0.01, 100, size=(30, 1))).astype(np.float32)
    docs = (rng.normal(size=(500, dim)) * rng.uniform(0.01, 100, size=(500, 1))).astype(np.float32)
    positions = np.argsort(rng.random(size=(30, 500)), axis=1)[:, :200]
    wanted = rng.random(size=positions.shape) < 0.8  # some pairs not scored: -inf, in either kernel
    approx = pairs.exact_scores(queries, lambda a, b: docs[a:b], len(docs), positions, 128, wanted=wanted,
                                exact=False)
    q64, d64 = queries.astype(np.float64), docs.astype(np.float64)
    norms = checked_norms(q64)[:, None] * checked_norms(d64)[positions]
    einsum = np.stack([row_dots(d64[positions[q]], q64[q]) for q in range(30)]) / norms
    assert np.isneginf(approx[~wanted]).all()
    assert np.abs(approx - einsum)[wanted].max() <= pairs.approximate_error(dim)
    rounded = pairs.exact_scores(queries, lambda a, b: docs[a:b], len(docs), positions, 128)
    assert rounded.tobytes() == np.round(einsum, 12).tobytes()  # the exact kernel: cosine_rows' numbers
    assert exact.exact_scores is pairs.exact_scores


@pytest.mark.parametrize("case", [
    {"maker": near_ties, "seed": 12, "n_docs": 1_200, "n_queries": 40, "dim": 48},  # copies, one-ulp copies
    {"maker": clustered, "seed": 13, "n_docs": 900, "n_queries": 30, "dim": 8, "levels": 1},  # ties everywhere
])
def test_the_dense_and_the_gathered_products_give_the_same_positions(case: dict,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The approximate pass multiplies a chunk whole where its pairs fill enough of it (DENSE_SHARE), else
    gathers each pair's row: the same positions either way, and a full sort's, in one chunk or several, the
    product in one block of queries or many."""
    options = dict(case)
    queries, docs = options.pop("maker")(**options)
    want = brute_force(queries, docs, 150)[0]
    for share, block_bytes in ((0, pairs.DENSE_BYTES), (10**9, pairs.DENSE_BYTES), (10**9, 8 * 97 * 3)):
        monkeypatch.setattr(pairs, "DENSE_SHARE", share)
        monkeypatch.setattr(pairs, "DENSE_BYTES", block_bytes)  # (the last: 3 queries a block of 97 rows)
        for chunk in (97, 1_000):
            got, _ = rank_positions(queries, lambda a, b: docs[a:b], len(docs), 150, chunk_size=chunk)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", [
    {"maker": near_ties, "seed": 10, "n_docs": 2_500, "n_queries": 40, "dim": 48},  # copies, one-ulp copies
    {"maker": clustered, "seed": 11, "n_docs": 2_200, "n_queries": 30, "dim": 8, "levels": 1},  # ties everywhere
])
def test_narrow_blocks_and_small_tasks_give_the_same_positions(case: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of scores narrower than a chunk (every chunk after the first), and the re-scoring in small blocks
    and tasks (runs of one query's pairs cut between them): the positions of whole-chunk blocks, and of a full
    sort."""
    options = dict(case)
    queries, docs = options.pop("maker")(**options)
    want = rank_positions(queries, lambda a, b: docs[a:b], len(docs), 150, chunk_size=1_000)
    monkeypatch.setattr(exact, "COLUMNS", 37)  # 27 blocks a chunk after the first, the last one narrower
    monkeypatch.setattr(exact, "BLOCK_BYTES", 4 * 37 * 9)  # 9 queries a block: several blocks, on threads
    monkeypatch.setattr(pairs, "RESCORE_ROWS", 100)  # runs of ~60 pairs a query a chunk, cut between blocks
    monkeypatch.setattr(pairs, "TASK_PAIRS", 300)
    got = rank_positions(queries, lambda a, b: docs[a:b], len(docs), 150, chunk_size=1_000)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    np.testing.assert_array_equal(got[0], brute_force(queries, docs, 150)[0])


@pytest.mark.parametrize("case", [
    {"maker": near_ties, "seed": 8, "n_docs": 2_500, "n_queries": 60, "dim": 48},  # copies, one-ulp copies
    {"maker": clustered, "seed": 9, "n_docs": 1_800, "n_queries": 50, "dim": 8, "levels": 1},  # ties everywhere
])
def test_blocks_of_queries_on_threads_keep_what_one_thread_keeps(case: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidate pass with its blocks of queries on threads (tiny blocks: many a chunk) keeps the very slots
    one thread keeps, and the order's blocks of rows on threads give the same rankings; both did run on threads."""
    options = dict(case)
    queries, docs = options.pop("maker")(**options)
    monkeypatch.setattr(exact, "BLOCK_BYTES", 4 * 300 * 7)  # 7 queries a block of a 300-row chunk
    monkeypatch.setattr(ranking, "ROWS", 16)  # 4 blocks of rows to order
    pools: list[object] = []
    row_pools: list[int] = []
    monkeypatch.setattr(ranking, "ThreadPoolExecutor", lambda n: row_pools.append(n) or ThreadPoolExecutor(n))
    monkeypatch.setattr(pairs, "usable_cores", lambda: 4)  # three threads are run, whatever this machine has
    block_threads = exact._block_threads

    def spying(*args: object) -> object:
        with block_threads(*args) as pool:  # type: ignore[arg-type]
            pools.append(pool)
            yield pool

    monkeypatch.setattr(exact, "_block_threads", exact.contextmanager(spying))
    results = []
    for threads in (1, 2, 3):
        found = exact.candidates(queries, lambda a, b: docs[a:b], len(docs), 140, chunk_size=300, threads=threads)
        positions = rank_positions(queries, lambda a, b: docs[a:b], len(docs), 120, chunk_size=300, threads=threads)
        ranked = rank_corpus(queries, lambda a, b: docs[a:b], len(docs), 120, chunk_size=300, threads=threads)
        results.append((*found, positions[0], *ranked[:2]))
    assert [pool is None for pool in pools] == [True] * 3 + [False] * 6  # three searches a thread count
    assert row_pools == [2, 2, 2, 3, 3, 3]  # rank_positions' three stages of blocks of rows, at 2 and 3 threads
    for threaded in results[1:]:
        for got, want in zip(threaded, results[0], strict=True):
            assert got.dtype == want.dtype and np.array_equal(got, want)
    np.testing.assert_array_equal(results[0][2], brute_force(queries, docs, 120)[0])
