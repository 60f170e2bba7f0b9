"""`specrun list`: the specs and suites of a folder (filtered by language, task type and domain), or the
registered formats and metrics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import rich.markup
from rich.console import Console
from rich.table import Table

from specrun.core.errors import SpecrunError


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    from specrun.spec import load_spec

    if args.formats:
        from specrun.core.registry import READERS

        formats = Table(title="file formats (readers)")
        for column in ("format", "reads", "provider", "description"):
            formats.add_column(column)
        for entry in READERS.values():
            formats.add_row(entry.name, "folder" if entry.folder else "file", entry.provider,
                            rich.markup.escape(entry.description))
        Console(width=200).print(formats)
        return 0
    if args.metrics:
        from specrun.metrics import METRICS

        metrics = Table(title="metrics (auto: the interval method uncertainty.interval: auto gives it)")
        for column in ("metric", "reads", "direction", "auto", "hub id"):
            metrics.add_column(column)
        for name, entry in METRICS.items():
            metrics.add_row(name, ", ".join(entry.inputs), entry.direction, entry.interval, entry.hub_id or name)
        Console(width=200).print(metrics)
        return 0
    from specrun.spec import matches, task_types
    from specrun.suites import is_suite_file

    paths = sorted(Path(args.folder).glob("*.yaml"))
    if not paths:
        raise SpecrunError(f"no *.yaml specs in {args.folder}")
    filters = {"language": args.language, "task_type": args.type, "domain": args.domain}
    filtered = any(value is not None for value in filters.values())
    suites = [path for path in paths if is_suite_file(path)]
    shown = _list_suites(args.folder, suites, filters) if suites else 0
    paths = [path for path in paths if path not in suites]
    specs = [spec for spec in (load_spec(path).spec for path in paths) if matches(spec, **filters)]
    if specs:
        table = Table(title=f"specs in {args.folder}")
        for column in ("id", "protocols", "task types", "languages", "domains", "evaluated splits", "metrics",
                       "licence"):
            table.add_column(column)
        for spec in specs:
            meta = spec.metadata
            table.add_row(spec.id, ", ".join(f"{name} ({p.kind})" for name, p in spec.protocols.items()),
                          ", ".join(task_types(spec)),
                          ", ".join(meta.languages if meta and meta.languages else spec.language or []),
                          ", ".join(meta.domains or []) if meta else "",
                          ", ".join(spec.evaluated_splits), ", ".join(spec.metrics),
                          f"{spec.licence.data}, publication {spec.licence.publication}")
        Console(width=240).print(table)
    if filtered and not specs and not shown:
        asked = ", ".join(f"--{'type' if key == 'task_type' else key} {value}" for key, value in filters.items()
                          if value is not None)
        print(f"specrun: no spec or suite in {args.folder} matches {asked}", file=sys.stderr)
    return 0


def _list_suites(folder: str, paths: list[Path], filters: dict[str, str | None]) -> int:
    """The suites table; a suite is listed when any of its members' specs passes the filters (a suite that holds
    a Japanese member is found by --language jpn). Returns how many were listed."""
    from specrun.spec import matches
    from specrun.suites import load_suite

    loaded_suites = [load_suite(path) for path in paths]
    loaded_suites = [loaded for loaded in loaded_suites
                     if any(matches(m.loaded.spec, **filters) for m in loaded.members)]
    if not loaded_suites:
        return 0
    table = Table(title=f"suites in {folder}")
    for column in ("id", "title", "members", "task types", "aggregates"):
        table.add_column(column)
    for loaded in loaded_suites:
        members = ", ".join(f"{m.spec_id}{' (optional)' if m.member.optional else ''}" for m in loaded.members)
        table.add_row(loaded.suite.id, loaded.suite.title, members,
                      ", ".join(dict.fromkeys(m.task_type for m in loaded.members)), ", ".join(loaded.suite.aggregates))
    Console(width=200).print(table)
    return len(loaded_suites)
