"""Suites: a benchmark of benchmarks in YAML, each member a spec's split and metric, aggregated with an interval
over joint resamples of the members' units. A suite file and suite.json are read below the board (`model`,
`results`); a suite runs its members through the runner (`run`, above it).

Nothing is imported here eagerly: the board reads `specrun.suites.model`, and must not load the runner with it."""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {"LoadedSuite": "model", "Suite": "model", "is_suite_file": "model", "load_suite": "model",
          "SuiteOutput": "run", "run_suite": "run"}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """The suites' API, imported on first use (PEP 562)."""
    if name in _HOMES:
        return getattr(importlib.import_module(f"specrun.suites.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'specrun.suites' has no attribute {name!r}")
