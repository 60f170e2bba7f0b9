"""Tab- and comma-separated files (`tsv`, `csv`) with the csv module."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from specrun.core.contracts import ReaderEntry, Rows
from specrun.core.errors import DataError
from specrun.core.registry import register_reader


def _read_delimited(path: Path, layout: Any, delimiter: str) -> Rows:
    """A local TSV/CSV file with the csv module: RFC-4180 quoting (a quoted tab or line break stays in its field),
    every value text, errors with their line. datasets' csv builder would parse the same way through pandas but
    first builds and fingerprints an Arrow cache of each file, about half of a fully cached run; datasets stays
    the loader for data on the hub.

    Ragged rows, as real distributions have them (STS Benchmark: two optional trailing licence/source fields on
    some lines), are declared: `optional_names` are trailing fields a row may lack (None when absent), and
    `extra_fields: ignore` drops fields beyond all declared ones. A row shorter than the required columns, or
    longer than declared without `ignore`, stays an error that names both options."""
    quoting = csv.QUOTE_NONE if layout.quoting == "none" else csv.QUOTE_MINIMAL
    optional = list(layout.optional_names or [])
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, quoting=quoting, strict=True)
        try:
            header = list(layout.names) if layout.names else next(reader, None)
            if not header:
                raise DataError("file is empty; expected a header row", file=str(path))
            columns = header + optional
            rows = []
            for record in reader:
                if not record:
                    continue
                if len(record) > len(columns) and layout.extra_fields == "ignore":
                    record = record[:len(columns)]
                if not len(header) <= len(record) <= len(columns):
                    expected = f"{len(header)}" + (f" to {len(columns)}" if optional else "")
                    hint = ("; rows may end in fields the spec does not name: declare them in `optional_names` "
                            "or set `extra_fields: ignore`") if len(record) > len(columns) else ""
                    raise DataError(f"{len(record)} fields, expected {expected} ({', '.join(columns)}){hint}",
                                    file=str(path), line=reader.line_num)
                rows.append(dict(zip(columns, record + [None] * (len(columns) - len(record)), strict=True)))
        except csv.Error as exc:
            raise DataError(f"malformed {layout.format}: {exc}", file=str(path), line=reader.line_num) from None
        except UnicodeDecodeError:
            raise DataError("not UTF-8", file=str(path), line=reader.line_num + 1) from None
    return rows


def read_tsv(path: Path, layout: Any, split: str) -> Rows:
    return _read_delimited(path, layout, "\t")


def read_csv(path: Path, layout: Any, split: str) -> Rows:
    return _read_delimited(path, layout, ",")


KEYS = frozenset({"quoting", "names", "optional_names", "extra_fields"})
register_reader(ReaderEntry("tsv", read_tsv, layout_keys=KEYS,
                            description="tab-separated, header row or `names`; `quoting`, `optional_names`, "
                                        "`extra_fields`"))
register_reader(ReaderEntry("csv", read_csv, layout_keys=KEYS, description="comma-separated, as tsv"))
