"""The xls reader on its own, on the real JACSTS sheet: every cell as the sheet shows it, against xlrd read
directly; `names` for a sheet without a header row."""

from __future__ import annotations

from pathlib import Path

from specrun.core.contracts import ReadLayout
from specrun.readers.xls import read_xls
from tests.conftest import require


def test_cells_as_the_sheet_shows_them(data_dir: Path) -> None:
    xlrd = require("xlrd")
    path = data_dir / "jacsts" / "dataset_JA_Clinical_STS.xls"
    sheet = xlrd.open_workbook(str(path)).sheet_by_index(0)
    rows = read_xls(path, ReadLayout("xls", {"names": ["a", "b", "score"]}), "test")
    assert len(rows) == sheet.nrows
    for index in (0, sheet.nrows // 2, sheet.nrows - 1):
        a, b, score = (sheet.cell_value(index, c) for c in range(3))
        expected = str(int(score)) if isinstance(score, float) and score.is_integer() else str(score)
        assert rows[index] == {"a": a, "b": b, "score": expected}
