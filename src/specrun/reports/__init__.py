"""Reports stage: renderers read results.json (and the spec) only, never recompute a number: the benchmark card
and the results report as Markdown (`_card`), the report's plots (`plots`) and the card as an HTML page (`_html`)."""

from __future__ import annotations

from specrun.reports._card import (
    choice_notes,
    citation_section,
    file_lines,
    metric_lines,
    outside_note,
    outside_notes,
    render_card,
    source_lines,
    subset_lines,
    table_row,
)
from specrun.reports._html import embed_plots, markdown_to_html, render_html

__all__ = ["choice_notes", "citation_section", "embed_plots", "file_lines", "markdown_to_html", "metric_lines",
           "outside_note", "outside_notes", "render_card", "render_html", "source_lines", "subset_lines", "table_row"]
