"""Items of the data stage: rows mapped to items (values maps, conversion, ids), the content fingerprint, and the
subset drawn with the spec's seed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specrun.core.corpus import fingerprint_default
from specrun.core.errors import DataError, FieldError
from specrun.core.fields import parse_number
from specrun.core.registry import FIELD_KINDS
from specrun.core.types import Item
from specrun.plan import Plan, PlannedSource
from specrun.spec import GitSource, HubDataset, Not
from specrun.spec.model import Scalar


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
    source, fields = planned.declared, plan.fields
    checked: set[str] = set()
    items: list[Item] = []
    seen: set[str] = set()
    kinds: dict[str, tuple[str | None, Any, int]] = {}  # field -> the kind, value and row it first had
    for raw in rows:
        if raw.origin not in checked:  # each file's columns, once
            checked.add(raw.origin)
            _check_columns(raw, plan, planned)
        row = raw.row
        for column in (*source.columns.values(), *([source.ids.column] if source.ids.column else [])):
            if column not in row:
                raise DataError(f"row {raw.number}: column {column!r} is missing (the spec maps it); every row "
                                "needs it", file=raw.origin)
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
        _check_one_kind(values, kinds, raw, source)
        items.append(Item(id=item_id, fields=values))
    return items


def _check_columns(raw: RawRow, plan: Plan, planned: PlannedSource) -> None:
    """A file's first row holds every column the source maps, and its id column: checked once per file."""
    source, source_name = planned.declared, planned.name
    present = set(raw.row)
    for field, column in source.columns.items():
        if column not in present:
            raise plan.error(("sources", source_name, "columns", field),
                             f"column {column!r} is not in {raw.origin}; it has: "
                             f"{', '.join(map(str, raw.row))}{_headerless_hint(planned, raw.row)}")
    if source.ids.column and source.ids.column not in present:
        raise plan.error(("sources", source_name, "ids", "column"),
                         f"column {source.ids.column!r} is not in {raw.origin}")


def _check_one_kind(values: dict[str, Any], kinds: dict[str, tuple[str | None, Any, int]], raw: RawRow,
                    source: HubDataset | GitSource) -> None:
    """Each field's values are of one kind across rows (1 and '1' would be two labels); `kinds` holds the kind,
    value and row each field first had."""
    for field, value in values.items():
        kind = _value_kind(value)
        first = kinds.setdefault(field, (kind, value, raw.number))
        if kind != first[0] and None not in (kind, first[0]):
            column = source.columns[field]
            raise DataError(f"row {raw.number}: column {column!r} holds {kind} {value!r} where row {first[2]} "
                            f"holds {first[0]} {first[1]!r}; write every value of the column one way (or map "
                            f"them with `values.{column}`)", file=raw.origin)


