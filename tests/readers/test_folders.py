"""The folder readers on their own: query folders (QABot's layout) and BEIR (candidate lists, and the corpus held
once), on the synthetic fixtures of the same layouts."""

from __future__ import annotations

from pathlib import Path

from specrun.core.contracts import ReadLayout
from specrun.core.corpus import SharedCorpus
from specrun.readers.beir import read_beir, read_beir_corpus
from specrun.readers.query_folders import read_query_folders
from tests.fixtures import POOL, QUERIES, make_beir, make_qabot


def test_query_folders_in_natural_order_with_bom_crlf_and_quoted_breaks(tmp_path: Path) -> None:
    rows = read_query_folders(make_qabot(tmp_path), ReadLayout("query_folders"), "test")
    assert [row["query_id"] for row in rows] == list(QUERIES)
    first = rows[0]
    assert first["query"] == QUERIES["1"][0] and len(first["candidates"]) == len(POOL) - 1
    assert POOL[3] in rows[1]["candidates"]  # the line break inside a quoted field survives
    assert sum(rows[1]["relevance"]) == len(QUERIES["2"][1])


def test_beir_gives_every_query_the_whole_corpus(tmp_path: Path) -> None:
    rows = read_beir(make_beir(tmp_path), ReadLayout("beir"), "test")
    assert [row["query_id"] for row in rows] == [f"q{name}" for name in QUERIES]
    assert all(row["candidates"] == POOL for row in rows)
    assert [i for i, label in enumerate(rows[2]["relevance"]) if label] == sorted(QUERIES["3"][1])


def test_beir_corpus_holds_the_corpus_once(tmp_path: Path) -> None:
    rows = read_beir_corpus(make_beir(tmp_path), ReadLayout("beir_corpus"), "test")
    corpus = rows[0]["corpus"]
    assert isinstance(corpus, SharedCorpus) and all(row["corpus"] is corpus for row in rows)
    assert corpus.texts() == POOL and rows[1]["qrels"] == {"d0": 1, "d1": 1}
