"""Canonical batches: which texts share a batch depends only on the set of texts, so a run's numbers do not
depend on spec order, on the executor or on the cache."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from specrun.core.errors import ModelError, first_line
from specrun.core.types import Role
from specrun.encoders.adapters import Adapter


def canonical_order(texts: Sequence[str]) -> list[int]:
    """Longest first, then by text: batches hold similar lengths (little padding), and which texts share a batch
    depends only on the set of texts, not on the order specs listed them. A vector moves by about 1e-7 with its
    batch's shape, which can swap near-tied ranks, so this keeps a run's numbers independent of spec order."""
    return sorted(range(len(texts)), key=lambda i: (-len(texts[i]), texts[i]))


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
