"""JSON Lines (`jsonl`), one object a line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specrun.core.contracts import ReaderEntry, Rows
from specrun.core.errors import DataError
from specrun.core.registry import register_reader


def read_jsonl(path: Path, layout: Any, split: str) -> Rows:
    """JSON Lines, one object a line, with the json module (see _read_delimited for why not datasets)."""
    rows = []
    for number, record in _jsonl(path):
        if not isinstance(record, dict):
            raise DataError("expected a JSON object", file=str(path), line=number)
        rows.append(record)
    return rows


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8-sig") as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield number, json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise DataError(f"invalid JSON: {exc.msg}", file=str(path), line=number) from None
        except UnicodeDecodeError:
            raise DataError("not UTF-8", file=str(path)) from None


register_reader(ReaderEntry("jsonl", read_jsonl, description="JSON Lines, one object a line"))
