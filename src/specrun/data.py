"""Data stage: resolve a split's source at its pinned revision (hub or local mirror), map rows to items,
give ids, check the content fingerprint and select the subset with the spec's seed.

A new file format is one reader function plus one line in READERS.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specrun.errors import DataError, OfflineError
from specrun.protocols import PROTOCOLS, Item
from specrun.spec import HubDataset, LoadedSpec

DATA_DIR_ENV = "SPECRUN_DATA_DIR"

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class SplitData:
    """The items of one split after mapping, and what identifies them."""

    name: str
    source: str
    origin: str  # the file read, or hub id@revision
    items: list[Item]  # selected subset, in source order
    n_source: int  # items in the split before the subset
    fingerprint: str  # of all mapped items of the split, before the subset


def _datasets() -> Any:
    """The datasets library, imported on first use and kept quiet (rich shows our own progress)."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    return datasets


def _read_delimited(path: Path, delimiter: str) -> Rows:
    datasets = _datasets()
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        header = next(reader, None)
        first_row = next(reader, None)
    if not header:
        raise DataError("file is empty; expected a header row", file=str(path))
    if first_row is None:
        return []  # header only: an empty split, reported against the spec by load_split
    # Every column read as text: pandas' type guessing would turn '007' into 7 and 'NA' into NaN.
    features = datasets.Features({column: datasets.Value("string") for column in header})
    dataset = datasets.load_dataset("csv", data_files=str(path), split="train", delimiter=delimiter,
                                    na_filter=False, features=features, encoding="utf-8-sig")
    return dataset.to_list()


def read_tsv(path: Path) -> Rows:
    return _read_delimited(path, "\t")


def read_csv(path: Path) -> Rows:
    return _read_delimited(path, ",")


def read_jsonl(path: Path) -> Rows:
    datasets = _datasets()

    return datasets.load_dataset("json", data_files=str(path), split="train").to_list()


READERS: dict[str, Callable[[Path], Rows]] = {
    "tsv": read_tsv,
    "csv": read_csv,
    "jsonl": read_jsonl,
}


def resolve_data_dir(flag: str | None) -> Path | None:
    value = flag if flag is not None else os.environ.get(DATA_DIR_ENV)
    if not value:
        return None
    path = Path(value)
    if not path.is_dir():
        raise DataError(f"data mirror {value!r} is not a directory (from {'--data-dir' if flag else DATA_DIR_ENV})")
    return path


def mirror_file(data_dir: Path, source_name: str, relative: str, loaded: LoadedSpec,
                key: tuple[str, ...]) -> Path:
    """The mirror file for a source split; it must stay inside <data-dir>/<source>/ (symlinks included)."""
    root = (data_dir / source_name).resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise loaded.error(key, f"{relative!r} resolves outside the data mirror folder {root}")
    if not path.is_file():
        raise loaded.error(key, f"mirror file {data_dir / source_name / relative} does not exist")
    return path


def _read_rows(loaded: LoadedSpec, source_name: str, source: HubDataset, source_split: str,
               data_dir: Path | None) -> tuple[Rows, str]:
    if data_dir is not None:
        key = ("sources", source_name, "mirror", "files", source_split)
        path = mirror_file(data_dir, source_name, source.mirror.files[source_split], loaded, key)
        try:
            return READERS[source.mirror.format](path), str(path)
        except DataError:
            raise
        except (UnicodeDecodeError, ValueError, OSError) as exc:
            raise DataError(f"cannot read as {source.mirror.format}: {_first_line(exc)}", file=str(path)) from None
        except Exception as exc:  # datasets/pyarrow wrap parse errors in their own types
            raise DataError(f"cannot read as {source.mirror.format}: {_first_line(exc)}", file=str(path)) from None
    return _read_hub(source, source_split), f"{source.path}@{source.revision}"


