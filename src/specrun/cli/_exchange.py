"""The commands of the exchange with MTEB: `check-published` (ours beside MTEB's published values) and
`export --format mteb` (our runs as MTEB result files)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from specrun.cli._paths import output_folder
from specrun.core.errors import SpecrunError


def run_files(names: list[str], suites: bool = False) -> list[Path]:
    """Each RESULTS named: a results.json, or a run's folder (the one `specrun RUN` prints the results.json of),
    taken as the results.json it holds (or, with `suites`, a suite run's suite.json); a folder without one is one
    line."""
    paths = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            held = [path / file for file in ("results.json", *(("suite.json",) if suites else ())) if
                    (path / file).is_file()]
            if not held:
                raise SpecrunError("a run's folder holds results.json; this folder has none (name a run's folder "
                                   "or its results.json)", file=name)
            path = held[0]
        paths.append(path)
    return paths


def cmd_check_published(args: argparse.Namespace, console: Console) -> int:
    """Ours, published, the difference; exit 1 past --tolerance (what a CI job checks; 0: exactly equal)."""
    from specrun.mteb.results import PublishedDir, check_published, check_text

    paths = run_files(args.results)
    notes: list[str] = []
    rows = check_published(paths, PublishedDir(Path(args.published)), args.spec, notes)
    if not rows:  # one line: why there is nothing to check (the first run's note, where it has one)
        raise SpecrunError("no metric of these runs' specs names an MTEB counterpart (`metrics.NAME.mteb`) on a "
                           "split they scored" + (f" ({notes[0]})" if notes else ""), file=args.results[0])
    for note in notes:
        print(f"specrun: note: {note}", file=sys.stderr)
    sys.stdout.write(check_text(rows))
    if args.tolerance is not None:
        over = [r for r in rows if r.difference is not None and abs(r.difference) > args.tolerance]
        for r in over:
            print(f"specrun: {r.spec_id} {r.metric}: |ours − published| = {abs(r.difference or 0):.3e} exceeds "
                  f"--tolerance {args.tolerance:g}", file=sys.stderr)
        return 1 if over else 0
    return 0


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    from specrun.mteb.export import mteb_files
    from specrun.outputs import write_file_tree

    folder = output_folder(args.output)
    assert folder is not None
    files, notes = mteb_files(run_files(args.runs), args.spec, args.model_name)
    write_file_tree(folder, files, f"-o {args.output}")
    for note in notes:
        print(f"specrun: note: {note}", file=sys.stderr)
    for name in files:
        print(folder / name)
    return 0


__all__ = ["cmd_check_published", "cmd_export", "run_files"]
