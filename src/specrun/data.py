"""Data stage: resolve a split's source at its pinned revision (hub, git file, or local mirror), verify it,
map rows to items, give ids, check the content fingerprint and select the subset with the spec's seed.

A new file format is one reader function plus one line in READERS.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
import shutil
import stat
import tempfile
import unicodedata
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specrun.errors import DataError, OfflineError, first_line
from specrun.files import cache_root, sha256_file
from specrun.protocols import PROTOCOLS, Item
from specrun.spec import FileRef, GitSource, HubDataset, Layout, LoadedSpec

DATA_DIR_ENV = "SPECRUN_DATA_DIR"
GIT_RAW_URL = "https://raw.githubusercontent.com/{repo}/{revision}/{path}"

MAX_MEMBER_BYTES = 4 << 30  # an archive member larger than this is refused
RATIO_CHECK_BYTES = 16 << 20  # above this size a member must also compress by at most MAX_RATIO
MAX_RATIO = 200  # text compresses 3-10x; a zip bomb compresses about 1000x

Rows = list[dict[str, Any]]
Reader = Callable[[Path, Layout, str], Rows]  # (file or folder, layout, source split) -> rows


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


def _read_delimited(path: Path, layout: Layout, delimiter: str) -> Rows:
    """A local TSV/CSV file with the csv module: RFC-4180 quoting (a quoted tab or line break stays in its field),
    every value text, errors with their line. datasets' csv builder would parse the same way through pandas but
    first builds and fingerprints an Arrow cache of each file, about half of a fully cached run; datasets stays
    the loader for data on the hub."""
    quoting = csv.QUOTE_NONE if layout.quoting == "none" else csv.QUOTE_MINIMAL
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, quoting=quoting, strict=True)
        try:
            header = list(layout.names) if layout.names else next(reader, None)
            if not header:
                raise DataError("file is empty; expected a header row", file=str(path))
            rows = []
            for record in reader:
                if not record:
                    continue
                if len(record) != len(header):
                    raise DataError(f"{len(record)} fields, expected {len(header)} ({', '.join(header)})",
                                    file=str(path), line=reader.line_num)
                rows.append(dict(zip(header, record, strict=True)))
        except csv.Error as exc:
            raise DataError(f"malformed {layout.format}: {exc}", file=str(path), line=reader.line_num) from None
        except UnicodeDecodeError:
            raise DataError("not UTF-8", file=str(path), line=reader.line_num + 1) from None
    return rows


def read_tsv(path: Path, layout: Layout, split: str) -> Rows:
    return _read_delimited(path, layout, "\t")


def read_csv(path: Path, layout: Layout, split: str) -> Rows:
    return _read_delimited(path, layout, ",")


def read_jsonl(path: Path, layout: Layout, split: str) -> Rows:
    """JSON Lines, one object a line, with the json module (see _read_delimited for why not datasets)."""
    rows = []
    for number, record in _jsonl(path):
        if not isinstance(record, dict):
            raise DataError("expected a JSON object", file=str(path), line=number)
        rows.append(record)
    return rows


def read_xls(path: Path, layout: Layout, split: str) -> Rows:
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
    header = list(layout.names) if layout.names else [str(name) for name in (table.pop(0) if table else [])]
    for number, row in enumerate(table, start=1 if layout.names else 2):
        if len(row) != len(header):
            raise DataError(f"sheet row {number} has {len(row)} cells, expected {len(header)}", file=str(path))
    return [dict(zip(header, row, strict=True)) for row in table]


def _cell_text(value: Any) -> Any:
    """Excel stores every number as a float: 4.0 is written back as '4', as the sheet shows it."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


def _natural(name: str) -> tuple[int, int | str]:
    return (0, int(name)) if name.isdigit() else (1, name)


def read_query_folders(path: Path, layout: Layout, split: str) -> Rows:
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
            _open_regular(needed, needed.name)
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


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8-sig") as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield number, json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise DataError(f"invalid JSON: {exc.msg}", file=str(path), line=number) from None
        except UnicodeDecodeError:
            raise DataError("not UTF-8", file=str(path)) from None


