"""Items of the data stage: rows mapped to items (values maps, conversion, ids), the content fingerprint, and the
subset drawn with the spec's seed."""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specrun.errors import DataError
from specrun.protocols import PROTOCOLS, Item
from specrun.registry import Rows
from specrun.spec import GitSource, HubDataset, LoadedSpec, Not

# A plain decimal number as data files write it. Python's float() also takes '2_2' (22.0), '١٢' (Arabic-Indic
# digits) and surrounding whitespace; a gold score written so is a defect of the file, not a number.
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)",
                      re.ASCII | re.IGNORECASE)


def parse_number(value: Any) -> float | None:
    """A float from a JSON/Excel number or a plain decimal string; None for anything else (bools included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _DECIMAL.fullmatch(value.strip(" ")):
        return float(value)
    return None


def visible(text: str) -> bool:
    """Whether a text holds anything but white space and invisible format characters (zero-width space, joiner,
    BOM, bidi marks): an embedding of nothing is not a sentence."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Zs", "Zl", "Zp", "Mn")
               for ch in text)


def _convert(value: Any, kind: str, *, origin: str, row: int, column: str) -> Any:
    def fail(expected: str) -> DataError:
        shown = value if not isinstance(value, list) else f"a list of {len(value)}"
        return DataError(f"row {row}: column {column!r}: expected {expected}, got {shown!r}", file=origin)

    if kind == "text":
        if not isinstance(value, str):
            raise fail("text")
        if not visible(value):
            raise DataError(f"row {row}: column {column!r}: empty text"
                            + (" (only invisible characters)" if value.strip() else ""), file=origin)
        return value
    if kind == "number":
        number = parse_number(value)
        if number is None:
            raise fail("a number")
        if not math.isfinite(number):
            raise fail("a finite number")
        return number
    if kind == "texts":
        if not isinstance(value, list) or not value or not all(isinstance(t, str) and visible(t) for t in value):
            raise fail("a non-empty list of non-empty texts")
        return value
    if kind == "labels":
        labels = [str(label).strip() for label in value] if isinstance(value, list) else None
        if labels is None or any(label not in ("0", "1") for label in labels):
            bad = next((label for label in labels or [] if label not in ("0", "1")), value)
            raise DataError(f"row {row}: column {column!r}: labels must be 0 or 1, got {bad!r}", file=origin)
        return [int(label) for label in labels]
    raise AssertionError(f"unknown field kind {kind}")


@dataclass(frozen=True)
class RawRow:
    """One row as read, with where it came from and the number its id is made of."""

    origin: str  # the file (or hub id) it was read from
    number: int  # 1-based data row in that file, header not counted (error messages)
    id_number: str  # the zero-padded row number (running across files) or file-qualified number
    row: dict[str, Any]


def map_items(rows: Sequence[RawRow], source: HubDataset | GitSource, fields: dict[str, str],
              loaded: LoadedSpec, source_name: str) -> list[Item]:
    """Rows -> items with ids; every field a protocol needs converted and checked."""
    checked: set[str] = set()
    items: list[Item] = []
    seen: set[str] = set()
    for raw in rows:
        if raw.origin not in checked:  # each file's columns, once
            checked.add(raw.origin)
            present = set(raw.row)
            for field, column in source.columns.items():
                if column not in present:
                    raise loaded.error(("sources", source_name, "columns", field),
                                       f"column {column!r} is not in {raw.origin}; it has: {', '.join(raw.row)}")
            if source.ids.column and source.ids.column not in present:
                raise loaded.error(("sources", source_name, "ids", "column"),
                                   f"column {source.ids.column!r} is not in {raw.origin}")
        row = raw.row
        item_id = f"{source.ids.prefix}{row[source.ids.column] if source.ids.column else raw.id_number}"
        if item_id in seen:
            raise DataError(f"row {raw.number}: duplicate item id {item_id!r}", file=raw.origin)
        seen.add(item_id)
        values = {
            field: _convert(_mapped(row, source, field, loaded, source_name, raw), kind, origin=raw.origin,
                            row=raw.number, column=source.columns[field])
            for field, kind in fields.items()
        }
        for field, column in source.columns.items():  # mapped but not needed by the protocol: kept as is
            values.setdefault(field, row[column])
        items.append(Item(id=item_id, fields=values))
    return items


def _mapped(row: dict[str, Any], source: HubDataset | GitSource, field: str, loaded: LoadedSpec,
            source_name: str, raw: RawRow) -> Any:
    """A column's value after the spec's `values` map of that column (e.g. 'entailment' -> 0), if it has one."""
    column = source.columns[field]
    table = (source.values or {}).get(column)
    value = row[column]
    if table is None:
        return value
    if str(value) not in table:
        known = ", ".join(repr(k) for k in table)
        raise DataError(f"row {raw.number}: column {column!r}: {value!r} is not in `values.{column}` "
                        f"(it maps {known})", file=raw.origin)
    return table[str(value)]


def fingerprint(items: Sequence[Item]) -> str:
    """sha256 over the mapped items (id and fields), independent of the file format they came from."""
    digest = hashlib.sha256()
    for item in items:
        record = json.dumps([item.id, item.fields], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        digest.update(record.encode("utf-8"))
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


def select(items: list[Item], selection: str | int, seed: int) -> list[Item]:
    """All items, or `selection` of them drawn with the seed, kept in source order."""
    if selection == "all":
        return items
    chosen = np.sort(np.random.default_rng(seed).choice(len(items), size=int(selection), replace=False))
    return [items[i] for i in chosen]


def needed_fields(loaded: LoadedSpec) -> dict[str, str]:
    """Item fields (and their kinds) that the spec's protocols need."""
    fields: dict[str, str] = {}
    for protocol in loaded.spec.protocols.values():
        fields.update(PROTOCOLS[protocol.kind].item_fields)
    return fields


def where_keeps(where: dict[str, Any] | None, loaded: LoadedSpec, split_name: str,
                origin: str, rows: Rows) -> Callable[[dict[str, Any]], bool]:
    """The spec's `where` as a test of one row: equal to a value, any of a list, or none of `not`."""
    tests: list[Callable[[dict[str, Any]], bool]] = []
    for column, wanted in (where or {}).items():
        if rows and column not in rows[0]:
            raise loaded.error(("splits", split_name, "where", column), f"column {column!r} is not in {origin}")
        negate = isinstance(wanted, Not)
        values = wanted.not_ if isinstance(wanted, Not) else wanted
        allowed = {str(v) for v in (values if isinstance(values, list) else [values])}
        tests.append(lambda row, c=column, a=allowed, n=negate: (str(row[c]) in a) != n)
    return lambda row: all(test(row) for test in tests)


