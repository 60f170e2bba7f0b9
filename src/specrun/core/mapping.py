"""How a kind maps one function over chunks of work: in this process (no mapper set, the default), or through a
mapper a later stage sets for the length of a run (Ray actors with `--executor ray`). The kinds read it here, so
a protocol never knows the executor, and nothing below the runner imports Ray.

A mapper is called as `mapper(function, shared, items)`: `function` is a module-level (picklable) function,
`shared` one value every call receives first (sent once), `items` an iterator of argument tuples, read lazily so
that only a bounded number is held at once; it yields `function(shared, *item)` for each item, in item order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

ChunkMap = Callable[[Callable[..., Any], Any, Iterable[tuple[Any, ...]]], Iterator[Any]]

_MAPPER: ContextVar[ChunkMap | None] = ContextVar("specrun_chunk_map", default=None)


def chunk_map() -> ChunkMap | None:
    """The mapper set for this run, or None: map in this process."""
    return _MAPPER.get()


@contextlib.contextmanager
def mapping_chunks(mapper: ChunkMap | None) -> Iterator[None]:
    """Within the block, chunk_map() is `mapper` (None: this process); the one before is put back after."""
    token = _MAPPER.set(mapper)
    try:
        yield
    finally:
        _MAPPER.reset(token)
