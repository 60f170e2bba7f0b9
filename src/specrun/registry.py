"""Registries that join the stages, in the bottom layer: every stage may read them; they import no stage.

Four registries, each a read-only mapping from a name used in specs or flags to an entry that carries its own
metadata: protocol kinds (item fields and their kinds, outputs, unit, options model, plotted outputs, hub task,
report caption), metrics (inputs, direction, hub metric id), readers (file formats: folder or file, options model)
and adapters. specrun's own entries register when their stage module is imported; installed packages add theirs
through the entry-point groups `specrun.protocols`, `specrun.metrics`, `specrun.readers`, `specrun.adapters`
(an entry point names an entry object), and a test can `register` a toy entry from its own module. Loading is
lazy and by module name, so an early stage (the spec) can list the names without importing a later stage. A spec
only ever selects code by these registered names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from specrun.errors import SpecrunError, first_line

Rows = list[dict[str, Any]]
T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Name -> entry, filled on first use from a built-in module and the entry points of a group."""

    def __init__(self, what: str, builtin: str, group: str) -> None:
        self.what = what
        self.builtin = builtin
        self.group = group
        self._entries: dict[str, T] = {}
        self._loaded = False

    def register(self, name: str, entry: T) -> T:
        known = self._entries.get(name)
        if known is not None and known is not entry:
            raise SpecrunError(f"{self.what} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """For tests that register a toy entry and must leave the registry as they found it."""
        self._entries.pop(name, None)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        importlib.import_module(self.builtin)
        for point in metadata.entry_points(group=self.group):
            provider = point.dist.name if point.dist is not None else point.value
            try:
                entry = point.load()
            except Exception as exc:  # a broken plugin is named in one line, never a traceback
                raise SpecrunError(f"{self.what} plugin {point.name} ({provider}) cannot be loaded: "
                                   f"{first_line(exc)}") from None
            if isinstance(entry, ReaderEntry):
                entry = replace(entry, provider=provider)
            self.register(getattr(entry, "name", point.name), entry)

    def __getitem__(self, name: str) -> T:
        self._load()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries


@dataclass(frozen=True)
class ReaderEntry:
    """A file format: `read(path, layout, source_split) -> rows` (one dict per row, column -> value)."""

    name: str
    read: Callable[[Path, Any, str], Rows]
    folder: bool = False  # the source split is a folder (query folders, BEIR), not one file
    options: type[BaseModel] | None = None  # model of `options` in the spec, for a plugin's own settings
    description: str = ""
    provider: str = "specrun"  # the distribution that registered it


PROTOCOLS: Registry[Any] = Registry("protocol kind", "specrun.protocols", "specrun.protocols")
METRICS: Registry[Any] = Registry("metric", "specrun.metrics", "specrun.metrics")
READERS: Registry[ReaderEntry] = Registry("format", "specrun.data.readers", "specrun.readers")
ADAPTERS: Registry[Any] = Registry("adapter", "specrun.encoders", "specrun.adapters")


def register_reader(entry: ReaderEntry) -> ReaderEntry:
    return READERS.register(entry.name, entry)


def readers() -> Registry[ReaderEntry]:
    """Every registered format: specrun's own, then those of installed plugins."""
    return READERS
