"""A corpus encoded from its digests: looked up in the store by digest array (`CorpusLookup`), its missing texts
read from its file a window at a time in file order, batched canonically within the window, each group a shard
(`encode_corpus`); never a list of texts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specrun.core.corpus import SharedCorpus
from specrun.encoders.executors import Executor
from specrun.encoders.shards import ROW_BITS, Block
from specrun.encoders.store import EmbeddingCache
from specrun.encoders.vectors import CorpusVectors, Encoding, GroupChecks


@dataclass
class CorpusLookup:
    """A corpus during lookup and encoding: its distinct texts (first positions, each document's index among
    them) and where each distinct text's vector is (-1: not yet)."""

    corpus: SharedCorpus
    first: np.ndarray
    inverse: np.ndarray
    blocks: list[Block]
    places: np.ndarray

    encoded: int = 0  # distinct texts sent to the model in this run

    @property
    def missing(self) -> np.ndarray:
        return np.flatnonzero(self.places < 0)

    def found_again(self, cache: EmbeddingCache) -> int:
        """Look the missing texts up once more (texts this run has stored since the first lookup); how many
        were found."""
        missing = self.missing
        if not len(missing):
            return 0
        blocks, places = cache.lookup_digests(self.corpus.text_digests, self.first[missing])
        found = places >= 0
        shift = len(self.blocks) << ROW_BITS  # their blocks go after this corpus' own
        self.blocks.extend(blocks)
        self.places[missing[found]] = places[found] + shift
        return int(found.sum())

    def vectors(self) -> CorpusVectors:
        return CorpusVectors(blocks=self.blocks, places=self.places[self.inverse], unique=len(self.first),
                             encoded=self.encoded)


CORPUS_WINDOW_TEXTS = 32_768  # a corpus' distinct texts read, batched and handed to the executor at once


def encode_corpus(executor: Executor, lookup: CorpusLookup, encoding: Encoding, cache: EmbeddingCache | None,
                  checks: GroupChecks, advance: Callable[[int], None] = lambda done: None) -> None:
    """A corpus' missing distinct texts, in file order of their first document, a window of
    `CORPUS_WINDOW_TEXTS` at a time read from its source and batched canonically within the window (the batches
    depend on the corpus and on which of its texts the store held already); each group is stored as a shard and
    placed in `lookup`. So a window's shards hold documents that lie together in the file, and the search, which
    reads the corpus in file order, reads a chunk from a few shards instead of a row from each. Nothing per
    document but arrays."""
    missing = lookup.missing
    corpus, (role, prompt) = lookup.corpus, encoding
    positions = lookup.first[missing]  # ascending: `unique` gives distinct texts in file order
    for start in range(0, len(missing), CORPUS_WINDOW_TEXTS):
        window = np.arange(start, min(start + CORPUS_WINDOW_TEXTS, len(missing)))
        window_texts = corpus.texts_at(positions[window])
        for indices, group in executor.groups(window_texts, role, prompt):
            rows = window[np.asarray(indices, dtype=np.int64)]
            texts = [window_texts[i] for i in indices]
            group = checks.checked(group, texts, lookup.blocks)
            shard = cache.store_digests(corpus.text_digests[positions[rows]].tobytes(), group) if cache else None
            lookup.blocks.append(shard if shard else group)
            lookup.places[missing[rows]] = (len(lookup.blocks) - 1) << ROW_BITS | np.arange(len(rows))
            lookup.encoded += len(rows)
            advance(len(indices))
