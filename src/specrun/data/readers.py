"""Readers of the data stage: one function per file format, each registered with its metadata.

A reader turns one file (or folder) into rows: dicts of column -> value, every value as the file holds it.
Conversion, ids and checks happen after, in `items`.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specrun.data.files import open_regular
from specrun.errors import DataError
from specrun.registry import ReaderEntry, Rows, register_reader
from specrun.spec import Layout


def _read_delimited(path: Path, layout: Layout, delimiter: str) -> Rows:
    """A local TSV/CSV file with the csv module: RFC-4180 quoting (a quoted tab or line break stays in its field),
    every value text, errors with their line. datasets' csv builder would parse the same way through pandas but
    first builds and fingerprints an Arrow cache of each file, about half of a fully cached run; datasets stays
    the loader for data on the hub.

    Ragged rows, as real distributions have them (STS Benchmark: two optional trailing licence/source fields on
    some lines), are declared: `optional_names` are trailing fields a row may lack (None when absent), and
    `extra_fields: ignore` drops fields beyond all declared ones. A row shorter than the required columns, or
    longer than declared without `ignore`, stays an error that names both options."""
    quoting = csv.QUOTE_NONE if layout.quoting == "none" else csv.QUOTE_MINIMAL
    optional = list(layout.optional_names or [])
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, quoting=quoting, strict=True)
        try:
            header = list(layout.names) if layout.names else next(reader, None)
            if not header:
                raise DataError("file is empty; expected a header row", file=str(path))
            columns = header + optional
            rows = []
            for record in reader:
                if not record:
                    continue
                if len(record) > len(columns) and layout.extra_fields == "ignore":
                    record = record[:len(columns)]
                if not len(header) <= len(record) <= len(columns):
                    expected = f"{len(header)}" + (f" to {len(columns)}" if optional else "")
                    hint = ("; rows may end in fields the spec does not name: declare them in `optional_names` "
                            "or set `extra_fields: ignore`") if len(record) > len(columns) else ""
                    raise DataError(f"{len(record)} fields, expected {expected} ({', '.join(columns)}){hint}",
                                    file=str(path), line=reader.line_num)
                rows.append(dict(zip(columns, record + [None] * (len(columns) - len(record)), strict=True)))
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


class Corpus(str):
    """The documents of a BEIR corpus, read once and referenced by every query row of `beir_corpus`.

    As a string it is its content digest ('corpus:<N> documents:sha256:<hex>'), so an item that holds it
    fingerprints (and prints) as 70 characters, not as the whole corpus: Q queries cost Q references, never Q x N
    texts. `ids` and `texts` are in file order, which is also the tie order of the corpus protocol."""

    ids: list[str]
    texts: list[str]
    position: dict[str, int]

    def __new__(cls, ids: list[str], texts: list[str]) -> Corpus:
        digest = hashlib.sha256()
        for doc_id, text in zip(ids, texts, strict=True):
            digest.update(json.dumps([doc_id, text], ensure_ascii=False).encode("utf-8"))
            digest.update(b"\n")
        self = super().__new__(cls, f"corpus:{len(ids)} documents:sha256:{digest.hexdigest()}")
        self.ids, self.texts = ids, texts
        self.position = {doc_id: index for index, doc_id in enumerate(ids)}
        return self

    def __reduce__(self) -> tuple[type[Corpus], tuple[list[str], list[str]]]:
        return Corpus, (self.ids, self.texts)  # str's own pickling would rebuild it from the digest alone


def _beir_parts(path: Path, split: str, *, unique_ids: bool) -> tuple[list[str], list[str], dict[str, Any],
                                                                      dict[str, dict[str, int]]]:
    """corpus ids and texts (title and text joined by a space), queries (_id -> text) and qrels (query ->
    doc -> integer score, in file order), every qrels line checked against the corpus and queries."""
    for needed in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        open_regular(path / needed, needed)
    corpus_ids, corpus_texts = [], []
    seen: set[str] = set()
    for number, doc in _jsonl(path / "corpus.jsonl"):
        if not isinstance(doc, dict) or "_id" not in doc or "text" not in doc:
            raise DataError("a corpus record needs _id and text", file=str(path / "corpus.jsonl"), line=number)
        doc_id = str(doc["_id"])
        if unique_ids:
            if doc_id in seen:
                raise DataError(f"document id {doc_id!r} appears twice", file=str(path / "corpus.jsonl"),
                                line=number)
            seen.add(doc_id)
        corpus_ids.append(doc_id)
        title = doc.get("title") or ""
        corpus_texts.append(f"{title} {doc['text']}".strip() if title else doc["text"])
    position = {doc_id: i for i, doc_id in enumerate(corpus_ids)}
    queries = {str(q["_id"]): q.get("text") for _, q in _jsonl(path / "queries.jsonl")}
    qrels_file = path / "qrels" / f"{split}.tsv"
    qrels: dict[str, dict[str, int]] = {}
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
            judged = qrels.setdefault(query_id, {})
            raw = (record.get("score") or "0").strip()
            if unique_ids:
                if not raw.isdigit():
                    raise DataError(f"score {raw!r} is not a whole number >= 0", file=str(qrels_file),
                                    line=reader.line_num)
                if doc_id in judged:
                    raise DataError(f"query {query_id!r} judges document {doc_id!r} twice", file=str(qrels_file),
                                    line=reader.line_num)
                judged[doc_id] = int(raw)
            else:
                judged[doc_id] = max(judged.get(doc_id, 0), 1 if float(raw) > 0 else 0)
    return corpus_ids, corpus_texts, queries, qrels


def read_beir(path: Path, layout: Layout, split: str) -> Rows:
    """The BEIR/MTEB retrieval layout: corpus.jsonl (_id, title, text), queries.jsonl (_id, text) and
    qrels/<split>.tsv (query-id, corpus-id, score; score > 0 is relevant). Every query of the qrels ranks the
    whole corpus (one shared list), in corpus order for ties. Each row carries the corpus (Q x N texts in
    memory and in the fingerprint): for small corpora; `beir_corpus` holds it once."""
    corpus_ids, corpus_texts, queries, qrels = _beir_parts(path, split, unique_ids=False)
    position = {doc_id: i for i, doc_id in enumerate(corpus_ids)}
    rows = []
    for query_id, judged in qrels.items():
        labels = [0] * len(corpus_texts)
        for doc_id, relevant in judged.items():
            if relevant:
                labels[position[doc_id]] = 1
        rows.append({"query_id": query_id, "query": queries[query_id], "candidates": corpus_texts,
                     "relevance": labels})
    return rows


def read_beir_corpus(path: Path, layout: Layout, split: str) -> Rows:
    """The BEIR/MTEB layout for corpus-scale retrieval: one row per query of the qrels (in qrels order) with
    `query_id`, `query`, `qrels` (document id -> integer score, graded; 0 is judged not relevant) and `corpus`,
    the one `Corpus` object shared by every row. Document ids must be unique; scores whole numbers >= 0."""
    corpus_ids, corpus_texts, queries, qrels = _beir_parts(path, split, unique_ids=True)
    corpus = Corpus(corpus_ids, corpus_texts)
    return [{"query_id": query_id, "query": queries[query_id], "qrels": judged, "corpus": corpus}
            for query_id, judged in qrels.items()]


for _entry in (
    ReaderEntry("tsv", read_tsv, description="tab-separated, header row or `names`; `quoting`, `optional_names`, "
                                             "`extra_fields`"),
    ReaderEntry("csv", read_csv, description="comma-separated, as tsv"),
    ReaderEntry("jsonl", read_jsonl, description="JSON Lines, one object a line"),
    ReaderEntry("xls", read_xls, description="legacy Excel, first sheet (needs specrun[xls])"),
    ReaderEntry("query_folders", read_query_folders, folder=True,
                description="one folder per query: question.txt and data.csv (question,answer,label)"),
    ReaderEntry("beir", read_beir, folder=True, description="corpus.jsonl, queries.jsonl, qrels/<split>.tsv"),
    ReaderEntry("beir_corpus", read_beir_corpus, folder=True,
                description="as beir, one row per query with its graded qrels; the corpus held once"),
):
    register_reader(_entry)
