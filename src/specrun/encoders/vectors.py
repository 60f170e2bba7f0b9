"""What the encoder stage hands the stages above: the vectors of a view's texts (`Embeddings`, gathered from the
store's blocks by place), a corpus' vectors by document position (`CorpusVectors`), every view of a run
(`ViewedEmbeddings`), and the checks each group of vectors passes before it is stored."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from specrun.core.corpus import CorpusSlice, SharedCorpus
from specrun.core.errors import ModelError
from specrun.core.settings import AppliedPrompt
from specrun.core.types import View
from specrun.encoders.adapters import EncoderInfo
from specrun.encoders.shards import ROW_BITS, Block


@dataclass(frozen=True)
class Embeddings:
    """The vectors of a set of unique texts, and how they were made. Vectors stay where they are (verified cache
    shards, read when asked for, or this run's groups when nothing is cached): `embed` gathers only the rows asked
    for, so the whole matrix is never built, let alone twice."""

    blocks: Sequence[Block]  # each (rows, dim) float32
    row_of: dict[str, int]  # text -> store.place(block, row)
    info: EncoderInfo
    encoded: frozenset[str]  # texts sent to the model in this run (the rest came from the cache)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return next((block.shape[1] for block in self.blocks), 0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The `Embed` callable protocols use: rows in the order asked, read block by block."""
        where = np.fromiter((self.row_of[text] for text in texts), dtype=np.int64, count=len(texts))
        return gather(self.blocks, where, self.dim)


def gather(blocks: Sequence[Block], where: np.ndarray, dim: int) -> np.ndarray:
    """The rows at those places (`store.place`), in that order, read block by block."""
    out = np.empty((len(where), dim), dtype=np.float32)
    if not len(where):
        return out
    block_of, row_of = where >> ROW_BITS, where & ((1 << ROW_BITS) - 1)
    order = np.argsort(block_of, kind="stable")
    blocks_used, starts = np.unique(block_of[order], return_index=True)
    for block, chunk in zip(blocks_used, np.split(order, starts[1:]), strict=True):
        out[chunk] = blocks[block][row_of[chunk]]
    return out


@dataclass(frozen=True)
class CorpusVectors:
    """A corpus' vectors in one encoding: blocks (shards or groups) and each document's place, one int64 a
    document, so a slice of documents is gathered without a text or a dict."""

    blocks: Sequence[Block]
    places: np.ndarray
    unique: int  # distinct texts
    encoded: int  # distinct texts sent to the model in this run

    @property
    def dim(self) -> int:
        return next((block.shape[1] for block in self.blocks), 0)

    def rows(self, start: int, stop: int) -> np.ndarray:
        return gather(self.blocks, self.places[start:stop], self.dim)

    def chunks(self, size: int = 16_384) -> Iterator[np.ndarray]:
        for start in range(0, len(self.places), size):
            yield self.rows(start, start + size)


def refuse_non_finite(vectors: np.ndarray, texts: Sequence[str]) -> None:
    """NaN or inf in what the model returned is one line naming the first such text, never a vector."""
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if len(bad):
        raise ModelError(f"the model returned {len(bad)} non-finite vector(s) (NaN or inf) in a group of "
                         f"{len(texts)}, the first for the text {texts[bad[0]][:60]!r}; nothing of the group "
                         "was cached")


def refuse_misshapen(vectors: np.ndarray, texts: Sequence[str], dim: int | None, adapter: str) -> None:
    """What the adapter returned for a group must be one row per text, all of the dimension it gave before (and
    the cache holds): anything else is one line naming the adapter, before the store."""
    problem = None
    if vectors.ndim != 2:
        problem = f"an array of shape {vectors.shape}, not (texts, dimensions)"
    elif vectors.shape[0] != len(texts):
        problem = f"{vectors.shape[0]} vector(s) for a group of {len(texts)} texts"
    elif dim is not None and vectors.shape[1] != dim:
        problem = f"vectors of {vectors.shape[1]} dimensions after vectors of {dim}"
    if problem is not None:
        raise ModelError(f"adapter {adapter} returned {problem}; an adapter returns one vector per text, always "
                         "of the same dimension; nothing of the group was cached")


def shaped(vectors: np.ndarray, truncate_dim: int | None, normalize: bool) -> np.ndarray:
    """--truncate-dim: the first N dimensions, normalised again when the model's own output is normalised (as
    sentence-transformers' `truncate_dim` followed by its normalisation gives them). Applied to the full vectors
    the cache holds, so a truncated run reuses them; a row the truncation leaves all zeros is named as such."""
    if truncate_dim is None or not len(vectors):
        return vectors
    if vectors.shape[1] < truncate_dim:
        raise ModelError(f"--truncate-dim {truncate_dim}: the model's vectors have {vectors.shape[1]} dimensions")
    if vectors.shape[1] == truncate_dim:  # a second folder and leaderboard row of the same scores
        raise ModelError(f"--truncate-dim {truncate_dim}: the model's vectors have {truncate_dim} dimensions "
                         "already, so nothing would be cut; drop --truncate-dim (or keep fewer dimensions)")
    kept = np.ascontiguousarray(vectors[:, :truncate_dim], dtype=np.float32)
    norms = np.linalg.norm(kept, axis=1, keepdims=True)
    zero = np.flatnonzero(norms[:, 0] == 0)
    if len(zero):
        raise ModelError(f"--truncate-dim {truncate_dim} leaves {len(zero)} vector(s) all zeros (their first "
                         f"{truncate_dim} dimensions are 0, the full vectors are not); cosine is undefined for "
                         "them: keep more dimensions")
    if normalize:
        kept = (kept / norms).astype(np.float32)
    return kept


def truncated_view(embed_view: Callable[[View, Sequence[str]], np.ndarray], truncate_dim: int | None,
                   normalize: bool) -> Callable[[View, Sequence[str]], np.ndarray]:
    """`embed_view` with its rows shaped by --truncate-dim (`shaped`); itself when there is none."""
    if truncate_dim is None:
        return embed_view
    return lambda view, texts: shaped(embed_view(view, texts), truncate_dim, normalize)


Encoding = tuple[str, str]  # (role, prompt text): texts embedded alike, whatever view asked for them


@dataclass(frozen=True)
class ViewedEmbeddings:
    """The vectors of every view's texts: one `Embeddings` per encoding (views that resolve to the same role and
    prompt share it), the prompt each view got, and how the model was set up."""

    by_encoding: dict[Encoding, Embeddings]
    prompts: dict[View, AppliedPrompt]
    info: EncoderInfo
    timings: dict[str, float] = field(default_factory=dict)
    corpora: dict[tuple[Encoding, str], CorpusVectors] = field(default_factory=dict)  # by encoding, corpus digest

    def encoding(self, view: View) -> Encoding:
        prompt = self.prompts[view]
        return prompt.role, prompt.text

    def corpus_vectors(self, view: View, corpus: SharedCorpus) -> CorpusVectors:
        return self.corpora[(self.encoding(view), corpus.digest)]

    def embed_view(self, view: View, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, CorpusSlice):  # a corpus' documents: gathered by position, no text read
            return self.corpus_vectors(view, texts.corpus).rows(texts.start, texts.stop)
        return self.by_encoding[self.encoding(view)].embed(texts)

    def encoded(self) -> set[tuple[Encoding, str]]:
        """(encoding, text) of every text sent to the model in this run."""
        return {(encoding, text) for encoding, embeddings in self.by_encoding.items() for text in embeddings.encoded}


class GroupChecks:
    """What every encoded group goes through before the store: its shape (the adapter's first dimension in this
    run, the cache's) and finite values. The cache keeps the model's full vectors: `--truncate-dim` shapes them
    when they are read (`truncated_view`), so it is not part of the key."""

    def __init__(self, adapter: str) -> None:
        self.adapter = adapter
        self.dim: int | None = None  # the dimension the adapter returned first in this run

    def checked(self, group: np.ndarray, texts: Sequence[str], blocks: Sequence[Block]) -> np.ndarray:
        refuse_misshapen(group, texts, self.dim, self.adapter)
        self.dim = group.shape[1]
        # and of the dimension the cache holds for the key (stored by an earlier run)
        refuse_misshapen(group, texts, next((b.shape[1] for b in blocks), None), self.adapter)
        refuse_non_finite(group, texts)  # before the store: the cache never holds such a vector
        return group
