"""`specrun import mteb TASK... -o DIR`: MTEB tasks of the checked-in catalogue written as specs, DIR/<id>.yaml
each. Every task is converted and every spec validated before the first file is written; a task that cannot be
converted, or a file already there, is one line and nothing is written."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from specrun.cli.paths import output_folder
from specrun.core.errors import SpecrunError, UsageError


def cmd_import(args: argparse.Namespace, console: Console) -> int:
    """Tasks: every one converts or nothing is written (exit 2). A benchmark: its members that convert and its
    suite file are written, each member left out is one `left out:` line on stderr, and the exit status is 1 when
    any was left out (the suite is not the whole benchmark), 0 when none was."""
    from specrun.mteb.importer import import_tasks

    folder = output_folder(args.output)
    assert folder is not None  # -o is required
    if (args.benchmark is None) == (not args.tasks):
        raise UsageError("name the tasks to import, or one --benchmark (not both)")
    if args.benchmark is None:
        imported = import_tasks(args.tasks)
        files = {f"{entry.spec_id}.yaml": entry.text for entry in imported}
        _write(folder, files, args.output)
        return 0
    from specrun.mteb.benchmark_import import import_benchmark

    result = import_benchmark(args.benchmark)
    files = {f"{entry.spec_id}.yaml": entry.text for entry in result.specs}
    suite = f"{result.suite_id}.suite.yaml"
    _write(folder, {**files, suite: result.suite_text}, args.output, suite=suite)
    for task, reasons in result.refused:
        print(f"specrun: note: left out: {task}: {', '.join(reasons)}", file=sys.stderr)
    total = len(result.specs) + len(result.refused)
    print(f"specrun: note: {result.benchmark}: {len(result.specs)} of {total} tasks written, {len(result.refused)} "
          f"left out; run the suite: specrun {folder / suite}", file=sys.stderr)
    return 1 if result.refused else 0


def _write(folder: Path, files: dict[str, str], shown: str, *, suite: str | None = None) -> None:
    """Every file checked (none there yet, each spec valid, the suite valid with them) before the first is
    written, then all written together; each path on stdout."""
    from specrun.outputs import write_file_tree

    there = [name for name in files if os.path.lexists(folder / name)]
    if there:
        more = f" (and {len(there) - 1} more)" if len(there) > 1 else ""
        raise UsageError(f"-o {shown}: {there[0]} already exists{more}; nothing was written (remove it, or "
                         "import into another folder)")
    _validate(files, suite)
    write_file_tree(folder, files, f"-o {shown}")
    for name in files:
        print(folder / name)


def _validate(files: dict[str, str], suite: str | None = None) -> None:
    """Each spec as `specrun validate` reads it, from a scratch folder: what is written is valid (but for the
    fingerprint a local copy of the data needs, which `specrun fingerprint` adds: a retrieval spec reads one);
    and the suite file, if any, read with them."""
    from specrun.spec import load_spec

    with tempfile.TemporaryDirectory() as scratch:
        for name, text in files.items():
            path = Path(scratch) / name
            path.write_text(text, encoding="utf-8")
            if name == suite:
                continue
            try:
                load_spec(path, require_fingerprints=False)
            except SpecrunError as exc:  # a task the importer accepted but wrote wrongly: a bug, said as one
                raise SpecrunError(f"the spec imported as {name} does not validate (a bug in specrun import; "
                                   f"nothing was written): {exc.one_line()}") from None
        if suite is not None:  # its members' specs were checked above; load_suite would also want the
            import yaml  # fingerprints a retrieval member gets only from its data

            from specrun.suites.model import Suite

            try:
                Suite.model_validate(yaml.safe_load(files[suite]))
            except ValueError as exc:  # pydantic's ValidationError is a ValueError
                raise SpecrunError(f"the suite imported as {suite} does not validate (a bug in specrun import; "
                                   f"nothing was written): {str(exc).splitlines()[0]}") from None


def add_import_parser(sub: Any) -> None:
    parser = sub.add_parser("import", help="write specs from another framework's task catalogue (MTEB's, checked "
                                           "in): one spec per task, or one line saying what is missing")
    parser.add_argument("framework", choices=("mteb",), help="the catalogue to read (mteb: the packaged MTEB "
                                                              "catalogue)")
    parser.add_argument("tasks", nargs="*", metavar="TASK", help="task names as MTEB spells them")
    parser.add_argument("--benchmark", metavar="NAME",
                        help="a named benchmark (e.g. \"MTEB(eng, v2)\"): its members that convert and a suite file "
                             "<id>.suite.yaml; each member left out is named on stderr, exit status 1")
    parser.add_argument("-o", "--output", metavar="DIR", required=True,
                        help="folder for the specs, DIR/<id>.yaml each (an existing file is refused)")
