"""How a kind maps one function over chunks of work: in this process (no mapper, the default), or through a
mapper a later stage opens for the length of a run (Ray actors with `--executor ray`) and hands each kind in its
`RunContext.chunk_map`. So a protocol never knows the executor, and nothing below the runner imports Ray.

A mapper is called as `mapper(function, shared, items)`: `function` is a module-level (picklable) function,
`shared` one value every call receives first (sent once), `items` an iterator of argument tuples, read lazily so
that only a bounded number is held at once; it yields `function(shared, *item)` for each item, in item order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

ChunkMap = Callable[[Callable[..., Any], Any, Iterable[tuple[Any, ...]]], Iterator[Any]]
