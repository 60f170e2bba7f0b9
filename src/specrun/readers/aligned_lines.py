"""Line-aligned text files (`aligned_lines`): a folder holding one plain UTF-8 file per column, one sentence per
line, line i of each file belonging together (parallel corpora of translated sentences). Row i holds line i of
every file; the files must have the same number of lines."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from specrun.core.contracts import ReaderEntry, ReadLayout, Rows
from specrun.core.errors import DataError
from specrun.core.files import not_utf8, open_regular
from specrun.core.registry import register_reader
from specrun.core.types import Strict

FileName = Annotated[str, Field(min_length=1, pattern=r"^[^/\\]+$")]


class AlignedLinesOptions(Strict):
    files: dict[Annotated[str, Field(min_length=1)], FileName] = Field(
        min_length=2, description="Column -> file name inside the source split's folder; '{split}' in a name is "
                                  "the source split's name (corpus.{split}.en).")


def _names(options: Mapping[str, Any], source_split: str) -> dict[str, str]:
    typed = AlignedLinesOptions.model_validate(dict(options))
    return {column: name.replace("{split}", source_split) for column, name in typed.files.items()}


def file_lines(path: Path) -> list[str]:
    """The lines of a file split at '\\n' only (a sentence may hold U+2028 or a form feed, which str.splitlines
    would treat as line ends and so shift every later line), a trailing '\\r' dropped, no final empty line."""
    open_regular(path, path.name)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    lines = text.removeprefix("\ufeff").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.removesuffix("\r") for line in lines]
    for number, line in enumerate(lines, start=1):
        if "\r" in line:  # old Mac line ends: the whole file would read as one sentence
            raise DataError("holds a carriage return inside a line (a file with CR line ends, or a stray CR); "
                            "lines end in \\n (or \\r\\n): convert the file, e.g. `tr '\\r' '\\n'`",
                            file=str(path), line=number)
    return lines


def read_aligned_lines(path: Path, layout: ReadLayout, source_split: str) -> Rows:
    columns = {column: file_lines(path / name) for column, name in _names(layout.options, source_split).items()}
    counts = {column: len(lines) for column, lines in columns.items()}
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{column} {count}" for column, count in counts.items())
        raise DataError(f"the aligned files have different numbers of lines ({shown}); line i of each must "
                        "belong together", file=str(path))
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


register_reader(ReaderEntry(
    "aligned_lines", read_aligned_lines, folder=True, options=AlignedLinesOptions,
    files_read=lambda options, split: list(_names(options, split).values()),
    description="a folder of line-aligned plain-text files, one column each (parallel sentences)"))
