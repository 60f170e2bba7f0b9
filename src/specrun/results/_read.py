"""results.json and its predictions read back: bounded reads, the schema, the sha256 the results pin."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from specrun.core.errors import ResultsError
from specrun.core.files import read_regular_file
from specrun.results.model import PREDICTIONS_LIMIT, RESULTS_LIMIT, Results, Unit


def read_results(path: Path) -> Results:
    """results.json parsed and schema-checked (bounded read); its consistency is checked by specrun.results.verify."""
    raw = read_regular_file(path, RESULTS_LIMIT, "the results file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultsError("not a specrun results file: not UTF-8", file=str(path)) from None
    try:
        return Results.model_validate_json(text)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ResultsError(f"not a specrun results file: {err['msg']}", file=str(path), key=key or None) from None


def is_plain_file_name(name: str) -> bool:
    """A name that can only mean a file beside results.json: no folder part, no '..', not absolute."""
    return (bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name
            and ":" not in name and name == name.strip() and len(name) <= 255)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError
    return float(value)


def read_predictions(results_path: Path, results: Results) -> dict[Unit, tuple[list[str], dict[str, np.ndarray]]]:
    """The per-unit arrays of a run, from the predictions file its results.json pins (a plain file name beside it,
    a bounded read, sha256 and row count checked)."""
    name = results.predictions.file
    if not is_plain_file_name(name):
        raise ResultsError(f"predictions file {name!r} must be a plain file name beside results.json",
                           file=str(results_path), key="predictions.file")
    path = results_path.parent / name
    raw = read_regular_file(path, PREDICTIONS_LIMIT, "the predictions file")
    found = hashlib.sha256(raw).hexdigest()
    if found != results.predictions.sha256:
        raise ResultsError(f"sha256 {found} differs from the {results.predictions.sha256} that results.json pins",
                           file=str(path))
    lines = raw.decode("utf-8", errors="replace").splitlines()
    grouped = _grouped_rows(lines, path)
    if len(lines) != results.predictions.rows:
        raise ResultsError(f"{len(lines)} rows, not the {results.predictions.rows} that results.json records",
                           file=str(path))
    for (split, protocol), (ids, arrays) in grouped.items():
        short = [key for key, values in arrays.items() if len(values) != len(ids)]
        if short:
            raise ResultsError(f"split {split}, protocol {protocol}: column {short[0]} is missing from some rows",
                               file=str(path))
        ragged = [key for key, values in arrays.items() if len({len(v) if isinstance(v, list) else -1
                                                                for v in values}) > 1]
        if ragged:
            raise ResultsError(f"split {split}, protocol {protocol}: column {ragged[0]} holds a different number "
                               "of runs in some rows", file=str(path))
    return {unit: (ids, {key: np.asarray(values) for key, values in arrays.items()})
            for unit, (ids, arrays) in grouped.items()}


def _grouped_rows(lines: list[str], path: Path) -> dict[Unit, tuple[list[str], dict[str, list[Any]]]]:
    """The predictions' rows by unit (split, protocol): their ids and each column's cells, in file order; a row
    that is not a JSON object of a string split, protocol and id and number (or list of numbers) cells is refused."""
    grouped: dict[Unit, tuple[list[str], dict[str, list[Any]]]] = {}
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line)
            unit = (row.pop("split"), row.pop("protocol"))
            unit_id = row.pop("id")
            if not all(isinstance(part, str) for part in (*unit, unit_id)):
                raise TypeError
            ids, arrays = grouped.setdefault(unit, ([], {}))
            ids.append(unit_id)
            for key, value in row.items():  # a number, or a list of one number per run
                cell = [_number(v) for v in value] if isinstance(value, list) and value else _number(value)
                arrays.setdefault(key, []).append(cell)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ResultsError("not a predictions row", file=str(path), line=number) from None
    return grouped
