"""What `specrun leaderboard PATH...` ranks, said on stderr: an output root holds suite runs (ROOT/suite+<id>/)
beside spec runs (their members' and any other), and a folder holding a suite run gives a leaderboard of suites;
the spec runs it then leaves out are counted and how to rank them is named, never a silent switch."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from specrun.core.errors import CompareError
from specrun.core.workspace import warn_stderr
from specrun.results.verify import Verified, refuse_limited

SUITE_FOLDER_PREFIX = "suite+"  # a suite's folder under the output root (no spec id holds a '+')


def spec_runs_below(folder: Path) -> list[Path]:
    """The results.json below `folder` outside suite+ folders: the spec runs a leaderboard of suites leaves out."""
    return sorted(p for p in folder.rglob("results.json") if p.is_file()
                  and not any(part.startswith(SUITE_FOLDER_PREFIX) for part in p.relative_to(folder).parts[:-1]))


def said_mode(names: Sequence[str], suites: list[Path] | None) -> list[Path] | None:
    """`suites` (the suite runs found, or None: a leaderboard of runs) as given; a leaderboard of suites is said in
    one note (leaderboard.md and .json, no HTML page), with the spec runs below the folders named that it does not
    rank."""
    if suites is not None:
        left = sum(len(spec_runs_below(Path(name))) for name in names if Path(name).is_dir())
        also = (f"; the {left} spec run(s) (results.json) below {', '.join(names)} are not ranked: name their "
                "folders (ROOT/<spec id>/) for a leaderboard of runs") if left else ""
        print(f"specrun: note: a leaderboard of {len(suites)} suite run(s) (suite.json): leaderboard.md and .json, "
              f"no HTML page{also}", file=sys.stderr)
    return suites


def full_runs(runs: list[Verified], named: Sequence[Path]) -> list[Verified]:
    """A smoke run (--limit) is never ranked: one named as a file is refused, naming it; one found below a folder
    is left out with a line (a folder holding one smoke run still ranks the rest)."""
    files = {path.resolve() for path in named if path.is_file()}
    kept = []
    for run in runs:
        if run.results.provenance.limit is not None and Path(run.path).resolve() not in files:
            warn_stderr(f"left out: {run.path} (a --limit {run.results.provenance.limit} smoke run; the leaderboard "
                 "ranks full runs only)")
            continue
        refuse_limited(run, "the leaderboard")
        kept.append(run)
    if not kept:
        raise CompareError("every run found is a --limit smoke run; nothing to rank", file=str(named[0]))
    return kept


__all__ = ["SUITE_FOLDER_PREFIX", "full_runs", "said_mode", "spec_runs_below"]
