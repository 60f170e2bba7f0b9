"""`specrun list`: the specs and suites of a folder (filtered by language, task type and domain), or the
registered formats and metrics."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import rich.markup
from rich.console import Console
from rich.table import Table

from specrun.core.errors import SpecrunError, UsageError

if TYPE_CHECKING:
    from specrun.spec import Spec

T = TypeVar("T")


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    """The folder's specs and suites, or (--formats, --metrics, --mteb) what specrun reads and scores."""
    from specrun.spec import load_spec

    if args.formats:
        _print_formats()
        return 0
    if args.metrics:
        _print_metrics()
        return 0
    if args.mteb:
        return _list_mteb(args.type, args.benchmark, args.language, args.domain, names=args.tasks)
    if args.tasks or args.benchmark:  # they name MTEB's tasks: never ignored on a folder's specs
        raise UsageError(f"{'--tasks' if args.tasks else '--benchmark'} lists MTEB's tasks: add --mteb")
    from specrun.spec import matches
    from specrun.suites import is_suite_file

    paths = sorted(Path(args.folder).glob("*.yaml"))
    if not paths:
        raise SpecrunError(f"no *.yaml specs in {args.folder}")
    filters = {"language": args.language, "task_type": args.type, "domain": args.domain}
    filtered = any(value is not None for value in filters.values())
    suites = [path for path in paths if is_suite_file(path)]
    bad: list[str] = []  # one line per file that cannot be read: the others are listed all the same
    shown = _list_suites(args.folder, suites, filters, bad) if suites else 0
    specs = [spec for spec in _loaded([path for path in paths if path not in suites], load_spec, bad)
             if matches(spec.spec, **filters)]
    if specs:
        _specs_table(args.folder, [loaded.spec for loaded in specs])
    if filtered and not specs and not shown:
        asked = ", ".join(f"--{'type' if key == 'task_type' else key} {value}" for key, value in filters.items()
                          if value is not None)
        print(f"specrun: no spec or suite in {args.folder} matches {asked}", file=sys.stderr)
    for line in bad:
        print(f"specrun: error: {line}", file=sys.stderr)
    return 2 if bad else 0


def _print_formats() -> None:
    """The registered readers: the names a source's `format` takes, and what each reads."""
    from specrun.core.registry import READERS

    formats = Table(title="file formats (readers)")
    for column in ("format", "reads", "extensions", "provider", "description"):
        formats.add_column(column)
    for entry in READERS.values():
        formats.add_row(entry.name, "folder" if entry.folder else "file", " ".join(entry.extensions),
                        entry.provider, rich.markup.escape(entry.description))
    Console(width=200).print(formats)


def _print_metrics() -> None:
    """The registered metrics: what each reads and the interval method `auto` gives it."""
    from specrun.metrics import METRICS

    metrics = Table(title="metrics (auto: the interval method uncertainty.interval: auto gives it)")
    for column in ("metric", "reads", "direction", "auto", "hub id"):
        metrics.add_column(column)
    for name, entry in METRICS.items():
        metrics.add_row(name, ", ".join(entry.inputs), entry.direction, entry.interval, entry.hub_id or name)
    Console(width=200).print(metrics)


def _loaded(paths: list[Path], load: Callable[[Path], T], bad: list[str]) -> list[T]:
    """Each file loaded; one that cannot be is left out, its error's line added to `bad`."""
    out = []
    for path in paths:
        try:
            out.append(load(path))
        except SpecrunError as exc:
            bad.append(exc.one_line())
    return out


def _specs_table(folder: str, specs: list[Spec]) -> None:
    from specrun.spec import task_types

    table = Table(title=f"specs in {folder}")
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


def _list_suites(folder: str, paths: list[Path], filters: dict[str, str | None], bad: list[str]) -> int:
    """The suites table; a suite is listed when any of its members' specs passes the filters (a suite that holds
    a Japanese member is found by --language jpn). Returns how many were listed."""
    from specrun.spec import matches
    from specrun.suites import load_suite

    loaded_suites = _loaded(paths, load_suite, bad)
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


