"""The BEIR/MTEB retrieval layout: `beir` (every query gets the whole corpus as its candidate list) and
`beir_corpus` (one row per query with its graded qrels, the corpus held once as a `SharedCorpus`)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from specrun.core.contracts import ReaderEntry, Rows
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import DataError
from specrun.core.files import open_regular
from specrun.core.registry import register_reader
from specrun.readers.jsonl import _jsonl


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


def read_beir(path: Path, layout: Any, split: str) -> Rows:
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


def read_beir_corpus(path: Path, layout: Any, split: str) -> Rows:
    """The BEIR/MTEB layout for corpus-scale retrieval: one row per query of the qrels (in qrels order) with
    `query_id`, `query`, `qrels` (document id -> integer score, graded; 0 is judged not relevant) and `corpus`,
    the one `SharedCorpus` object shared by every row. Document ids must be unique; scores whole numbers >= 0."""
    corpus_ids, corpus_texts, queries, qrels = _beir_parts(path, split, unique_ids=True)
    corpus = SharedCorpus(corpus_ids, corpus_texts)
    return [{"query_id": query_id, "query": queries[query_id], "qrels": judged, "corpus": corpus}
            for query_id, judged in qrels.items()]


register_reader(ReaderEntry("beir", read_beir, folder=True,
                            description="corpus.jsonl, queries.jsonl, qrels/<split>.tsv"))
register_reader(ReaderEntry("beir_corpus", read_beir_corpus, folder=True,
                            description="as beir, one row per query with its graded qrels; the corpus held once"))
