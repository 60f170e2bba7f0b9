"""Tab- and comma-separated files (`tsv`, `csv`) with the csv module."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from specrun.core.contracts import ReaderEntry, ReadLayout, Rows
from specrun.core.errors import DataError
from specrun.core.fields import parse_number
from specrun.core.files import not_utf8
from specrun.core.registry import register_reader
from specrun.core.types import Strict


class DelimitedOptions(Strict):
    """The options of tsv and csv (in the source's `options`, or at its top level as older specs write them)."""

    quoting: Literal["minimal", "none"] = Field("minimal", description="'none' reads quotes as text.")
    names: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, description="Column names of a file without a header row.")
    optional_names: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, description="Trailing fields a row may lack (null when absent), after the named columns.")
    extra_fields: Literal["error", "ignore"] = Field(
        "error", description="What to do with fields beyond the named (and optional) columns.")

    @model_validator(mode="after")
    def _optional_after_named(self) -> DelimitedOptions:
        if self.optional_names and not self.names:
            raise ValueError("optional trailing fields need `names` for the required columns (a header row cannot "
                             "name fields some rows lack)")
        twice = duplicates([*(self.names or []), *(self.optional_names or [])])
        if twice:
            raise ValueError(f"column {twice[0]!r} is named twice in `names`/`optional_names`")
        return self


def duplicates(names: list[str]) -> list[str]:
    """The names that appear more than once, in order of their second appearance."""
    seen: set[str] = set()
    twice = []
    for name in names:
        if name in seen:
            twice.append(name)
        seen.add(name)
    return twice


def header_problem(header: list[str], delimiter: str) -> str | None:
    """Why a header row read from the file cannot be one (one field holding the other delimiter, a column named
    twice), with the way out; or None."""
    other, fmt = ("\t", "tsv") if delimiter == "," else (",", "csv")
    if len(header) == 1 and other in header[0]:
        return (f"the header is one field holding {'tabs' if fmt == 'tsv' else 'commas'}: is the file "
                f"{'tab' if fmt == 'tsv' else 'comma'}-separated (`format: {fmt}`)?")
    twice = duplicates([name for name in header if name.strip()])  # blank names (trailing delimiters) may repeat
    if not twice:
        return None
    looks = " (the row looks like data)" if any(parse_number(cell) is not None or not cell.strip()
                                                 for cell in header) else ""
    return (f"the header names column {twice[0]!r} twice{looks}; rename one, or if the file has no header row, "
            "give the column names in the source's `options: {names: [...]}`")


def _header(reader: Iterator[list[str]], options: DelimitedOptions, delimiter: str, path: Path) -> list[str]:
    """The column names: the spec's `names`, else the file's first row, refused when it cannot be a header."""
    header = list(options.names) if options.names else next(reader, None)
    if not header:
        raise DataError("file is empty; expected a header row", file=str(path))
    problem = None if options.names else header_problem(header, delimiter)
    if problem:
        raise DataError(problem, file=str(path), line=1)
    return header


def _field_count_problem(record: list[str], header: list[str], optional: list[str], delimiter: str) -> str:
    """Why a row has too few or too many fields, with the option or format that would read it."""
    columns = header + optional
    expected = f"{len(header)}" + (f" to {len(columns)}" if optional else "")
    hint = ("; rows may end in fields the spec does not name: declare them in `optional_names` "
            "or set `extra_fields: ignore`") if len(record) > len(columns) else ""
    other = {",": "\t", "\t": ","}[delimiter]
    if len(record) == 1 and other in record[0]:
        hint = (f"; the line holds {'tabs' if other == chr(9) else 'commas'}: is the file "
                f"{'tab' if other == chr(9) else 'comma'}-separated (`format: "
                f"{'tsv' if other == chr(9) else 'csv'}`)?")
    return f"{len(record)} fields, expected {expected} ({', '.join(columns)}){hint}"


def _malformed(exc: csv.Error, fmt: str, quoted: bool, start: int, line: int) -> str:
    """The csv module's complaint, with the way out when a stray quote is the likely cause and the line the
    record it swallowed starts on."""
    quote = quoted and any(text in str(exc) for text in ("expected after", "unexpected end of data"))
    hint = ("; if quotes are part of the text (a lone \" in a sentence), set `quoting: none` in the spec's "
            "source (its `options`)" if quote else "")
    where = f" (in the record that starts on line {start})" if quote and start != line else ""
    return f"malformed {fmt}: {exc}{where}{hint}"


def _read_delimited(path: Path, layout: ReadLayout, delimiter: str) -> Rows:
    """A local TSV/CSV file with the csv module: RFC-4180 quoting (a quoted tab or line break stays in its field),
    every value text, errors with their line. datasets' csv builder would parse the same way through pandas but
    first builds and fingerprints an Arrow cache of each file, about half of a fully cached run; datasets stays
    the loader for data on the hub.

    Ragged rows, as real distributions have them (STS Benchmark: two optional trailing licence/source fields on
    some lines), are declared: `optional_names` are trailing fields a row may lack (None when absent), and
    `extra_fields: ignore` drops fields beyond all declared ones. A row shorter than the required columns, or
    longer than declared without `ignore`, stays an error that names both options."""
    options = DelimitedOptions.model_validate(dict(layout.options))
    quoting = csv.QUOTE_NONE if options.quoting == "none" else csv.QUOTE_MINIMAL
    optional = list(options.optional_names or [])
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, quoting=quoting, strict=True)
        start = 1  # the line the record being read starts on (a quoted field may span lines)
        try:
            header = _header(reader, options, delimiter, path)
            columns = header + optional
            rows = []
            start = reader.line_num + 1
            for record in reader:
                start = reader.line_num + 1
                if not record:
                    continue
                if len(record) > len(columns) and options.extra_fields == "ignore":
                    record = record[:len(columns)]
                if not len(header) <= len(record) <= len(columns):
                    raise DataError(_field_count_problem(record, header, optional, delimiter), file=str(path),
                                    line=reader.line_num)
                rows.append(dict(zip(columns, record + [None] * (len(columns) - len(record)), strict=True)))
        except csv.Error as exc:
            problem = _malformed(exc, layout.format, quoting != csv.QUOTE_NONE, start, reader.line_num)
            raise DataError(problem, file=str(path), line=reader.line_num) from None
        except UnicodeDecodeError:
            raise not_utf8(path) from None
    return rows


def read_tsv(path: Path, layout: Any, split: str) -> Rows:
    return _read_delimited(path, layout, "\t")


def read_csv(path: Path, layout: Any, split: str) -> Rows:
    return _read_delimited(path, layout, ",")


register_reader(ReaderEntry("tsv", read_tsv, options=DelimitedOptions, extensions=(".tsv",),
                            description="tab-separated, header row or `names`; `quoting`, `optional_names`, "
                                        "`extra_fields`"))
register_reader(ReaderEntry("csv", read_csv, options=DelimitedOptions, extensions=(".csv",),
                            description="comma-separated, as tsv"))
