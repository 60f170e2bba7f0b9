"""Ours beside MTEB's published values, as one Markdown table: the one renderer of `compare --published` and a
suite's published section. A published value is shown, never resampled: it has no interval and no units."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specrun.core.markdown import md_text
from specrun.mteb.results.lookup import Found

NO_COUNTERPART = "its spec metric names no MTEB counterpart"


@dataclass(frozen=True)
class PublishedCell:
    """One row: its leading cells (plain text, escaped here), our value (None: not run), the published value
    found for it (None: the spec metric names no MTEB counterpart), and how a missing value is named."""

    keys: tuple[str, ...]
    ours: float | None
    found: Found | None
    label: str


def published_table(columns: Sequence[str], cells: Sequence[PublishedCell]) -> list[str]:
    """The table (header included), then a note per distinct lookup note and a line per value not published."""
    lines = ["| " + " | ".join([*columns, "ours", "published", "ours − published"]) + " |",
             "| " + " | ".join(["---"] * (len(columns) + 3)) + " |"]
    missing = []
    for cell in cells:
        keys = " | ".join(md_text(key) for key in cell.keys)
        ours = "missing" if cell.ours is None else f"{cell.ours:.4f}"
        if cell.found is None or cell.found.value is None:
            missing.append(f"{md_text(cell.label)}: " + (NO_COUNTERPART if cell.found is None
                                                         else md_text(cell.found.reason or "")))
            lines.append(f"| {keys} | {ours} | — | — |")
            continue
        published = cell.found.value.value
        difference = "—" if cell.ours is None else f"{cell.ours - published:+.3e}"
        lines.append(f"| {keys} | {ours} | {published:.4f} | {difference} |")
    notes = dict.fromkeys(cell.found.note for cell in cells if cell.found is not None and cell.found.note)
    footer = [f"Note: {md_text(note)}." for note in notes] + [f"Not published: {line}." for line in missing]
    return [*lines, "", *footer] if footer else lines


__all__ = ["NO_COUNTERPART", "PublishedCell", "published_table"]
