"""Registries that join the stages: every stage may read them; they import no stage.

Five registries, each a read-only mapping from a name used in specs or flags to an entry typed by its contract
(`core.contracts`) and checked when it registers: protocol kinds, metrics, readers (file formats), adapters, and
the field kinds items are converted to. specrun's own entries register when their kind package is imported (a
package per kind of thing: `specrun.protocols`, `specrun.metrics`, `specrun.readers`, `specrun.encoders.adapters`,
each of which imports only this bottom layer, so loading a registry from any stage pulls in no other stage);
installed packages add theirs through the entry-point groups `specrun.protocols`, `specrun.metrics`,
`specrun.readers`, `specrun.adapters` (an entry point names an entry object), and a test can `register` a toy entry
from its own module. A spec only ever selects code by these registered names.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from importlib import metadata
from typing import Any, Generic, TypeVar

from specrun.core.contracts import CHECKS, AdapterEntry, MetricEntry, ProtocolKind, ReaderEntry, Rows
from specrun.core.errors import RegistryError, SpecrunError, first_line

__all__ = ["ADAPTERS", "FIELD_KINDS", "METRICS", "PROTOCOLS", "READERS", "ReaderEntry", "Registry", "Rows",
           "did_you_mean", "register_reader"]

T = TypeVar("T")


def did_you_mean(name: str, known: Iterator[str] | list[str]) -> str:
    """' (did you mean X?)' for the closest known name, or '': the same name in other case first (an imported
    spec's id, sts16, for its task STS16), else difflib's closest."""
    known = list(known)
    same = [candidate for candidate in known if candidate.casefold() == name.casefold()]
    close = same or difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Registry(Mapping[str, T], Generic[T]):
    """Name -> entry, filled on first use from a built-in package and the entry points of a group."""

    def __init__(self, what: str, builtin: str | None, group: str | None) -> None:
        self.what = what
        self.builtin = builtin
        self.group = group
        self._entries: dict[str, T] = {}
        self._loaded = builtin is None and group is None

    def register(self, name: str, entry: T, *, provider: str = "specrun") -> T:
        """Add an entry after checking it against the contract; a name taken by another entry is refused."""
        problems = CHECKS[self.what](entry, FIELD_KINDS)
        if problems:
            raise RegistryError(f"{self.what} {name!r} from {provider} {'; '.join(problems)}")
        known = self._entries.get(name)
        if known is not None and known is not entry:
            raise RegistryError(f"{self.what} {name!r} from {provider} is registered twice")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """For tests that register a toy entry and must leave the registry as they found it."""
        self._entries.pop(name, None)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self.builtin is not None:
            importlib.import_module(self.builtin)
        for point in metadata.entry_points(group=self.group) if self.group else ():
            provider = point.dist.name if point.dist is not None else point.value
            try:
                entry = point.load()
            except (Exception, SystemExit) as exc:  # a broken plugin is named in one line, never a traceback
                raise RegistryError(f"{self.what} plugin {point.name} ({provider}) cannot be loaded: "
                                    f"{first_line(exc)}") from None
            if isinstance(entry, (ReaderEntry, AdapterEntry)):
                entry = replace(entry, provider=provider)
            name = entry.name if isinstance(entry, (ReaderEntry, AdapterEntry)) else point.name
            self.register(name, entry, provider=f"plugin {point.name} ({provider})")

    def lookup(self, name: str, *, error: Callable[[str], SpecrunError] | None = None) -> T:
        """The entry of `name`, or one line listing the known names with the closest one."""
        self._load()
        if name in self._entries:
            return self._entries[name]
        message = (f"unknown {self.what} {name!r}{did_you_mean(name, list(self._entries))}; expected one of: "
                   f"{', '.join(self._entries)}")
        raise error(message) if error is not None else SpecrunError(message)

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


PROTOCOLS: Registry[ProtocolKind] = Registry("protocol kind", "specrun.protocols", "specrun.protocols")
METRICS: Registry[MetricEntry] = Registry("metric", "specrun.metrics", "specrun.metrics")
READERS: Registry[ReaderEntry] = Registry("format", "specrun.readers", "specrun.readers")
ADAPTERS: Registry[AdapterEntry] = Registry("adapter", "specrun.encoders.adapters", "specrun.adapters")
# field kinds: the built-in ones from core.fields; a protocol kind that needs another registers it from its file
FIELD_KINDS: Registry[Callable[[Any], Any]] = Registry("field kind", "specrun.core.fields", None)


def register_reader(entry: ReaderEntry) -> ReaderEntry:
    return READERS.register(entry.name, entry, provider=entry.provider)

