"""The BEIR/MTEB retrieval layout: `beir` (every query gets the whole corpus as its candidate list) and
`beir_corpus` (one row per query with its graded qrels, the corpus held once as a `SharedCorpus`)."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specrun.core.contracts import ReaderEntry, Rows
from specrun.core.errors import DataError
from specrun.core.fields import parse_number
from specrun.core.files import not_utf8, open_regular
from specrun.core.registry import register_reader
from specrun.readers.corpus_file import read_corpus_file
from specrun.readers.corpus_files import locate_all
from specrun.readers.jsonl import jsonl_lines


def text_field(record: dict[str, Any], key: str, what: str, file: Path, line: int, *,
                required: bool = True) -> str:
    """A string field of a corpus or query record, or one line naming the record and the key."""
    if key not in record:
        if required:
            raise DataError(f"{what} has no {key!r}", file=str(file), line=line, key=key)
        return ""
    value = record[key]
    if value is None and not required:  # a null title is no title (BEIR files write both)
        return ""
    if not isinstance(value, str):
        shown = "null" if value is None else type(value).__name__
        raise DataError(f"{what}: {key!r} must be a string, got {shown}", file=str(file), line=line, key=key)
    return value


def record_id(record: Any, what: str, file: Path, line: int) -> str:
    if not isinstance(record, dict) or "_id" not in record:
        raise DataError(f"a {what} record needs _id and text", file=str(file), line=line)
    value = record["_id"]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value):
        raise DataError(f"a {what} record's _id must be a non-empty string, got {value!r}", file=str(file),
                        line=line, key="_id")
    return str(value)


def _document(record: Any, file: Path, line: int) -> tuple[str, str]:
    """A corpus record's id and text (title and text joined by a space), each a string. A document whose text is
    empty or only white space is read as it is, as BEIR and MTEB read it (FiQA-2018's corpus has such documents,
    beir-cellar/beir#158): it is a document of the corpus, embedded like any other."""
    doc_id = record_id(record, "corpus", file, line)
    what = f"document {doc_id!r}"
    text = text_field(record, "text", what, file, line)
    title = text_field(record, "title", what, file, line, required=False)
    return doc_id, f"{title} {text}".strip() if title else text


def _read_corpus(file: Path) -> tuple[list[str], list[str]]:
    """Document ids and texts, as lists (`beir`: every query's candidates are the whole corpus)."""
    ids, texts = [], []
    for number, record in jsonl_lines(file):
        doc_id, text = _document(record, file, number)
        ids.append(doc_id)
        texts.append(text)
    return ids, texts


def _read_queries(file: Path) -> dict[str, str]:
    """Query id -> text; an id given twice is refused (an empty text is refused where the qrels use it)."""
    queries: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, record in jsonl_lines(file):
        query_id = record_id(record, "query", file, number)
        text = text_field(record, "text", f"query {query_id!r}", file, number)
        if query_id in lines:
            raise DataError(f"query id {query_id!r} appears twice (first on line {lines[query_id]})",
                            file=str(file), line=number, key="_id")
        queries[query_id], lines[query_id] = text, number
    return queries


QRELS_HEADER = ("query-id", "corpus-id", "score")
MAX_SCORE = 1_000_000  # a relevance grade beyond this is a defect of the file (BEIR's grades are 0 to 3)
WHOLE_NUMBER = re.compile(r"[0-9]+")  # ASCII digits only: str.isdigit() also takes '٣' and '²'


def _score(raw: str, *, whole: bool, file: Path, line: int) -> float:
    """A qrels score: a whole number 0..MAX_SCORE (`beir_corpus`), or a plain decimal of at most MAX_SCORE in size
    (`beir`, where > 0 is relevant); anything else is one line."""
    text = raw.strip()
    number = (float(text) if WHOLE_NUMBER.fullmatch(text) and len(text) <= 16 else None) if whole else \
        parse_number(text)
    if number is None or not math.isfinite(number) or abs(number) > MAX_SCORE:
        expected = "a whole number >= 0" if whole else "a number"
        shown = raw if len(raw) <= 24 else f"{raw[:20]}... ({len(raw)} characters)"
        raise DataError(f"score {shown!r} is not {expected} of at most {MAX_SCORE} (plain ASCII digits)",
                        file=str(file), line=line, key="score")
    return number


def _read_qrels(file: Path, queries: dict[str, str], position: Mapping[str, int], *,
                unique_ids: bool) -> dict[str, dict[str, int]]:
    """query -> doc -> score, in file order, every line checked against the corpus and queries."""
    qrels: dict[str, dict[str, int]] = {}
    with file.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = next(reader, None)
            missing = [name for name in QRELS_HEADER if name not in (header or [])]
            if header is None or missing:
                found = ", ".join(repr(cell) for cell in header) if header else "nothing"
                raise DataError(f"expected the tab-separated columns {', '.join(QRELS_HEADER)} in the header; "
                                f"found {found}" + (f" (missing {', '.join(missing)})" if header else ""),
                                file=str(file), line=1)
            query_at, doc_at, score_at = (header.index(name) for name in QRELS_HEADER)
            for record in reader:
                if not record:
                    continue
                if len(record) != len(header):
                    raise DataError(f"{len(record)} fields, expected {len(header)} ({', '.join(header)})",
                                    file=str(file), line=reader.line_num)
                query_id, doc_id = record[query_at], record[doc_at]
                if query_id not in queries:
                    raise DataError(f"query {query_id!r} is not in queries.jsonl", file=str(file),
                                    line=reader.line_num)
                if doc_id not in position:
                    raise DataError(f"document {doc_id!r} is not in corpus.jsonl", file=str(file),
                                    line=reader.line_num)
                score = _score(record[score_at], whole=unique_ids, file=file, line=reader.line_num)
                judged = qrels.setdefault(query_id, {})
                if unique_ids:
                    if doc_id in judged:
                        raise DataError(f"query {query_id!r} judges document {doc_id!r} twice", file=str(file),
                                        line=reader.line_num)
                    judged[doc_id] = int(score)
                else:
                    judged[doc_id] = max(judged.get(doc_id, 0), 1 if score > 0 else 0)
        except csv.Error as exc:
            raise DataError(f"malformed qrels tsv: {exc}", file=str(file), line=reader.line_num) from None
        except UnicodeDecodeError:
            raise not_utf8(file) from None
    return qrels


def _check_parts(path: Path, split: str) -> None:
    for needed in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        open_regular(path / needed, needed)


def read_beir(path: Path, layout: Any, split: str) -> Rows:
    """The BEIR/MTEB retrieval layout: corpus.jsonl (_id, title, text), queries.jsonl (_id, text) and
    qrels/<split>.tsv (query-id, corpus-id, score; score > 0 is relevant). Every query of the qrels ranks the
    whole corpus (one shared list), in corpus order for ties. Each row carries the corpus (Q x N texts in
    memory and in the fingerprint): for small corpora; `beir_corpus` holds it once."""
    _check_parts(path, split)
    corpus_ids, corpus_texts = _read_corpus(path / "corpus.jsonl")
    position = {doc_id: i for i, doc_id in enumerate(corpus_ids)}
    queries = _read_queries(path / "queries.jsonl")
    qrels = _read_qrels(path / "qrels" / f"{split}.tsv", queries, position, unique_ids=False)
    rows = []
    for query_id, judged in qrels.items():
        labels = [0] * len(corpus_texts)
        for doc_id, relevant in judged.items():
            if relevant:
                labels[position[doc_id]] = 1
        rows.append({"query_id": query_id, "query": queries[query_id], "candidates": corpus_texts,
                     "relevance": labels})
    return rows


def read_beir_corpus(path: Path, layout: Any, split: str) -> Rows:
    """The BEIR/MTEB layout for corpus-scale retrieval: one row per query of the qrels (in qrels order) with
    `query_id`, `query`, `qrels` (document id -> integer score, graded; 0 is judged not relevant) and `corpus`,
    the one `SharedCorpus` object shared by every row, which holds no document text (`corpus_file`). Document ids
    must be unique; scores whole numbers >= 0."""
    _check_parts(path, split)
    corpus, judged = read_corpus_file(path / "corpus.jsonl", _document)
    queries = _read_queries(path / "queries.jsonl")
    qrels = _read_qrels(path / "qrels" / f"{split}.tsv", queries, judged, unique_ids=True)
    locate_all(judged, qrels)  # a query's own document, for corpus_retrieval's ignore_identical_ids
    judged.seal()
    return [{"query_id": query_id, "query": queries[query_id], "qrels": judged_docs, "corpus": corpus}
            for query_id, judged_docs in qrels.items()]


register_reader(ReaderEntry("beir", read_beir, folder=True,
                            description="corpus.jsonl, queries.jsonl, qrels/<split>.tsv"))
register_reader(ReaderEntry("beir_corpus", read_beir_corpus, folder=True,
                            description="as beir, one row per query with its graded qrels; the corpus held once"))
