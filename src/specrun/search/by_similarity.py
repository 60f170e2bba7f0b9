"""Exact top-k search of a corpus by dot product or a negated distance (a protocol's `similarity:` other than
cosine), chunked like the cosine search and never a queries x documents matrix: each chunk's float64 scores
(`similarity_matrix`, rounded to 12 decimals as every similarity) are met with each query's best `depth` so far,
a block of queries at a time. No float32 candidate pass: dot products and distances have no bound as cosines of
unit vectors do, so every score is the exact float64 one; ties go by corpus order, as in the cosine search."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from specrun.search.similarity import similarity_matrix

BLOCK_BYTES = 8 * 2**20  # one block of float64 scores, queries x (chunk + depth)


def rank_corpus_by(function: str, queries: np.ndarray, documents: Callable[[int, int], np.ndarray], n_docs: int,
                   depth: int, chunk_size: int = 16_384) -> tuple[np.ndarray, np.ndarray]:
    """Each query's top min(depth, n_docs) corpus positions and their `function` scores, highest first, ties by
    corpus order; the corpus read once through `documents(start, stop)`, one chunk at a time. Memory: Q x depth
    best (scores, positions), one chunk of vectors, one block of scores."""
    queries = np.asarray(queries, dtype=np.float64)
    depth = min(depth, n_docs)
    best_s = np.full((len(queries), depth), -np.inf)
    best_i = np.full((len(queries), depth), n_docs, dtype=np.int64)  # past every real position: sorts last
    for start in range(0, n_docs, chunk_size):
        stop = min(start + chunk_size, n_docs)
        chunk = np.asarray(documents(start, stop), dtype=np.float64)
        block = max(1, BLOCK_BYTES // (8 * (stop - start + depth)))
        positions = np.arange(start, stop, dtype=np.int64)
        for q in range(0, len(queries), block):
            rows = slice(q, q + block)
            scores = np.concatenate([best_s[rows], similarity_matrix(queries[rows], chunk, function)], axis=1)
            where = np.concatenate([best_i[rows], np.broadcast_to(positions, (len(scores), len(positions)))], axis=1)
            keep = np.lexsort((where, -scores), axis=-1)[:, :depth]  # score descending, then corpus order
            best_s[rows] = np.take_along_axis(scores, keep, axis=1)
            best_i[rows] = np.take_along_axis(where, keep, axis=1)
        del chunk
    return best_i, best_s