def _value_kind(value: Any) -> str | None:
    """What a field value is, for the check that a column holds one kind (1 and '1' would be two labels)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "the number"
    if isinstance(value, str):
        return "the text"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _headerless_hint(planned: PlannedSource, row: dict[str, Any]) -> str:
    """When the column names read from the file look like data (numbers, empty names), the way to name them."""
    reader, layout = planned.reader, planned.layout
    if reader is None or layout is None or reader.options is None or "names" not in reader.options.model_fields:
        return ""
    if layout.options.get("names") or not any(parse_number(name) is not None or not str(name).strip()
                                              for name in row):
        return ""
    return ("; the first row looks like data, not a header: if the file has none, give the column names in the "
            "source's `options: {names: [...]}`")


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


def exploded(rows: Sequence[dict[str, Any]], columns: Sequence[str], origin: str, plan: Plan,
             split_name: str, row_column: str | None = None, first: int = 0) -> list[dict[str, Any]]:
    """The split's `explode`: a row whose named cells hold lists becomes one row per element, the other columns
    repeated (as MTEB's transforms chain rows of lists, or take a one-row split's lists); a row whose named cells
    hold no list stays as it is. Lists of unequal length in one row, or lists beside scalars, are refused: no
    element is paired with another row's or dropped silently. `explode_row` (row_column) gives each new row the
    number of its row, from `first`: the set a row of lists is (MTEB's legacy clustering)."""
    found: list[dict[str, Any]] = []
    for number, row in enumerate(rows, start=1):
        missing = [column for column in columns if column not in row]
        if missing:
            raise plan.error(("splits", split_name, "explode"), f"column {missing[0]!r} is not in {origin}; it has: "
                                                                f"{', '.join(map(str, row))}")
        if row_column is not None:
            if row_column in row:
                raise plan.error(("splits", split_name, "explode_row"), f"column {row_column!r} is already in "
                                                                        f"{origin}; name a new one")
            row = {**row, row_column: first + number - 1}
        cells = [row[column] for column in columns]
        lists = [isinstance(cell, (list, tuple)) for cell in cells]
        if not any(lists):
            found.append(row)
            continue
        lengths = {len(cell) for cell, is_list in zip(cells, lists, strict=True) if is_list}
        if row_column is not None and lengths == {0}:  # MTEB scores an empty set 1; as no items it would vanish
            raise DataError(f"row {number}: an empty set (every column of `explode` an empty list); a set needs "
                            "items to be scored", file=origin)
        if not all(lists) or len(lengths) != 1:
            shape = ", ".join(f"{column}: {len(cell) if isinstance(cell, (list, tuple)) else 'not a list'}"
                              for column, cell in zip(columns, cells, strict=True))
            raise DataError(f"row {number}: the columns of `explode` must hold lists of one length ({shape})",
                            file=origin)
        found.extend({**row, **dict(zip(columns, values, strict=True))} for values in zip(*cells, strict=True))
    return found


class WhereFilter:
    """The spec's `where` of one split as a test of rows: a column equal to a value, any of a list, or none of
    `not`. A number in the spec matches a cell of the same value (4 matches '4.0'); text matches text as written.
    Every row must hold the filtered columns, and each value named, `not` values too, must match some row of the
    split (a value that matches nothing is a typo that silently keeps, drops or fails to remove rows)."""

    def __init__(self, where: dict[str, Any] | None, plan: Plan, split_name: str) -> None:
        self.plan, self.split_name = plan, split_name
        self.tests: list[tuple[str, bool, list[Scalar]]] = []
        for column, wanted in (where or {}).items():
            negate = isinstance(wanted, Not)
            values = wanted.not_ if isinstance(wanted, Not) else wanted
            self.tests.append((column, negate, list(values) if isinstance(values, list) else [values]))
        self.matched: set[tuple[str, int]] = set()  # (column, index of the value) that some row matched
        self.origins: list[str] = []

    def keeps(self, row: dict[str, Any], origin: str, number: int) -> bool:
        """Whether the row is kept; `number` is its 1-based data row in `origin` (for a missing column)."""
        if origin not in self.origins:
            self.origins.append(origin)
        kept = True
        for column, negate, values in self.tests:
            if column not in row:
                if number == 1:
                    raise self.plan.error(("splits", self.split_name, "where", column),
                                          f"column {column!r} is not in {origin}; it has: {', '.join(map(str, row))}")
                raise DataError(f"row {number}: column {column!r} of the split's `where` is missing", file=origin)
            hit = next((index for index, value in enumerate(values) if _equal(row[column], value)), None)
            if hit is not None:
                self.matched.add((column, hit))
            kept = kept and ((hit is not None) != negate)
        return kept

    def described(self) -> str:
        return ", ".join(f"{column} {'not ' if negate else ''}in {values!r}" if len(values) > 1 or negate
                         else f"{column} = {values[0]!r}" for column, negate, values in self.tests)

    def check(self, kept: int) -> None:
        """After every row of the split: refuse a filter that kept nothing, or a value that matched no row: a typo
        in a value to keep drops rows silently, and in a `not` value ('4' against cells '4.0') removes nothing."""
        if not self.tests:
            return
        origin = "; ".join(self.origins)
        for column, negate, values in self.tests:
            for index, value in enumerate(values):
                if (column, index) not in self.matched:
                    effect = "removes nothing" if negate else "keeps or drops rows silently"
                    raise self.plan.error(("splits", self.split_name, "where", column),
                                          f"{value!r} matches no row of {origin}: check the value (a typo "
                                          f"{effect}; text is matched as written, a YAML number by value)")
        if not kept:
            raise self.plan.error(("splits", self.split_name, "where"),
                                  f"no row of {origin} passes `where` ({self.described()}); the split would be "
                                  "empty")


def _equal(cell: Any, value: Scalar) -> bool:
    """A cell against a `where` value: numbers by value (YAML 4 matches '4', '4.0' and 4.0; '4' matches a JSON
    4.0), text as written."""
    numeric_value = isinstance(value, (int, float)) and not isinstance(value, bool)
    numeric_cell = isinstance(cell, (int, float)) and not isinstance(cell, bool)
    if numeric_value or numeric_cell:
        left, right = parse_number(cell), parse_number(value)
        if left is not None and right is not None:
            return left == right
        if numeric_value:
            return False
    return str(cell) == str(value)
