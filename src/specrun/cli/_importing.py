"""`specrun import mteb TASK... -o DIR [--data-dir D]`: MTEB tasks of the checked-in catalogue written as specs,
DIR/<id>.yaml each, each pinned from its local copy D/<source>/ where one is there (as `specrun fingerprint
--write` pins it). Every task is converted, every spec validated and pinned before the first file is written; a
task that cannot be converted, a copy that cannot be read, or a file already there, is one line and nothing is
written."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console

from specrun.cli._paths import output_folder
from specrun.core.errors import SpecrunError, UsageError

T = TypeVar("T")


def cmd_import(args: argparse.Namespace, console: Console) -> int:
    """Tasks: every one converts or nothing is written (exit 2). A benchmark: its members that convert and its
    suite file are written, each member left out is one `left out:` line on stderr, and the exit status is 1 when
    any was left out (the suite is not the whole benchmark), 0 when none was."""
    from specrun.mteb.importer import import_tasks

    folder = output_folder(args.output)
    assert folder is not None  # -o is required
    if (args.benchmark is None) == (not args.tasks):
        raise UsageError("name the tasks to import, or one --benchmark (not both)")
    if args.data_dir is not None and not Path(args.data_dir).is_dir():  # else every spec is written unpinned
        raise UsageError(f"--data-dir {args.data_dir}: not a directory; nothing was written (give the folder that "
                         "holds the copies, <data-dir>/<id>/, or leave the flag out to write the specs unpinned)")
    if args.benchmark is None:
        imported = import_tasks(args.tasks)
        files = {f"{entry.spec_id}.yaml": entry.text for entry in imported}
        _write(folder, files, args.output, data_dir=args.data_dir)
        return 0
    from specrun.mteb.benchmark_import import import_benchmark

    result = import_benchmark(args.benchmark)
    files = {f"{entry.spec_id}.yaml": entry.text for entry in result.specs}
    suite = f"{result.suite_id}.suite.yaml"
    _write(folder, {**files, suite: result.suite_text}, args.output, suite=suite, data_dir=args.data_dir)
    for task, reasons in result.refused:
        print(f"specrun: note: left out: {task}: {', '.join(reasons)}", file=sys.stderr)
    total = len(result.specs) + len(result.refused)
    print(f"specrun: note: {result.benchmark}: {len(result.specs)} of {total} tasks written, {len(result.refused)} "
          f"left out; run the suite: specrun {folder / suite}", file=sys.stderr)
    return 1 if result.refused else 0


def _write(folder: Path, files: dict[str, str], shown: str, *, suite: str | None = None,
           data_dir: str | None = None) -> None:
    """Every file checked (none there yet, each spec valid, the suite valid with them) and, with a data folder,
    each spec whose local copy is there pinned, before the first is written; then all written together; each
    path on stdout, each spec left unpinned named on stderr."""
    from specrun.outputs import write_file_tree

    there = [name for name in files if os.path.lexists(folder / name)]
    if there:
        more = f" (and {len(there) - 1} more)" if len(there) > 1 else ""
        raise UsageError(f"-o {shown}: {there[0]} already exists{more}; nothing was written (remove it, or "
                         "import into another folder)")
    files, unpinned = _validate(files, suite, data_dir)
    write_file_tree(folder, files, f"-o {shown}")
    for name in files:
        print(folder / name)
    if unpinned:
        print(f"specrun: note: not pinned, no local copy in --data-dir: {', '.join(unpinned)} (`specrun fingerprint "
              "SPEC --data-dir D --write` once the copy is there)", file=sys.stderr)


def _validate(files: dict[str, str], suite: str | None = None,
              data_dir: str | None = None) -> tuple[dict[str, str], list[str]]:
    """Each spec as `specrun validate` reads it, from a scratch folder, so what is written is valid; with a data
    folder, each spec whose sources all have a copy there pinned as `fingerprint --write` pins it, and read again
    (the files as pinned, and the specs left unpinned, are returned); the suite file, if any, read as `specrun
    validate` reads it, with its members."""
    from specrun.spec import load_spec

    pinned, unpinned = dict(files), []
    with tempfile.TemporaryDirectory() as scratch:
        for name, text in files.items():
            path = Path(scratch) / name
            path.write_text(text, encoding="utf-8")
            if name == suite:
                continue
            loaded = _as_written(functools.partial(load_spec, path), "spec", name)
            if data_dir is not None:
                if all((Path(data_dir) / source).is_dir() for source in loaded.spec.sources):
                    pinned[name] = _pinned(path, Path(data_dir))
                    _as_written(functools.partial(load_spec, path), "spec", name)
                else:
                    unpinned.append(name)
        if suite is not None:
            from specrun.suites.model import load_suite

            _as_written(functools.partial(load_suite, Path(scratch) / suite), "suite", suite)
    return pinned, unpinned


def _as_written(read: Callable[[], T], what: str, name: str) -> T:
    """A file the importer wrote read back; refused, it is a bug in the importer, said as one."""
    try:
        return read()
    except SpecrunError as exc:
        raise SpecrunError(f"the {what} imported as {name} does not validate (a bug in specrun import; "
                           f"nothing was written): {exc.one_line()}") from None


def _pinned(path: Path, data_dir: Path) -> str:
    """The spec file's text with every read split's fingerprint from its local copy (`fingerprint --write`)."""
    from specrun.cli.fingerprint import pin_spec
    from specrun.core.workspace import Workspace

    try:
        pin_spec(path, data_dir, Workspace.resolve(None, False), write=True, echo=False)
    except SpecrunError as exc:
        raise UsageError(f"{path.name}: cannot pin it from {data_dir} ({exc.one_line()}); nothing was "
                         "written") from None
    return path.read_text(encoding="utf-8")


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
    parser.add_argument("--data-dir", metavar="D",
                        help="local copies of the tasks' dataset repos, D/<id>/ each: every spec whose copy is "
                             "there is written pinned (its fingerprints, as `specrun fingerprint --write`)")
