"""Registries that join the stages, in the bottom layer: every stage may read them, none is imported by them.

A reader (file format) is one `ReaderEntry`: its name, the function, whether it reads a folder, the model of its
`options`. specrun's own readers register when `specrun.data.readers` is imported; third-party packages add
theirs through the `specrun.readers` entry-point group (an entry point names a `ReaderEntry` object), so a new
format needs no fork. Loading is lazy and by module name, so the spec stage can list the formats without
importing the data stage. Nothing in a spec selects code other than by these registered names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from specrun.errors import SpecrunError, first_line

READER_GROUP = "specrun.readers"
BUILTIN_READERS = "specrun.data.readers"

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class ReaderEntry:
    """A file format: `read(path, layout, source_split) -> rows` (one dict per row, column -> value)."""

    name: str
    read: Callable[[Path, Any, str], Rows]
    folder: bool = False  # the source split is a folder (query folders, BEIR), not one file
    options: type[BaseModel] | None = None  # model of `options` in the spec, for a plugin's own settings
    description: str = ""
    provider: str = "specrun"  # the distribution that registered it


_READERS: dict[str, ReaderEntry] = {}
_loaded = False


def register_reader(entry: ReaderEntry) -> ReaderEntry:
    if entry.name in _READERS and _READERS[entry.name] is not entry:
        raise SpecrunError(f"format {entry.name!r} is registered twice ({_READERS[entry.name].provider} and "
                           f"{entry.provider})")
    _READERS[entry.name] = entry
    return entry


def readers() -> dict[str, ReaderEntry]:
    """Every registered format: specrun's own, then those of installed plugins."""
    global _loaded
    if not _loaded:
        _loaded = True
        importlib.import_module(BUILTIN_READERS)
        for point in metadata.entry_points(group=READER_GROUP):
            provider = point.dist.name if point.dist is not None else point.value
            try:
                entry = point.load()
            except Exception as exc:  # a broken plugin is named, never a traceback
                raise SpecrunError(f"reader plugin {point.name} ({provider}) cannot be loaded: "
                                   f"{first_line(exc)}") from None
            if not isinstance(entry, ReaderEntry):
                raise SpecrunError(f"reader plugin {point.name} ({provider}) is not a specrun ReaderEntry")
            register_reader(ReaderEntry(**{**entry.__dict__, "provider": provider}))
    return _READERS
