"""Canonical batches: which texts share a batch depends only on the set of texts, so a run's numbers do not
depend on spec order, on the executor or on the cache."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from specrun.core.corpus import SharedCorpus
from specrun.core.errors import ModelError, first_line
from specrun.core.types import Role
from specrun.encoders.adapters import Adapter


def canonical_order(texts: Sequence[str]) -> list[int]:
    """Longest first, then by text: batches hold similar lengths (little padding), and which texts share a batch
    depends only on the set of texts, not on the order specs listed them. A vector moves by about 1e-7 with its
    batch's shape, which can swap near-tied ranks, so this keeps a run's numbers independent of spec order."""
    return sorted(range(len(texts)), key=lambda i: (-len(texts[i]), texts[i]))


PREFIX_BYTES = 16  # the leading UTF-8 bytes sorted as two integers (UTF-8 byte order is code point order)


def canonical_positions(corpus: SharedCorpus, positions: np.ndarray, block: int = 65_536) -> np.ndarray:
    """`canonical_order` of a corpus' texts at those positions (distinct texts), without holding them: sorted by
    length and the first 16 UTF-8 bytes as arrays, and only texts that tie on both are read together to be
    ordered by their whole text. Indices into `positions`."""
    prefixes = np.zeros((len(positions), PREFIX_BYTES), dtype=np.uint8)
    for start in range(0, len(positions), block):
        texts = corpus.texts_at(positions[start:start + block])
        joined = b"".join(text.encode("utf-8")[:PREFIX_BYTES].ljust(PREFIX_BYTES, b"\0") for text in texts)
        prefixes[start:start + len(texts)] = np.frombuffer(joined, dtype=np.uint8).reshape(-1, PREFIX_BYTES)
    high = np.ascontiguousarray(prefixes[:, :8]).view(">u8").ravel()
    low = np.ascontiguousarray(prefixes[:, 8:]).view(">u8").ravel()
    del prefixes
    lengths = corpus.lengths[positions]
    order = np.lexsort((low, high, -lengths))
    keys = (lengths[order], high[order], low[order])
    tied = np.flatnonzero((keys[0][1:] == keys[0][:-1]) & (keys[1][1:] == keys[1][:-1]) &
                          (keys[2][1:] == keys[2][:-1]))
    if len(tied):  # runs of texts equal in length and first 16 bytes: ordered by their whole text
        starts = tied[np.r_[True, np.diff(tied) > 1]]
        ends = tied[np.r_[np.diff(tied) > 1, True]] + 2
        for first, stop in zip(starts.tolist(), ends.tolist(), strict=True):
            run = order[first:stop]
            texts = corpus.texts_at(positions[run])
            order[first:stop] = run[sorted(range(len(run)), key=texts.__getitem__)]
    return order


def batches_by_length(texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Indices of texts in canonical order, cut into batches."""
    order = canonical_order(texts)
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def groups_of(texts: Sequence[str], batch_size: int, group_batches: int = 16) -> list[list[int]]:
    """Canonical batches, `group_batches` at a time: a group is the unit of progress, of cache writes (one shard)
    and of work handed to another process or machine. Grouping never changes a vector, batching does."""
    batches = batches_by_length(texts, batch_size)
    return [[i for batch in batches[start:start + group_batches] for i in batch]
            for start in range(0, len(batches), group_batches)]


def iter_groups(adapter: Adapter, texts: Sequence[str], batch_size: int, *, group_batches: int = 16,
                role: Role = "symmetric", prompt: str = "",
                name: str = "") -> Iterator[tuple[list[int], np.ndarray]]:
    """(indices into texts, float32 vectors) of each group, as soon as it is done; nothing is accumulated.
    `name` is the adapter's registered name, for the error when it exits or returns no array."""
    name = name or adapter.info.settings.adapter
    for indices in groups_of(texts, batch_size, group_batches):
        try:
            vectors = adapter.encode_group([texts[i] for i in indices], batch_size, role, prompt)
        except SystemExit as exc:  # a plugin that exits would end the run with its code and no output
            raise ModelError(f"adapter {name} called exit({exc.code!r}) while encoding; an "
                             "adapter raises an error instead") from None
        try:
            array = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError) as exc:  # ragged rows, or not numbers
            raise ModelError(f"adapter {name} returned what is not an array of vectors "
                             f"({first_line(exc)}); nothing of the group was cached") from None
        yield indices, array


def encode_texts(adapter: Adapter, texts: Sequence[str], batch_size: int, *, group_batches: int = 16,
                 on_group: Callable[[list[int], np.ndarray], None] | None = None) -> np.ndarray:
    """Embed texts (expected unique) in canonical length-sorted batches; rows come back in the order given.
    `on_group(indices, vectors)` is told of each group as soon as it is done."""
    out: np.ndarray | None = None
    for indices, vectors in iter_groups(adapter, texts, batch_size, group_batches=group_batches):
        if out is None:
            out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        out[indices] = vectors
        if on_group:
            on_group(indices, vectors)
    return out if out is not None else np.empty((0, 0), dtype=np.float32)
