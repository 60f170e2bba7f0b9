"""Protocol stage: one file per kind of evaluation, each registering its `ProtocolKind` (core.contracts); shared
helpers in `ranking` (per-query measures) and `search` (cosine, exact corpus search). Importing the package
registers every kind in it: a new kind is one new file here, nothing else edited."""

from __future__ import annotations

import importlib
import pkgutil

from specrun.core.registry import PROTOCOLS

__all__ = ["PROTOCOLS"]

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
