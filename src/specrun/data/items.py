"""Items of the data stage: rows mapped to items (values maps, conversion, ids), the content fingerprint, and the
subset drawn with the spec's seed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specrun.core.corpus import fingerprint_default
from specrun.core.errors import DataError, FieldError
from specrun.core.registry import FIELD_KINDS, Rows
from specrun.core.types import Item
from specrun.plan import Plan, PlannedSource
from specrun.spec import GitSource, HubDataset, Not


def _convert(value: Any, kind: str, *, origin: str, row: int, column: str) -> Any:
    """A raw value as the field kind a protocol asked for (FIELD_KINDS), or one line naming row and column."""
    try:
        return FIELD_KINDS[kind](value)
    except FieldError as exc:
        raise DataError(f"row {row}: column {column!r}: {exc}", file=origin) from None


@dataclass(frozen=True)
class RawRow:
    """One row as read, with where it came from and the number its id is made of."""

    origin: str  # the file (or hub id) it was read from
    number: int  # 1-based data row in that file, header not counted (error messages)
    id_number: str  # the zero-padded row number (running across files) or file-qualified number
    row: dict[str, Any]


def map_items(rows: Sequence[RawRow], plan: Plan, planned: PlannedSource) -> list[Item]:
    """Rows -> items with ids; every field a protocol needs converted and checked."""
    source, source_name, fields = planned.declared, planned.name, plan.fields
    checked: set[str] = set()
    items: list[Item] = []
    seen: set[str] = set()
    for raw in rows:
        if raw.origin not in checked:  # each file's columns, once
            checked.add(raw.origin)
            present = set(raw.row)
            for field, column in source.columns.items():
                if column not in present:
                    raise plan.error(("sources", source_name, "columns", field),
                                       f"column {column!r} is not in {raw.origin}; it has: {', '.join(raw.row)}")
            if source.ids.column and source.ids.column not in present:
                raise plan.error(("sources", source_name, "ids", "column"),
                                   f"column {source.ids.column!r} is not in {raw.origin}")
        row = raw.row
        item_id = f"{source.ids.prefix}{row[source.ids.column] if source.ids.column else raw.id_number}"
        if item_id in seen:
            raise DataError(f"row {raw.number}: duplicate item id {item_id!r}", file=raw.origin)
        seen.add(item_id)
        values = {
            field: _convert(_mapped(row, source, field, raw), kind, origin=raw.origin,
                            row=raw.number, column=source.columns[field])
            for field, kind in fields.items()
        }
        for field, column in source.columns.items():  # mapped but not needed by the protocol: kept as is
            values.setdefault(field, row[column])
        items.append(Item(id=item_id, fields=values))
    return items


def _mapped(row: dict[str, Any], source: HubDataset | GitSource, field: str, raw: RawRow) -> Any:
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
        record = json.dumps([item.id, item.fields], sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                            default=fingerprint_default)
        digest.update(record.encode("utf-8"))
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


def select(items: list[Item], selection: str | int, seed: int) -> list[Item]:
    """All items, or `selection` of them drawn with the seed, kept in source order."""
    if selection == "all":
        return items
    chosen = np.sort(np.random.default_rng(seed).choice(len(items), size=int(selection), replace=False))
    return [items[i] for i in chosen]


def where_keeps(where: dict[str, Any] | None, plan: Plan, split_name: str,
                origin: str, rows: Rows) -> Callable[[dict[str, Any]], bool]:
    """The spec's `where` as a test of one row: equal to a value, any of a list, or none of `not`."""
    tests: list[Callable[[dict[str, Any]], bool]] = []
    for column, wanted in (where or {}).items():
        if rows and column not in rows[0]:
            raise plan.error(("splits", split_name, "where", column), f"column {column!r} is not in {origin}")
        negate = isinstance(wanted, Not)
        values = wanted.not_ if isinstance(wanted, Not) else wanted
        allowed = {str(v) for v in (values if isinstance(values, list) else [values])}
        tests.append(lambda row, c=column, a=allowed, n=negate: (str(row[c]) in a) != n)
    return lambda row: all(test(row) for test in tests)