def _read_hub(source: HubDataset, source_split: str) -> Rows:
    datasets = _datasets()

    try:
        dataset = datasets.load_dataset(source.path, revision=source.revision, split=source_split)
    except Exception as exc:
        text = _first_line(exc)
        if any(word in text.lower() for word in ("connect", "offline", "resolve", "network", "timed out", "couldn't")):
            raise OfflineError(f"cannot reach the Hugging Face hub for {source.path}@{source.revision[:12]} "
                               f"({text}); pass --data-dir DIR (or set {DATA_DIR_ENV}) to use a local mirror") from None
        raise DataError(f"cannot load {source.path}@{source.revision[:12]} split {source_split}: {text}; "
                        f"pass --data-dir DIR to use a local mirror") from None
    return dataset.to_list()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _convert(value: Any, kind: str, *, origin: str, row: int, column: str) -> Any:
    where = {"file": origin}
    if kind == "text":
        if not isinstance(value, str):
            raise DataError(f"row {row}: column {column!r}: expected text, got {value!r}", **where)
        if not value.strip():
            raise DataError(f"row {row}: column {column!r}: empty text", **where)
        return value
    if kind == "number":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise DataError(f"row {row}: column {column!r}: expected a number, got {value!r}", **where) from None
        if not math.isfinite(number):
            raise DataError(f"row {row}: column {column!r}: expected a finite number, got {value!r}", **where)
        return number
    raise AssertionError(f"unknown field kind {kind}")


def map_items(rows: Rows, source: HubDataset, fields: dict[str, str], origin: str, loaded: LoadedSpec,
              source_name: str) -> list[Item]:
    """Rows -> items with ids; every field a protocol needs converted and checked."""
    if rows:
        present = set(rows[0])
        for field, column in source.columns.items():
            if column not in present:
                raise loaded.error(("sources", source_name, "columns", field),
                                   f"column {column!r} is not in {origin}; it has: {', '.join(rows[0])}")
        if source.ids.column and source.ids.column not in present:
            raise loaded.error(("sources", source_name, "ids", "column"),
                               f"column {source.ids.column!r} is not in {origin}")
    items: list[Item] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        number = index + 1  # 1-based data row, header not counted
        raw_id = row[source.ids.column] if source.ids.column else f"{index:0{source.ids.width}d}"
        item_id = f"{source.ids.prefix}{raw_id}"
        if item_id in seen:
            raise DataError(f"row {number}: duplicate item id {item_id!r}", file=origin)
        seen.add(item_id)
        values = {
            field: _convert(row[source.columns[field]], kind, origin=origin, row=number, column=source.columns[field])
            for field, kind in fields.items()
        }
        for field, column in source.columns.items():  # mapped but not needed by the protocol: kept as is
            values.setdefault(field, row[column])
        items.append(Item(id=item_id, fields=values))
    return items


def fingerprint(items: Sequence[Item]) -> str:
    """sha256 over the mapped items (id and fields), independent of the file format they came from."""
    digest = hashlib.sha256()
    for item in items:
        record = json.dumps([item.id, item.fields], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        digest.update(record.encode("utf-8"))
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


def select(items: list[Item], selection: str | int, seed: int) -> list[Item]:
    """All items, or `selection` of them drawn with the seed, kept in source order."""
    if selection == "all":
        return items
    chosen = np.sort(np.random.default_rng(seed).choice(len(items), size=selection, replace=False))
    return [items[i] for i in chosen]


def needed_fields(loaded: LoadedSpec) -> dict[str, str]:
    """Item fields (and their kinds) that the spec's protocols need."""
    fields: dict[str, str] = {}
    for protocol in loaded.spec.protocols.values():
        fields.update(PROTOCOLS[protocol.kind].item_fields)
    return fields


def load_split(loaded: LoadedSpec, split_name: str, data_dir: Path | None, *, check: bool = True) -> SplitData:
    spec = loaded.spec
    split = spec.splits[split_name]
    source = spec.sources[split.source]
    rows, origin = _read_rows(loaded, split.source, source, split.source_split, data_dir)
    items = map_items(rows, source, needed_fields(loaded), origin, loaded, split.source)
    if not items:
        raise loaded.error(("splits", split_name), f"split is empty: {origin} has no rows")
    found = fingerprint(items)
    if check and split.fingerprint != found:
        raise loaded.error(("splits", split_name, "fingerprint"),
                           f"data does not match the spec: spec says {split.fingerprint}, {origin} gives {found}")
    selection = spec.subset.splits[split_name]
    if selection != "all" and selection > len(items):
        raise loaded.error(("subset", "splits", split_name),
                           f"asks for {selection} items but {origin} has {len(items)}")
    selected = select(items, selection, spec.subset.seed)
    return SplitData(name=split_name, source=split.source, origin=origin, items=selected,
                     n_source=len(items), fingerprint=found)
