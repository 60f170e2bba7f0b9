"""The last values a process computed, by key, for the next caller that asks for the same: the oldest go first
once there are more than a count of them or their sizes add up past a budget. The bootstraps
(`metrics.estimate`), their draws (`metrics.resampling`) and the report's pictures (`reports.plots`) keep theirs
in one each; the bounds are passed with each value, so each owner's constants are read when they are used."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """Thread-safe; a value is shared by everyone who gets it, so its owner keeps it from being changed."""

    def __init__(self) -> None:
        self.entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self.size = 0  # the kept values' sizes, added up
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self.lock:
            found = self.entries.get(key)
            if found is None:
                return None
            self.entries.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: V, size: int = 0, *, count: int | None = None,
            total: int | None = None) -> None:
        """Kept as the newest, `size` bytes of the budget; the oldest go past `count` values or `total` bytes."""
        with self.lock:
            if key in self.entries:
                self.size -= self.entries.pop(key)[1]
            self.entries[key] = (value, size)
            self.size += size
            while self.entries and ((count is not None and len(self.entries) > count)
                                    or (total is not None and self.size > total)):
                self.size -= self.entries.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.size = 0
