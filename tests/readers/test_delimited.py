"""The tsv/csv reader on its own: RFC-4180 quoting, header or `names`, ragged rows declared, quotes as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from specrun.core.contracts import ReadLayout
from specrun.core.errors import DataError
from specrun.readers.delimited import read_csv, read_tsv


def write(tmp_path: Path, text: str, name: str = "data.tsv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_header_quoted_tab_and_line_break(tmp_path: Path) -> None:
    path = write(tmp_path, '\ufeffa\tb\n"one\ttab"\t"two\nlines"\nplain\t"say ""hi"""\n')
    assert read_tsv(path, ReadLayout("tsv"), "test") == [{"a": "one\ttab", "b": "two\nlines"},
                                                       {"a": "plain", "b": 'say "hi"'}]


def test_quotes_as_text_with_quoting_none(tmp_path: Path) -> None:
    path = write(tmp_path, 'a\tb\n"lone quote\tx"\n')
    rows = read_tsv(path, ReadLayout("tsv", {"quoting": "none"}), "test")
    assert rows == [{"a": '"lone quote', "b": 'x"'}]


def test_names_optional_trailing_and_ignored_extra_fields(tmp_path: Path) -> None:
    path = write(tmp_path, "1\t2\n3\t4\tl\n5\t6\tl\to\textra\n")
    with pytest.raises(DataError, match=r"5 fields, expected 2 to 4 .* `extra_fields: ignore`"):
        read_tsv(path, ReadLayout("tsv", {"names": ["x", "y"], "optional_names": ["l", "o"]}), "test")
    rows = read_tsv(path, ReadLayout("tsv", {"names": ["x", "y"], "optional_names": ["l", "o"],
                                             "extra_fields": "ignore"}), "test")
    assert rows == [{"x": "1", "y": "2", "l": None, "o": None}, {"x": "3", "y": "4", "l": "l", "o": None},
                    {"x": "5", "y": "6", "l": "l", "o": "o"}]


def test_csv_is_comma_separated(tmp_path: Path) -> None:
    path = write(tmp_path, 'a,b\n"x, y",2\n', "data.csv")
    assert read_csv(path, ReadLayout("csv"), "test") == [{"a": "x, y", "b": "2"}]


@pytest.mark.parametrize("text, expected", [("", "file is empty"), (b"a\tb\n\xff\t1\n", "not UTF-8"),
                                            ('a\tb\n"open\t1\n', "malformed tsv")])
def test_bad_files_are_one_data_error(text: str | bytes, expected: str, tmp_path: Path) -> None:
    path = tmp_path / "data.tsv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(DataError, match=expected):
        read_tsv(path, ReadLayout("tsv"), "test")


@pytest.mark.parametrize("bad_line", [2, 1502])
def test_a_byte_that_is_not_utf8_is_named_at_its_own_line(bad_line: int, tmp_path: Path) -> None:
    """csv reads 8 KiB ahead of its parser: its line count named line 1361 for a Latin-1 byte on line 1502, and
    line 1 for one on line 2 (a bad-input hunt). The line and offset are now the byte's own."""
    lines = [b"a,b"] + [f"x{i},{i}".encode() for i in range(2000)]
    lines[bad_line - 1] += "\u00e9".encode("latin-1")
    path = tmp_path / "data.csv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(DataError) as raised:
        read_csv(path, ReadLayout("csv"), "test")
    offset = len(b"\n".join(lines[:bad_line])) - 1
    assert raised.value.one_line().endswith(f"data.csv:{bad_line}: not UTF-8 (byte 0xe9 at offset {offset}); save "
                                            "the file as UTF-8"), raised.value.one_line()