def read_beir(path: Path, layout: Layout, split: str) -> Rows:
    """The BEIR/MTEB retrieval layout: corpus.jsonl (_id, title, text), queries.jsonl (_id, text) and
    qrels/<split>.tsv (query-id, corpus-id, score; score > 0 is relevant). Every query of the qrels ranks the
    whole corpus (one shared list), in corpus order for ties."""
    for needed in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        _open_regular(path / needed, needed)
    corpus_ids, corpus_texts = [], []
    for number, doc in _jsonl(path / "corpus.jsonl"):
        if "_id" not in doc or "text" not in doc:
            raise DataError("a corpus record needs _id and text", file=str(path / "corpus.jsonl"), line=number)
        corpus_ids.append(str(doc["_id"]))
        title = doc.get("title") or ""
        corpus_texts.append(f"{title} {doc['text']}".strip() if title else doc["text"])
    position = {doc_id: i for i, doc_id in enumerate(corpus_ids)}
    queries = {str(q["_id"]): q.get("text") for _, q in _jsonl(path / "queries.jsonl")}
    qrels_file = path / "qrels" / f"{split}.tsv"
    relevant: dict[str, set[int]] = {}
    with qrels_file.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        for record in reader:
            query_id, doc_id = record.get("query-id"), record.get("corpus-id")
            if query_id not in queries:
                raise DataError(f"query {query_id!r} is not in queries.jsonl", file=str(qrels_file),
                                line=reader.line_num)
            if doc_id not in position:
                raise DataError(f"document {doc_id!r} is not in corpus.jsonl", file=str(qrels_file),
                                line=reader.line_num)
            relevant.setdefault(query_id, set())
            if float(record.get("score") or 0) > 0:
                relevant[query_id].add(position[doc_id])
    rows = []
    for query_id, hits in relevant.items():
        labels = [0] * len(corpus_texts)
        for index in hits:
            labels[index] = 1
        rows.append({"query_id": query_id, "query": queries[query_id], "candidates": corpus_texts,
                     "relevance": labels})
    return rows


READERS: dict[str, Reader] = {
    "tsv": read_tsv,
    "csv": read_csv,
    "jsonl": read_jsonl,
    "xls": read_xls,
    "query_folders": read_query_folders,
    "beir": read_beir,
}


FOLDER_FORMATS = ("query_folders", "beir")  # formats whose source split is a folder, not a file


def resolve_data_dir(flag: str | None) -> Path | None:
    value = flag if flag is not None else os.environ.get(DATA_DIR_ENV)
    if not value:
        return None
    path = Path(value)
    if not path.is_dir():
        raise DataError(f"data mirror {value!r} is not a directory (from {'--data-dir' if flag else DATA_DIR_ENV})")
    return path


def _mirror_path(data_dir: Path, source_name: str, relative: str, loaded: LoadedSpec, key: tuple[str, ...]) -> Path:
    """The mirror file for a source split; it must stay inside <data-dir>/<source>/ (symlinks included)."""
    try:
        root = (data_dir / source_name).resolve()
        path = (root / relative).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError before Python 3.13, OSError after
        raise loaded.error(key, f"{data_dir / source_name / relative} cannot be resolved ({first_line(exc)})") from None
    if not path.is_relative_to(root):
        raise loaded.error(key, f"{relative!r} resolves outside the data mirror folder {root}")
    if not path.exists():
        raise loaded.error(key, f"{data_dir / source_name / relative} does not exist in the data mirror")
    regular_or_folder(path)
    return path


def regular_or_folder(path: Path) -> None:
    """Refuse a FIFO, socket or device before anything opens it: reading one hangs or never ends."""
    mode = path.stat().st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise DataError("not a regular file or folder (a FIFO, socket or device is never read)", file=str(path))


def _open_regular(path: Path, what: str) -> None:
    """A file a folder format needs: present and regular, or one line naming it."""
    if not path.exists():
        raise DataError(f"{what} is missing", file=str(path))
    regular_or_folder(path)
    if path.is_dir():
        raise DataError(f"{what} is a folder, expected a file", file=str(path))


def _verify(path: Path, ref: FileRef, loaded: LoadedSpec, key: tuple[str, ...]) -> None:
    if ref.sha256 is not None:
        found = sha256_file(path)
        if found != ref.sha256:
            raise loaded.error((*key, "sha256"), f"{path} has sha256 {found}, the spec pins {ref.sha256}")
    for relative, expected in (ref.contents or {}).items():
        target = path / relative
        if not target.is_file():
            raise loaded.error((*key, "contents"), f"{target} is missing or not a regular file")
        found = sha256_file(target)
        if found != expected:
            raise loaded.error((*key, "contents", relative), f"{target} has sha256 {found}, the spec pins {expected}")


