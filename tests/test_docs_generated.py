"""The docs' generated blocks match what they are generated from: docs/cli.md's flag list is `specrun run --help`'s
groups (each flag's text is its field's one text, cli.run_flags), and docs/development.md's layout map is
tests/test_architecture.py's RANKS with each module's docstring lead.

A generated block is the fenced block after a `<!-- generated: NAME ... -->` line. When one is stale the test
fails with the regenerated text to paste; `SPECRUN_DOCS_RECORD=1 pytest tests/test_docs_generated.py` writes it
in place instead (the only time this test writes into the checkout)."""

from __future__ import annotations

import argparse
import ast
import os
import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_architecture import MODULES, PACKAGE, RANKS, parsed, stage_of

pytestmark = pytest.mark.xdist_group("architecture")  # the modules' trees, parsed once with test_architecture's
RECORD = os.environ.get("SPECRUN_DOCS_RECORD") == "1"
WIDTH = 115  # the docs' line length
NAME_COLUMN = 24  # where a layout entry's text starts


def run_flags_text() -> str:
    """`specrun run --help` at the docs' width, from its first flag group on (the usage line and the spec
    argument are the command's synopsis, written above the block)."""
    from specrun.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # argparse's own
    run = commands.choices["run"]
    run.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=WIDTH, max_help_position=NAME_COLUMN)
    text = run.format_help()
    first_group = run._action_groups[2].title  # after argparse's positional and options groups
    return text[text.index(f"\n{first_group}:\n") + 1:]


def docstring_lead(path: Path) -> str:
    """What a module is, in its own words: its docstring's first paragraph up to the first '.', ':' or ';' that
    ends a clause (followed by a space or the end, outside parentheses and backquotes)."""
    doc = ast.get_docstring(parsed(path)) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    depth, quoted = 0, False
    for index, char in enumerate(paragraph):
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "()":
            depth += 1 if char == "(" else -1
        elif not quoted and depth == 0 and char in ".:;" and paragraph[index + 1:index + 2] in ("", " "):
            return paragraph[:index]
    return paragraph


def layout_text() -> str:
    """Every package and module under src/specrun/ with its rank and its docstring lead, in rank order."""
    packages: dict[str, list[str]] = {}
    for module in MODULES:
        parts = module.split(".")
        packages.setdefault(parts[1] if len(parts) > 1 else "", []).append(module)
    lines = ["src/specrun/"]
    for top in sorted(packages, key=lambda name: (RANKS[stage_of(f"specrun.{name}" if name else "specrun")], name)):
        if not top:
            continue
        own = f"specrun.{top}"
        path = MODULES[own]
        head = f"{top}/" if path.name == "__init__.py" else f"{top}.py"
        lead = docstring_lead(path)
        lines += _entry(f"  {head}", f"rank {RANKS[stage_of(own)]}" + (f": {lead}" if lead else ""))
        for module in sorted(packages[top]):
            if module == own:
                continue
            rank = RANKS[stage_of(module)]
            shown = module.removeprefix(f"{own}.").replace(".", "/")
            own_rank = f" (rank {rank})" if rank != RANKS[stage_of(own)] else ""
            lines += _entry(f"    {shown}", docstring_lead(MODULES[module]) + own_rank)
    return "\n".join(lines) + "\n"


def _entry(name: str, text: str) -> list[str]:
    indent = " " * NAME_COLUMN
    first = name.ljust(NAME_COLUMN) if len(name) < NAME_COLUMN else f"{name}\n{indent}"
    return textwrap.fill(text, WIDTH, initial_indent=first, subsequent_indent=indent).split("\n")


def generated_block(text: str, name: str) -> tuple[int, int]:
    """Where the block after `<!-- generated: NAME ... -->` holds its text: (start, end) offsets, fences out."""
    marker = re.search(rf"^<!-- generated: {re.escape(name)}\b.*-->\n```[a-z]*\n", text, flags=re.M)
    assert marker, f"no `<!-- generated: {name} ... -->` line before a fenced block"
    end = text.index("\n```", marker.end() - 1) + 1
    return marker.end(), end


def check_generated(doc: Path, name: str, expected: str, record: bool = RECORD) -> None:
    text = doc.read_text(encoding="utf-8")
    start, end = generated_block(text, name)
    if text[start:end] == expected:
        return
    if record:
        doc.write_text(text[:start] + expected + text[end:], encoding="utf-8")
        return
    shown = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc
    raise AssertionError(f"{shown}'s generated block {name!r} is stale; paste this into it (or run "
                         f"SPECRUN_DOCS_RECORD=1 pytest tests/{Path(__file__).name}):\n{expected}")


def test_the_cli_docs_flag_list_is_the_parsers() -> None:
    check_generated(ROOT / "docs" / "cli.md", "run flags", run_flags_text())


def test_the_layout_map_is_the_ranks_and_the_docstrings() -> None:
    check_generated(ROOT / "docs" / "development.md", "layout", layout_text())


def test_a_stale_block_fails_with_the_text_and_recording_writes_it(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# T\n\n<!-- generated: demo (x) -->\n```text\nold\n```\nafter\n", encoding="utf-8")
    start, end = generated_block(doc.read_text(encoding="utf-8"), "demo")
    assert doc.read_text(encoding="utf-8")[start:end] == "old\n"
    with pytest.raises(AssertionError, match="paste this into it") as failed:
        check_generated(doc, "demo", "new\nlines\n", record=False)
    assert str(failed.value).endswith("\nnew\nlines\n")
    check_generated(doc, "demo", "new\nlines\n", record=True)
    assert doc.read_text(encoding="utf-8") == "# T\n\n<!-- generated: demo (x) -->\n```text\nnew\nlines\n```\nafter\n"
    check_generated(doc, "demo", "new\nlines\n", record=False)


def test_every_module_has_a_docstring_lead() -> None:
    """The layout map is only as good as the docstrings: every module says what it is (`__main__` aside)."""
    missing = [name for name, path in MODULES.items() if not docstring_lead(path) and path.name != "__main__.py"]
    assert not missing, missing
    assert {stage_of(name) for name in MODULES} <= set(RANKS) and PACKAGE.is_dir()