def _list_mteb(task_type: str | None, benchmark: str | None = None, language: str | None = None,
               domain: str | None = None, *, names: bool = False) -> int:
    """MTEB's active text tasks per type (or a named benchmark's members, as it takes them; or those in a
    language or domain): how many `specrun import mteb` converts, and how many each missing piece blocks (a task
    missing several counts under each); with `names`, each task by name instead, and what blocks it."""
    from specrun.core.registry import PROTOCOLS
    from specrun.mteb import load
    from specrun.mteb.benchmark_import import member_tasks
    from specrun.mteb.importer import coverage

    catalogue = load()
    tasks = member_tasks(catalogue, benchmark) if benchmark else list(catalogue.active_text_tasks().values())
    if domain is not None:
        tasks = [task for task in tasks if domain.lower() in {name.lower() for name in task.domains or []}]
        if not tasks:
            raise SpecrunError(f"--domain {domain}: no task in that domain (MTEB's: Medical, News, Legal, ...)")
    kind = PROTOCOLS.get(task_type.lower()) if task_type else None
    if kind is not None and kind.info.prompt_task:  # a protocol kind: the MTEB type it scores
        task_type = kind.info.prompt_task
    if language is not None:
        code = language.lower()
        tasks = [task for task in tasks if any(found.lower() == code or found.lower().split("-")[0] == code
                                               for found in (c for codes in task.languages.values() for c in codes))]
        if not tasks:
            raise SpecrunError(f"--language {language}: no task in that language (MTEB's codes: eng, jpn-Jpan, ...)")
    types = sorted({task.type for task in tasks})
    if task_type is not None:
        chosen = [name for name in types if name.lower() == task_type.lower()]
        if not chosen:
            raise SpecrunError(f"--type {task_type}: no active text task of that type in MTEB "
                               f"{catalogue.provenance.mteb_version}; types: {', '.join(types)}")
        tasks = [task for task in tasks if task.type == chosen[0]]
    what = f"{benchmark}'s tasks" if benchmark else "active text tasks"
    if names:
        return _print_task_names(tasks, f"MTEB {catalogue.provenance.mteb_version}: {what}, each as `specrun import "
                                        "mteb` takes it")
    table = Table(title=f"MTEB {catalogue.provenance.mteb_version}: {what} `specrun import mteb` converts")
    for column in ("type", "tasks", "import", "blocked by (tasks)"):
        table.add_column(column, justify="right" if column in ("tasks", "import") else "left")
    for name, counts in sorted(coverage(tasks).items(), key=lambda item: -item[1]["tasks"]):
        pieces = {key: value for key, value in counts.items() if key not in ("tasks", "imports")}
        blocked = ", ".join(f"{piece}: {count}" for piece, count in sorted(pieces.items(), key=lambda i: -i[1]))
        table.add_row(name, str(counts["tasks"]), str(counts["imports"]), rich.markup.escape(blocked))
    every = coverage(tasks).values()
    table.add_row("all", str(sum(c["tasks"] for c in every)), str(sum(c["imports"] for c in every)), "",
                  style="bold")
    Console(width=240).print(table)
    return 0


def _print_task_names(tasks: list, title: str) -> int:
    """`list --mteb --tasks`: one row per task, in name order, whether it imports and what blocks it."""
    from specrun.mteb.importer import refusals

    table = Table(title=title)
    for column in ("task", "type", "imports", "blocked by"):
        table.add_column(column)
    for task in sorted(tasks, key=lambda t: t.name.lower()):
        reasons = refusals(task)
        table.add_row(rich.markup.escape(task.name), task.type, "no" if reasons else "yes",
                      rich.markup.escape("; ".join(reasons)))
    Console(width=240).print(table)
    return 0
