"""Legacy Excel (`xls`), first sheet, through xlrd."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from specrun.core.contracts import ReaderEntry, ReadLayout, Rows
from specrun.core.errors import DataError
from specrun.core.registry import register_reader
from specrun.core.types import Strict


class XlsOptions(Strict):
    """The options of xls (in the source's `options`, or `names` at its top level as older specs write it)."""

    names: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, description="Column names of a sheet without a header row.")


def read_xls(path: Path, layout: ReadLayout, split: str) -> Rows:
    """Legacy Excel (.xls), first sheet, through xlrd (datasets and pandas both delegate .xls to it anyway)."""
    try:
        import xlrd
    except ImportError:
        raise DataError("reading .xls needs xlrd: pip install 'specrun[xls]'", file=str(path)) from None
    try:
        sheet = xlrd.open_workbook(str(path), on_demand=True).sheet_by_index(0)
    except xlrd.XLRDError as exc:
        raise DataError(f"cannot read as xls: {exc}", file=str(path)) from None
    table = [[_cell_text(sheet.cell_value(r, c)) for c in range(sheet.ncols)] for r in range(sheet.nrows)]
    names = XlsOptions.model_validate(dict(layout.options)).names
    header = list(names) if names else [str(name) for name in (table.pop(0) if table else [])]
    for number, row in enumerate(table, start=1 if names else 2):
        if len(row) != len(header):
            raise DataError(f"sheet row {number} has {len(row)} cells, expected {len(header)}", file=str(path))
    return [dict(zip(header, row, strict=True)) for row in table]


def _cell_text(value: Any) -> Any:
    """Excel stores every number as a float: 4.0 is written back as '4', as the sheet shows it."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


register_reader(ReaderEntry("xls", read_xls, options=XlsOptions, extensions=(".xls",),
                            description="legacy Excel, first sheet (needs specrun[xls])"))
