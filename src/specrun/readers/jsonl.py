"""JSON Lines (`jsonl`), one object a line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specrun.core.contracts import ReaderEntry, Rows
from specrun.core.errors import DataError
from specrun.core.registry import register_reader


def read_jsonl(path: Path, layout: Any, split: str) -> Rows:
    """JSON Lines, one object a line, with the json module (see _read_delimited for why not datasets)."""
    rows = []
    for number, record in jsonl_lines(path):
        if not isinstance(record, dict):
            raise DataError("expected a JSON object", file=str(path), line=number)
        rows.append(record)
    return rows


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # a \uD800-\uDFFF escape: half of a pair, or a lone one
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in a parsed JSON value's strings (keys included), or None."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        return found.group() if found else None
    if isinstance(value, dict):
        return next((s for item in value.items() for part in item if (s := _lone_surrogate(part))), None)
    if isinstance(value, list):
        return next((s for part in value if (s := _lone_surrogate(part))), None)
    return None


class _DuplicateKey(ValueError):
    """A JSON object with one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def parse_line(line: str | bytes, path: Path, number: int) -> Any:
    """One JSON Lines line parsed; invalid JSON or a lone surrogate escape (JSON allows '\\ud800', which no text
    can hold) is one line naming the line."""
    try:
        text = line if isinstance(line, str) else line.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError("not UTF-8", file=str(path), line=number) from None
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg}", file=str(path), line=number) from None
    except _DuplicateKey as exc:  # json.loads keeps the last value silently: which one was meant is unknown
        raise DataError(f"the key {exc.args[0]!r} is given twice in one object", file=str(path), line=number) from None
    except ValueError as exc:  # an integer beyond Python's digit limit (int_max_str_digits)
        raise DataError(f"invalid JSON: {str(exc).splitlines()[0]}", file=str(path), line=number) from None
    if _ESCAPED_SURROGATE.search(text) and (lone := _lone_surrogate(value)) is not None:
        raise DataError(f"a string holds the lone surrogate \\u{ord(lone):04x} (half of a UTF-16 "
                        "pair, not text); fix the escape in the file", file=str(path), line=number)
    return value


def jsonl_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line; text that is not UTF-8 is one line naming its line
    (read as bytes, line by line: a text-mode read fails a whole block at once, line unknown)."""
    for _offset, number, value in jsonl_at_offsets(path):
        yield number, value


BOM = b"\xef\xbb\xbf"


LONE_CR = re.compile(rb"\r(?!\n)")  # a line break of its own in text mode's universal newlines, as \n and \r\n


def jsonl_at_offsets(path: Path) -> Iterator[tuple[int, int, Any]]:
    """(byte offset, line number, parsed value) of each non-blank line, read as bytes so that each line can be
    read again later by its offset; lines and blank lines are those `jsonl_lines` reads in text mode (\\n, \\r\\n and
    a lone \\r end a line; a line of white space only, Unicode's included, is skipped)."""
    with path.open("rb") as handle:
        offset, number = 0, 0
        for raw in handle:
            if offset == 0 and raw.startswith(BOM):
                raw, offset = raw[len(BOM):], len(BOM)
            pieces = LONE_CR.split(raw) if b"\r" in raw else [raw]
            for k, piece in enumerate(pieces):
                number += 1
                start = offset
                offset += len(piece) + (1 if k < len(pieces) - 1 else 0)  # the lone \r it was split at
                try:
                    text = piece.decode("utf-8")
                except UnicodeDecodeError:
                    raise DataError("not UTF-8", file=str(path), line=number) from None
                if text.strip():
                    yield start, number, parse_line(text, path, number)


register_reader(ReaderEntry("jsonl", read_jsonl, extensions=(".jsonl", ".json"),
                            description="JSON Lines, one object a line"))