def _download(source: GitSource, ref: FileRef) -> Path:
    """A git file at its commit, from the cache or downloaded; kept only when its sha256 matches."""
    assert ref.repo_path is not None
    target = cache_root() / "git" / source.path.replace("/", "__") / source.revision / ref.repo_path
    if target.is_file() and (ref.sha256 is None or sha256_file(target) == ref.sha256):
        return target
    url = GIT_RAW_URL.format(repo=source.path, revision=source.revision, path=ref.repo_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as handle:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                shutil.copyfileobj(response, handle)
        except (urllib.error.URLError, OSError) as exc:
            Path(handle.name).unlink(missing_ok=True)
            raise OfflineError(f"cannot download {source.path}@{source.revision[:12]}:{ref.repo_path} ({exc}); "
                               f"pass --data-dir DIR (or set {DATA_DIR_ENV}) to use a local mirror") from None
    os.replace(handle.name, target)
    return target


@contextmanager
def _member(path: Path, member: str | None) -> Iterator[Path]:
    """The file itself, or one member of a zip archive extracted to a temporary folder."""
    if member is None:
        yield path
        return
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise DataError("not a zip archive", file=str(path)) from None
    with archive, tempfile.TemporaryDirectory() as folder:
        names = archive.namelist()
        match = next((n for n in names if n == member or n.endswith("/" + member)), None)
        if match is None:
            raise DataError(f"archive has no member {member!r}", file=str(path))
        info = archive.getinfo(match)
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > MAX_MEMBER_BYTES or (info.file_size > RATIO_CHECK_BYTES and ratio > MAX_RATIO):
            raise DataError(f"member {match!r} expands to {info.file_size} bytes ({ratio:.0f}x its compressed size); "
                            f"refusing a member over {MAX_MEMBER_BYTES} bytes or, above {RATIO_CHECK_BYTES}, "
                            f"over {MAX_RATIO}x (a zip bomb?)", file=str(path))
        target = Path(folder) / Path(match).name
        written = 0
        with archive.open(match) as src, target.open("wb") as dst:
            while block := src.read(1 << 20):
                written += len(block)
                if written > info.file_size:  # the header lied about the size
                    raise DataError(f"member {match!r} is larger than its header says", file=str(path))
                dst.write(block)
        yield target


def _read_rows(loaded: LoadedSpec, source_name: str, source_split: str, data_dir: Path | None) -> tuple[Rows, str]:
    source = loaded.spec.sources[source_name]
    ref = source.file_for(source_split)
    key = ("sources", source_name, *source.mirror_key(source_split))
    if data_dir is not None:
        path = _mirror_path(data_dir, source_name, ref.mirror, loaded, key)
    elif isinstance(source, HubDataset):
        return _read_hub(source, source_split), f"{source.path}@{source.revision}"
    elif not source.fetch:
        raise OfflineError(f"source {source_name!r} is never downloaded (fetch: false); put your copy in "
                           f"<data-dir>/{source_name}/{ref.mirror} and pass --data-dir DIR")
    else:
        path = _download(source, ref)
    layout = source.layout
    if path.is_dir() != (layout.format in FOLDER_FORMATS) and ref.member is None:
        raise DataError(f"is a folder; format {layout.format} reads a file" if path.is_dir()
                        else f"is a file; format {layout.format} reads a folder", file=str(path))
    _verify(path, ref, loaded, ("sources", source_name, "files", source_split))
    with _member(path, ref.member) as readable:
        origin = f"{path}:{ref.member}" if ref.member else str(path)
        try:
            return READERS[layout.format](readable, layout, source_split), origin
        except DataError:
            raise
        except Exception as exc:  # datasets, pyarrow, pandas and xlrd each raise their own parse errors
            raise DataError(f"cannot read as {layout.format}: {first_line(exc)}", file=origin) from None


def _read_hub(source: HubDataset, source_split: str) -> Rows:
    datasets = _datasets()
    try:
        dataset = datasets.load_dataset(source.path, revision=source.revision, split=source_split)
    except Exception as exc:
        text = first_line(exc)
        if any(word in text.lower() for word in ("connect", "offline", "resolve", "network", "timed out", "couldn't")):
            raise OfflineError(f"cannot reach the Hugging Face hub for {source.path}@{source.revision[:12]} "
                               f"({text}); pass --data-dir DIR (or set {DATA_DIR_ENV}) to use a local mirror") from None
        raise DataError(f"cannot load {source.path}@{source.revision[:12]} split {source_split}: {text}; "
                        f"pass --data-dir DIR to use a local mirror") from None
    return dataset.to_list()


# A plain decimal number as data files write it. Python's float() also takes '2_2' (22.0), '١٢' (Arabic-Indic
# digits) and surrounding whitespace; a gold score written so is a defect of the file, not a number.
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)",
                      re.ASCII | re.IGNORECASE)


def parse_number(value: Any) -> float | None:
    """A float from a JSON/Excel number or a plain decimal string; None for anything else (bools included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _DECIMAL.fullmatch(value.strip(" ")):
        return float(value)
    return None


def visible(text: str) -> bool:
    """Whether a text holds anything but white space and invisible format characters (zero-width space, joiner,
    BOM, bidi marks): an embedding of nothing is not a sentence."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Zs", "Zl", "Zp", "Mn")
               for ch in text)


