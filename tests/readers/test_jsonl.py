"""The jsonl reader on its own: one object a line, blank lines skipped, bad lines named by number."""

from __future__ import annotations

from pathlib import Path

import pytest

from specrun.core.contracts import ReadLayout
from specrun.core.errors import DataError
from specrun.readers.jsonl import read_jsonl


def test_objects_in_file_order_with_a_bom_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('\ufeff{"a": 1, "t": "x"}\n\n{"a": 2.5, "t": "y"}\n', encoding="utf-8")
    assert read_jsonl(path, ReadLayout("jsonl"), "test") == [{"a": 1, "t": "x"}, {"a": 2.5, "t": "y"}]


@pytest.mark.parametrize("text, expected", [('{"a": 1}\n[1, 2]\n', "2: expected a JSON object"),
                                            ('{"a": 1}\n{"a": \n', "2: invalid JSON")])
def test_a_bad_line_is_named(text: str, expected: str, tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as caught:
        read_jsonl(path, ReadLayout("jsonl"), "test")
    assert expected in caught.value.one_line()
