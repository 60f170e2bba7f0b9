"""`specrun import mteb TASK... -o DIR`: MTEB tasks of the checked-in catalogue written as specs, DIR/<id>.yaml
each. Every task is converted and every spec validated before the first file is written; a task that cannot be
converted, or a file already there, is one line and nothing is written."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from specrun.cli.paths import output_folder
from specrun.core.errors import SpecrunError, UsageError


def cmd_import(args: argparse.Namespace, console: Console) -> int:
    from specrun.mteb.importer import import_tasks
    from specrun.outputs import write_file_tree

    folder = output_folder(args.output)
    assert folder is not None  # -o is required
    imported = import_tasks(args.tasks)
    files = {f"{entry.spec_id}.yaml": entry.text for entry in imported}
    there = [name for name in files if os.path.lexists(folder / name)]
    if there:
        more = f" (and {len(there) - 1} more)" if len(there) > 1 else ""
        raise UsageError(f"-o {args.output}: {there[0]} already exists{more}; nothing was written (remove it, or "
                         "import into another folder)")
    _validate(files)
    write_file_tree(folder, files, f"-o {args.output}")
    for entry in imported:
        print(folder / f"{entry.spec_id}.yaml")
    return 0


def _validate(files: dict[str, str]) -> None:
    """Each spec as `specrun validate` reads it, from a scratch folder: what is written is valid (but for the
    fingerprint a local copy of the data needs, which `specrun fingerprint` adds: a retrieval spec reads one)."""
    from specrun.spec import load_spec

    with tempfile.TemporaryDirectory() as scratch:
        for name, text in files.items():
            path = Path(scratch) / name
            path.write_text(text, encoding="utf-8")
            try:
                load_spec(path, require_fingerprints=False)
            except SpecrunError as exc:  # a task the importer accepted but wrote wrongly: a bug, said as one
                raise SpecrunError(f"the spec imported as {name} does not validate (a bug in specrun import; "
                                   f"nothing was written): {exc.one_line()}") from None


def add_import_parser(sub: Any) -> None:
    parser = sub.add_parser("import", help="write specs from another framework's task catalogue (MTEB's, checked "
                                           "in): one spec per task, or one line saying what is missing")
    parser.add_argument("framework", choices=("mteb",), help="the catalogue to read (mteb: the packaged MTEB "
                                                              "catalogue)")
    parser.add_argument("tasks", nargs="+", metavar="TASK", help="task names as MTEB spells them")
    parser.add_argument("-o", "--output", metavar="DIR", required=True,
                        help="folder for the specs, DIR/<id>.yaml each (an existing file is refused)")
