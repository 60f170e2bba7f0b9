"""One folder per query (`query_folders`): question.txt and data.csv (question,answer,label)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from specrun.core.contracts import ReaderEntry, Rows
from specrun.core.errors import DataError
from specrun.core.files import open_regular
from specrun.core.registry import register_reader


def _natural(name: str) -> tuple[int, int | str]:
    return (0, int(name)) if name.isdigit() else (1, name)


def read_query_folders(path: Path, layout: Any, split: str) -> Rows:
    """One folder per query: question.txt (the query) and data.csv (header question,answer,label; UTF-8 with or
    without BOM; RFC-4180 quoting with line breaks inside fields). Read with the csv module: datasets would build
    one Arrow cache per folder for a few kilobytes each."""
    if not path.is_dir():
        raise DataError("expected a folder of query folders", file=str(path))
    rows = []
    for folder in sorted((p for p in path.iterdir() if p.is_dir()), key=lambda p: _natural(p.name)):
        question_file, data_file = folder / "question.txt", folder / "data.csv"
        for needed in (question_file, data_file):
            if not needed.exists():
                raise DataError(f"query folder {folder.name} has no {needed.name}", file=str(folder))
            open_regular(needed, needed.name)
        query = question_file.read_text(encoding="utf-8-sig").rstrip("\r\n")
        candidates, relevance = [], []
        with data_file.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = {"question", "label"} - set(reader.fieldnames or [])
            if missing:
                raise DataError(f"header lacks {', '.join(sorted(missing))}", file=str(data_file), line=1)
            for record in reader:
                label = (record["label"] or "").strip()
                if label not in ("0", "1"):
                    raise DataError(f"label {label!r} is not 0 or 1", file=str(data_file), line=reader.line_num,
                                    key="label")
                candidates.append(record["question"])
                relevance.append(int(label))
        rows.append({"query_id": folder.name, "query": query, "candidates": candidates, "relevance": relevance})
    return rows


register_reader(ReaderEntry("query_folders", read_query_folders, folder=True,
                            description="one folder per query: question.txt and data.csv (question,answer,label)"))
