"""The one Markdown escaper: text from specs, data and results files made to render as exactly itself in
CommonMark + GFM (inline text and table cells), so a card, a report, a comparison or a leaderboard never turns a
sentence into markup."""

from __future__ import annotations

import re
from typing import Any

# characters that are markup wherever they stand in CommonMark/GFM inline text
_ALWAYS = re.compile(r"([\\`*\[\]<~|])")
# `_` is markup only at a word's edge (an intraword run of `_` never opens or closes emphasis): snake_case ids and
# MTEB's org__model folder names stay readable, and a path stays one that can be copied from a terminal
_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z_])_+|_+(?![0-9A-Za-z_])")
_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")  # `&amp;` in a sentence must stay those five characters
# what opens a block when it starts a line: heading, quote, list item, thematic break, setext underline, fence
_BLOCK_START = re.compile(r"^(\s*)(\d{0,9})([#>+=-]|(?<=\d)[.)])")


def md_text(value: Any) -> str:
    """Inline Markdown text that renders as exactly `value`, white space folded to single spaces (a line break
    inside spec prose would otherwise start a new block)."""
    text = " ".join(str(value).split())
    text = _ALWAYS.sub(r"\\\1", text)
    text = _EDGE_UNDERSCORE.sub(_escaped_run, text)
    text = _ENTITY.sub(r"\\&", text)
    return _BLOCK_START.sub(r"\1\2\\\3", text)


def md_cell(value: Any) -> str:
    """One table cell that renders as exactly `value`: `|` escaped, line breaks as <br>, and leading or trailing
    white space (which GFM trims from a cell) kept as character references."""
    text = repr(value) if isinstance(value, float) else str(value)
    stripped = text.strip()
    if not stripped:
        return "".join(_space_ref(c) for c in text)
    start, end = text.index(stripped[0]), len(text.rstrip())
    lines = [_escape_inline_keep_space(line) for line in stripped.replace("\r\n", "\n").replace("\r", "\n")
             .split("\n")]
    return ("".join(_space_ref(c) for c in text[:start]) + "<br>".join(lines)
            + "".join(_space_ref(c) for c in text[end:]))


def _escaped_run(match: re.Match[str]) -> str:
    return "\\_" * len(match.group())


def _space_ref(char: str) -> str:
    return f"&#{ord(char)};"


def _escape_inline_keep_space(text: str) -> str:
    """Like md_text, but white space inside the text is kept as it is (a cell quotes data verbatim; a cell is
    inline, so nothing there can start a block)."""
    text = _ALWAYS.sub(r"\\\1", text)
    text = _EDGE_UNDERSCORE.sub(_escaped_run, text)
    return _ENTITY.sub(r"\\&", text).replace("\t", "&#9;")