def _convert(value: Any, kind: str, *, origin: str, row: int, column: str) -> Any:
    def fail(expected: str) -> DataError:
        shown = value if not isinstance(value, list) else f"a list of {len(value)}"
        return DataError(f"row {row}: column {column!r}: expected {expected}, got {shown!r}", file=origin)

    if kind == "text":
        if not isinstance(value, str):
            raise fail("text")
        if not visible(value):
            raise DataError(f"row {row}: column {column!r}: empty text"
                            + (" (only invisible characters)" if value.strip() else ""), file=origin)
        return value
    if kind == "number":
        number = parse_number(value)
        if number is None:
            raise fail("a number")
        if not math.isfinite(number):
            raise fail("a finite number")
        return number
    if kind == "texts":
        if not isinstance(value, list) or not value or not all(isinstance(t, str) and visible(t) for t in value):
            raise fail("a non-empty list of non-empty texts")
        return value
    if kind == "labels":
        labels = [str(label).strip() for label in value] if isinstance(value, list) else None
        if labels is None or any(label not in ("0", "1") for label in labels):
            bad = next((label for label in labels or [] if label not in ("0", "1")), value)
            raise DataError(f"row {row}: column {column!r}: labels must be 0 or 1, got {bad!r}", file=origin)
        return [int(label) for label in labels]
    raise AssertionError(f"unknown field kind {kind}")


def map_items(rows: Sequence[tuple[int, dict[str, Any]]], source: HubDataset | GitSource, fields: dict[str, str],
              origin: str, loaded: LoadedSpec, source_name: str) -> list[Item]:
    """(row index, row) pairs -> items with ids; every field a protocol needs converted and checked."""
    if rows:
        present = set(rows[0][1])
        for field, column in source.columns.items():
            if column not in present:
                raise loaded.error(("sources", source_name, "columns", field),
                                   f"column {column!r} is not in {origin}; it has: {', '.join(rows[0][1])}")
        if source.ids.column and source.ids.column not in present:
            raise loaded.error(("sources", source_name, "ids", "column"),
                               f"column {source.ids.column!r} is not in {origin}")
    items: list[Item] = []
    seen: set[str] = set()
    for index, row in rows:
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
    chosen = np.sort(np.random.default_rng(seed).choice(len(items), size=int(selection), replace=False))
    return [items[i] for i in chosen]


def needed_fields(loaded: LoadedSpec) -> dict[str, str]:
    """Item fields (and their kinds) that the spec's protocols need."""
    fields: dict[str, str] = {}
    for protocol in loaded.spec.protocols.values():
        fields.update(PROTOCOLS[protocol.kind].item_fields)
    return fields


def _where(rows: Rows, where: dict[str, Any] | None, loaded: LoadedSpec, split_name: str,
           origin: str) -> list[tuple[int, dict[str, Any]]]:
    indexed = list(enumerate(rows))
    for column, value in (where or {}).items():
        if rows and column not in rows[0]:
            raise loaded.error(("splits", split_name, "where", column), f"column {column!r} is not in {origin}")
        indexed = [(i, row) for i, row in indexed if str(row[column]) == str(value)]
    return indexed



def load_split(loaded: LoadedSpec, split_name: str, data_dir: Path | None, *, check: bool = True) -> SplitData:
    spec = loaded.spec
    split = spec.splits[split_name]
    source = spec.sources[split.source]
    rows, origin = _read_rows(loaded, split.source, split.source_split, data_dir)
    indexed = _where(rows, split.where, loaded, split_name, origin)
    items = map_items(indexed, source, needed_fields(loaded), origin, loaded, split.source)
    if not items:
        raise loaded.error(("splits", split_name), f"split is empty: {origin} has no rows"
                           + (" that match `where`" if split.where and rows else ""))
    for protocol in spec.protocols.values():
        kind = PROTOCOLS[protocol.kind]
        kind.validate_items(items, kind.Options.model_validate(protocol.options), origin)
    found = fingerprint(items)
    if check and split.fingerprint is not None and split.fingerprint != found:
        raise loaded.error(("splits", split_name, "fingerprint"),
                           f"data does not match the spec: spec says {split.fingerprint}, {origin} gives {found}")
    selection = spec.subset.splits[split_name]
    if selection != "all" and selection > len(items):
        raise loaded.error(("subset", "splits", split_name),
                           f"asks for {selection} items but {origin} has {len(items)}")
    selected = select(items, selection, spec.subset.seed)
    return SplitData(name=split_name, source=split.source, origin=origin, items=selected,
                     n_source=len(items), fingerprint=found)
