"""Fault injection, data and plugins (issue 20): corpus and qrels files, readers and plugin readers and adapters
that gave a traceback, a silent 0 or a wrong number. Each row writes a small spec and its data in a temporary
folder and runs the CLI with the hashing adapter: exit 2, one error line naming the file (and line, key where
there is one) and the way out, nothing in the output folder and no cache shard."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import assert_one_line_error, files_under, plan_of, run_cli
from tests.fixtures import make_beir

HERE = Path(__file__).resolve().parent
ZERO = "sha256:" + "0" * 64  # reader faults come before the fingerprint check


def beir_spec(tmp_path: Path, fmt: str) -> Path:
    """The corpus retrieval fixture spec (`beir_corpus`) or the small-set one (`beir`) over make_beir's folder."""
    spec = yaml.safe_load((HERE / "protocols" / "corpus_beir.yaml").read_text(encoding="utf-8"))
    spec["sources"]["corpusset"]["format"] = fmt
    if fmt == "beir":
        spec["sources"]["corpusset"]["columns"] = {"query": "query", "candidates": "candidates",
                                                   "relevance": "relevance"}
        spec["protocols"]["search"] = {"kind": "retrieval", "label": "Ranking", "capability": "embed.text.pooled",
                                       "description": "Rank the corpus by cosine."}
        spec["metrics"] = {"map": {"metric": "map", "protocol": "search", "label": "MAP", "direction": "higher",
                                   "range": [0.0, 1.0]}}
    spec["splits"]["test"]["fingerprint"] = ZERO
    path = tmp_path / "beir.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def beir(file: str, edit: Callable[[str], str], fmt: str = "beir_corpus") -> Callable[[Path], Path]:
    """A BEIR folder (make_beir's) with one of its files edited, and a spec of format `fmt` reading it."""

    def build(tmp_path: Path) -> Path:
        folder = make_beir(tmp_path / "data", "corpusset")
        path = folder / file
        path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
        return beir_spec(tmp_path, fmt)

    return build


def first_doc(**fields: Any) -> Callable[[str], str]:
    """corpus.jsonl with the first document's fields replaced (raw JSON values)."""

    def edit(text: str) -> str:
        lines = text.splitlines()
        doc = json.loads(lines[0])
        doc.update(fields)
        lines[0] = json.dumps(doc)
        return "\n".join(lines) + "\n"

    return edit


def replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    return edit


def score_of_first_judgment(score: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        lines = text.split("\n")
        cells = lines[1].split("\t")
        cells[2] = score
        lines[1] = "\t".join(cells)
        return "\n".join(lines)

    return edit


@dataclass(frozen=True)
class Case:
    name: str
    expected: str  # a piece of the one error line
    build: Callable[[Path], Path]  # writes the data under tmp_path/data, returns the spec


QUERY_REPEATED = '{"_id": "q1", "text": "asked again"}\n'
CASES = [
    # corpus.jsonl
    Case("document of white space", "document 'd0' has an empty text", beir("corpus.jsonl", first_doc(text="  \t"))),
    Case("document of zero-width characters", "document 'd0' has an empty text",
         beir("corpus.jsonl", first_doc(text="\u200b\u2060"))),
    Case("document text null", "document 'd0': 'text' must be a string, got null",
         beir("corpus.jsonl", first_doc(text=None))),
    Case("document text a number", "'text' must be a string, got int", beir("corpus.jsonl", first_doc(text=5))),
    Case("document title a number", "'title' must be a string, got float",
         beir("corpus.jsonl", first_doc(title=1.5), fmt="beir")),
    Case("document with a lone surrogate", "lone surrogate \\ud800",
         beir("corpus.jsonl", first_doc(text="half \ud800 a pair"))),
    # queries.jsonl
    Case("query id given twice", "query id 'q1' appears twice (first on line 1)",
         beir("queries.jsonl", lambda text: text + QUERY_REPEATED)),
    Case("query id given twice, beir", "appears twice", beir("queries.jsonl", lambda t: t + QUERY_REPEATED, "beir")),
    Case("query text null", "query 'q1': 'text' must be a string, got null",
         beir("queries.jsonl", replace('"text": "How', '"text": null, "x": "How'))),
    # qrels/test.tsv
    Case("qrels header misnamed", "columns query-id, corpus-id, score in the header; found 'qid'",
         beir("qrels/test.tsv", replace("query-id\tcorpus-id", "qid\tdocid"))),
    Case("qrels without a score column", "(missing score)",
         beir("qrels/test.tsv", lambda text: "\n".join(line.rsplit("\t", 1)[0] for line in text.split("\n")))),
    Case("qrels row without its score", "2 fields, expected 3",
         beir("qrels/test.tsv", lambda text: text.replace("\t1\n", "\n", 1), fmt="beir")),
    Case("score in Arabic-Indic digits", "score '٣' is not a whole number",
         beir("qrels/test.tsv", score_of_first_judgment("٣"))),
    Case("score in Arabic-Indic digits, beir", "score '٣' is not a number",
         beir("qrels/test.tsv", score_of_first_judgment("٣"), fmt="beir")),
    Case("score of 10^400", "is not a whole number >= 0 of at most",
         beir("qrels/test.tsv", score_of_first_judgment("1" + "0" * 400))),
    Case("score of 10^400, beir", "is not a number of at most",
         beir("qrels/test.tsv", score_of_first_judgment("1" + "0" * 400), fmt="beir")),
    Case("score that is a word, beir", "score 'high' is not a number",
         beir("qrels/test.tsv", score_of_first_judgment("high"), fmt="beir")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_data_fault_is_one_line_exit_2_nothing_written(case: Case, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    spec = case.build(tmp_path)
    data, out, cache = tmp_path / "data", tmp_path / "out", tmp_path / "cache"
    capsys.readouterr()
    code, _, stderr = run_cli([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(out),
                               "--cache-dir", str(cache), "-q"], capsys)
    line = assert_one_line_error(code, stderr, contains=case.expected)
    assert str(data) in line or str(spec) in line, line
    assert files_under(out) == []
    assert not [name for name in files_under(cache) if name.endswith(".shard")]


def test_valid_beir_variants_still_read(tmp_path: Path) -> None:
    """A BOM before the qrels header, columns in another order, a title left out, a missing or empty title and
    a surrogate pair written as escapes all read as before."""
    from specrun.data import load_split

    folder = make_beir(tmp_path / "data", "corpusset")
    qrels = folder / "qrels" / "test.tsv"
    rows = [line.split("\t") for line in qrels.read_text(encoding="utf-8").splitlines()]
    qrels.write_text("\ufeff" + "".join(f"{c}\t{q}\t{s}\n" for q, c, s in rows), encoding="utf-8")
    corpus = folder / "corpus.jsonl"
    lines = corpus.read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps({"_id": "d0", "text": json.loads(lines[0])["text"] + " \U0001f600"})  # no title
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = beir_spec(tmp_path, "beir_corpus")
    items = load_split(plan_of(spec), "test", tmp_path / "data", check=False).items
    assert items and items[0].fields["corpus"].texts[0].endswith("\U0001f600")
    expected: dict[str, dict[str, int]] = {}
    for query, doc, score in rows[1:]:
        expected.setdefault(query, {})[doc] = int(score)
    assert {item.id: item.fields["qrels"] for item in items} == expected
