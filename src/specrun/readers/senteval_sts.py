"""SentEval's layout of the SemEval STS test sets (`senteval_sts`): one folder per year holding, per set,
`STS.input.<set>.txt` (one pair a line, the two sentences tab-separated) and `STS.gs.<set>.txt` (the gold score
of the same line, or an empty line where the pair has no gold). One row per scored pair: `set`, `sentence1`,
`sentence2` and `score`, every value the text of the file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator

from specrun.core.contracts import ReaderEntry, ReadLayout, Rows
from specrun.core.errors import DataError
from specrun.core.registry import register_reader
from specrun.core.types import Strict
from specrun.readers.aligned_lines import file_lines
from specrun.readers.delimited import duplicates

INPUT = re.compile(r"STS\.input\.(.+)\.txt")
GOLD = re.compile(r"STS\.gs\.(.+)\.txt")
SetName = Annotated[str, Field(min_length=1, pattern=r"^[^/\\]+$")]


class SentEvalStsOptions(Strict):
    sets: list[SetName] | None = Field(
        None, min_length=1, description="The sets to read, each with its input and gold file (default: every set "
                                        "whose input and gold files are in the folder).")

    @field_validator("sets")
    @classmethod
    def _once(cls, sets: list[str] | None) -> list[str] | None:
        twice = duplicates(sets or [])
        if twice:
            raise ValueError(f"set {twice[0]!r} is named twice")
        return sets


def _files(name: str) -> tuple[str, str]:
    return f"STS.input.{name}.txt", f"STS.gs.{name}.txt"


def _sets(folder: Path, named: list[str] | None) -> list[str]:
    """The sets to read, sorted by name (code point order). Discovered: every input file with its gold file; a
    gold file without input is left out (SentEval's copy holds gold for sets whose input is not redistributed,
    and MTEB leaves them out too); an input without gold is refused, as its pairs cannot be scored and leaving
    them out would change the number silently. Named (`sets`): each must have both files."""
    if not folder.is_dir():
        raise DataError("expected a folder of STS.input.<set>.txt and STS.gs.<set>.txt files", file=str(folder))
    if named is not None:
        for name in named:
            for file in _files(name):
                if not (folder / file).is_file():
                    raise DataError(f"set {name!r} is named in `sets`, but {file} is not in the folder",
                                    file=str(folder))
        return sorted(named)
    names = [path.name for path in folder.iterdir() if path.is_file()]
    inputs = {m.group(1) for name in names if (m := INPUT.fullmatch(name))}
    golds = {m.group(1) for name in names if (m := GOLD.fullmatch(name))}
    ungraded = sorted(inputs - golds)
    if ungraded:
        raise DataError(f"{_files(ungraded[0])[0]} has no gold file {_files(ungraded[0])[1]} beside it; its pairs "
                        "cannot be scored (name the sets to read in the source's `options: {sets: [...]}`)",
                        file=str(folder))
    if not inputs:
        raise DataError("holds no STS.input.<set>.txt with its STS.gs.<set>.txt", file=str(folder))
    return sorted(inputs)


def _pairs(folder: Path, name: str) -> Rows:
    """The scored pairs of one set in line order. Lines split at '\\n' only, a trailing '\\r' dropped (as
    `aligned_lines`); no quoting: a quote is part of the sentence. An input line with other than two
    tab-separated fields is refused, scored or not: the file is not in this layout."""
    input_name, gold_name = _files(name)
    inputs, golds = file_lines(folder / input_name), file_lines(folder / gold_name)
    if len(inputs) != len(golds):
        raise DataError(f"{len(inputs)} lines, but its gold file {gold_name} has {len(golds)}; line i of each "
                        "must belong together", file=str(folder / input_name))
    rows = []
    for number, (line, score) in enumerate(zip(inputs, golds, strict=True), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(f"{len(fields)} tab-separated fields, expected 2 (sentence1, sentence2)",
                            file=str(folder / input_name), line=number)
        if score.strip():  # an empty gold line: the pair has no gold and is not evaluated
            rows.append({"set": name, "sentence1": fields[0], "sentence2": fields[1], "score": score})
    return rows


def read_senteval_sts(path: Path, layout: ReadLayout, source_split: str) -> Rows:
    """Every scored pair of the folder: sets sorted by name, then line order within a set. (Whether MTEB's hub
    copies keep this order is not checked here: the order changes no point value, but ids by row number and the
    seeded bootstrap's draws follow it.)"""
    named = SentEvalStsOptions.model_validate(dict(layout.options)).sets
    return [row for name in _sets(path, named) for row in _pairs(path, name)]


def _files_read(options: Mapping[str, Any], source_split: str) -> list[str]:
    """The files the named sets read; discovered sets are known only once the folder is listed, so a spec that
    pins the folder's `contents` names its `sets` to have every file read checked against a pin."""
    named = SentEvalStsOptions.model_validate(dict(options)).sets or []
    return [file for name in named for file in _files(name)]


register_reader(ReaderEntry(
    "senteval_sts", read_senteval_sts, folder=True, options=SentEvalStsOptions, files_read=_files_read,
    description="SentEval's STS folder: STS.input.<set>.txt pairs with STS.gs.<set>.txt scores; rows set, "
                "sentence1, sentence2, score"))
