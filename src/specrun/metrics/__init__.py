"""Metrics stage: statistics over a protocol's per-unit arrays, one file per family of metrics, each registering
its `MetricEntry` (core.contracts); `weighted` holds the count-weighted building blocks, `resampling` the one
bootstrap driver, `estimate` a metric's value with its interval. Importing the package registers every metric in
it: a new family is one new file here. No metric imports a protocol."""

from __future__ import annotations

import importlib
import pkgutil

from specrun.core.registry import METRICS
from specrun.metrics.estimate import clear_recent, estimate, value
from specrun.metrics.resampling import BOOTSTRAP_BATCH, draw_indices, draw_weights
from specrun.metrics.weighted import unit_counts

__all__ = ["BOOTSTRAP_BATCH", "METRICS", "clear_recent", "draw_indices", "draw_weights", "estimate", "unit_counts",
           "value"]

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
