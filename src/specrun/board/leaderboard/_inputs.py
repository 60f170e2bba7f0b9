"""What `specrun leaderboard PATH...` ranks, said on stderr: an output root holds suite runs (ROOT/suite+<id>/)
beside spec runs (their members' and any other), and a folder holding a suite run gives a leaderboard of suites;
the spec runs it then leaves out are counted and how to rank them is named, never a silent switch. The runs
found are checked against each other: runs of one spec must have scored the same items the same way."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from specrun.core.errors import CompareError
from specrun.core.workspace import warn_stderr
from specrun.results import Results
from specrun.results.verify import Verified, refuse_limited

SUITE_FOLDER_PREFIX = "suite+"  # a suite's folder under the output root (no spec id holds a '+')


def spec_runs_below(folder: Path) -> list[Path]:
    """The results.json below `folder` outside suite+ folders: the spec runs a leaderboard of suites leaves out."""
    return sorted(p for p in folder.rglob("results.json") if p.is_file()
                  and not any(part.startswith(SUITE_FOLDER_PREFIX) for part in p.relative_to(folder).parts[:-1]))


def said_mode(names: Sequence[str], suites: list[Path] | None) -> list[Path] | None:
    """`suites` (the suite runs found, or None: a leaderboard of runs) as given; a leaderboard of suites is said in
    one note (each suite a benchmark on the page), with the spec runs below the folders named that it does not
    rank."""
    if suites is not None:
        left = sum(len(spec_runs_below(Path(name))) for name in names if Path(name).is_dir())
        also = (f"; the {left} spec run(s) (results.json) below {', '.join(names)} are not ranked: name their "
                "folders (ROOT/<spec id>/) for a leaderboard of runs") if left else ""
        print(f"specrun: note: a leaderboard of {len(suites)} suite run(s) (suite.json): each suite a benchmark "
              f"(its aggregates and Borda count){also}", file=sys.stderr)
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


def find_results(paths: Sequence[Path]) -> list[Path]:
    """results.json files named, or found at any depth below the folders named; each once."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.rglob("results.json") if p.is_file())
            if not inside:
                raise CompareError("no results.json below this folder", file=str(path))
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise CompareError("no such results file or folder", file=str(path))
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def _items(results: Results) -> dict[str, tuple[str, str, int]]:
    return {split: (d.fingerprint, d.selection, d.n_selected) for split, d in results.provenance.data.items()}


def check_same_items(first: Verified, other: Verified) -> None:
    """Runs of one spec ranked together must have scored the same items the same way; else one line naming both."""
    a, b = first.results, other.results
    prefix = f"{a.spec_id}: {other.path} and {first.path}"
    if a.provenance.spec_sha256 != b.provenance.spec_sha256:
        raise CompareError(f"{prefix} used different versions of the spec (sha256 {b.provenance.spec_sha256[:12]} "
                           f"vs {a.provenance.spec_sha256[:12]}): a protocol option, metric or item may differ, so "
                           "a difference need not be the model's; refusing to rank them together")
    items_a, items_b = _items(a), _items(b)
    if set(items_a) != set(items_b):
        raise CompareError(f"{prefix} evaluated different splits ({', '.join(sorted(items_b))} vs "
                           f"{', '.join(sorted(items_a))}); refusing to rank them together")
    for split, item in items_a.items():
        if items_b[split] != item:
            raise CompareError(f"{prefix} evaluated different items (split {split}: fingerprint {items_b[split][0]}"
                               f", {items_b[split][1]} vs {item[0]}, {item[1]}); refusing to rank them together")
    ua, ub = a.provenance.uncertainty, b.provenance.uncertainty
    if (ua.resamples, ua.confidence, ua.seed) != (ub.resamples, ub.confidence, ub.seed):
        raise CompareError(f"{prefix} used different bootstrap settings (resamples, confidence, seed "
                           f"{ub.resamples}, {ub.confidence}, {ub.seed} vs {ua.resamples}, {ua.confidence}, "
                           f"{ua.seed}); refusing to rank them together")
    if a.metrics != b.metrics or {s: sorted(m) for s, m in a.scores.items()} != {
            s: sorted(m) for s, m in b.scores.items()}:
        raise CompareError(f"{prefix} score different metrics or splits; refusing to rank them together")
    for key, (ids, _arrays) in first.units.items():
        other_ids = other.units.get(key, ([], {}))[0]
        if other_ids != ids:
            where = next((i for i, (x, y) in enumerate(zip(ids, other_ids, strict=False)) if x != y),
                         min(len(ids), len(other_ids)))
            raise CompareError(f"{prefix} evaluated different units (split {key[0]}, unit {where + 1}: "
                               f"{other_ids[where] if where < len(other_ids) else 'none'} vs "
                               f"{ids[where] if where < len(ids) else 'none'}); refusing to rank them together")
