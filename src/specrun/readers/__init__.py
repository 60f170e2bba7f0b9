"""Readers: one file per file format, each registering its `ReaderEntry` (core.contracts). A reader turns one file
(or folder) into rows: dicts of column -> value, every value as the file holds it; conversion, ids and checks
happen after, in the data stage. Readers import only the bottom layer. Importing the package registers every
format in it: a new format is one new file here."""

from __future__ import annotations

import importlib
import pkgutil

from specrun.core.registry import READERS

__all__ = ["READERS"]

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
