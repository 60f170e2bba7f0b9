"""Fault injection, data and plugins (issue 20): corpus and qrels files, readers and plugin readers and adapters
that gave a traceback, a silent 0 or a wrong number. Each row writes a small spec and its data in a temporary
folder and runs the CLI with the hashing adapter: exit 2, one error line naming the file (and line, key where
there is one) and the way out, nothing in the output folder and no cache shard."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from specrun.core.contracts import AdapterEntry
from specrun.core.errors import SpecrunError
from specrun.core.plain_yaml import load_plain
from specrun.core.registry import ADAPTERS
from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import HashingAdapter
from specrun.encoders.models import ModelRef
from tests.conftest import assert_one_line_error, files_under, plan_of, run_cli
from tests.fixtures import make_beir

HERE = Path(__file__).resolve().parent
ZERO = "sha256:" + "0" * 64  # reader faults come before the fingerprint check


def beir_spec(tmp_path: Path, fmt: str) -> Path:
    """The corpus retrieval fixture spec (`beir_corpus`) or the small-set one (`beir`) over make_beir's folder."""
    spec = load_plain((HERE / "protocols" / "corpus_beir.yaml").read_text(encoding="utf-8"))
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


def fingerprinted(spec: Path, data: Path) -> Path:
    """The spec with its split's fingerprint set to what the data gives (for faults past the data stage)."""
    from specrun.data import load_split

    found = load_split(plan_of(spec), "test", data, check=False).fingerprint
    spec.write_text(spec.read_text(encoding="utf-8").replace(ZERO, found), encoding="utf-8")
    return spec


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
    assert items and items[0].fields["corpus"].texts()[0].endswith("\U0001f600")
    expected: dict[str, dict[str, int]] = {}
    for query, doc, score in rows[1:]:
        expected.setdefault(query, {})[doc] = int(score)
    assert {item.id: item.fields["qrels"] for item in items} == expected


@pytest.mark.parametrize("text", ["", "  \t", "\u200b"])
def test_an_empty_document_is_a_document(text: str, tmp_path: Path) -> None:
    """BEIR and MTEB read a document with an empty text (FiQA-2018 has some) as a document: so does specrun, and a
    null title is no title."""
    from specrun.data import load_split

    folder = make_beir(tmp_path / "data", "corpusset")
    first_doc_edit = first_doc(text=text, title=None)
    corpus = folder / "corpus.jsonl"
    corpus.write_text(first_doc_edit(corpus.read_text(encoding="utf-8")), encoding="utf-8")
    items = load_split(plan_of(beir_spec(tmp_path, "beir_corpus")), "test", tmp_path / "data", check=False).items
    assert items[0].fields["corpus"].texts()[0] == text


# --- readers, `where`, `values` and plugins on a small STS (or clustering) spec ----------------------------------

STS_ROWS = [("A man plays a guitar.", "A person plays music.", "4.0", "a"),
            ("A cat sleeps.", "A dog barks loudly.", "1.0", "b"),
            ("Children play outside.", "Kids are playing in the park.", "3.5", "a"),
            ("The sun is bright.", "It is raining heavily.", "0.5", "b")]
STS = {"kind": "sts", "label": "Zero-shot", "capability": "embed.text.pooled", "description": "Cosine."}
CLUSTERING = {"kind": "clustering", "label": "k-means", "capability": "embed.text.pooled", "description": "k-means.",
              "options": {"n_runs": 2}}


def toy_spec(tmp_path: Path, data: str | bytes, fmt: str = "tsv", name: str = "data.tsv", *,
             source: dict[str, Any] | None = None, split: dict[str, Any] | None = None,
             protocol: dict[str, Any] = STS) -> Path:
    """A spec with one source `toy` (format `fmt`, its file `name` written with `data`) and one split."""
    folder = tmp_path / "data" / "toy"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    columns = {"text1": "s1", "text2": "s2", "gold": "score"} if protocol["kind"] == "sts" else \
        {"text": "s1", "label": "group"}
    metric = {"metric": "spearman" if protocol["kind"] == "sts" else "v_measure", "protocol": "p", "label": "M",
              "direction": "higher", "range": [-1.0, 1.0]}
    spec = {
        "id": "toy", "title": "A toy", "licence": {"data": "cc0-1.0", "publication": "confirmed"},
        "sources": {"toy": {"type": "git_file", "path": "owner/toy", "revision": "0" * 40, "licence": "cc0-1.0",
                            "fetch": False, "format": fmt, "files": {"test": {"path": name}},
                            "columns": columns, "ids": {"prefix": "toy-"}, **(source or {})}},
        "splits": {"test": {"source": "toy", "source_split": "test", **(split or {}), "fingerprint": ZERO}},
        "subset": {"seed": 1, "splits": {"test": "all"}},
        "protocols": {"p": protocol}, "metrics": {"m": metric},
        "uncertainty": {"method": "bootstrap", "interval": "percentile", "resamples": 100, "confidence": 0.95},
        "card": {"what_is_measured": "w", "data": "d", "items": "i", "uncertainty": "u", "caveats": "c",
                 "examples": {"count": 0, "heading": "Examples", "columns": {"id": "id"}}},
    }
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def tsv(rows: list[tuple[str, ...]] = STS_ROWS, header: str = "s1\ts2\tscore\tgroup", sep: str = "\t") -> str:
    return (header + "\n" if header else "") + "".join(sep.join(row) + "\n" for row in rows)


def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


RECORDS = [dict(zip(("s1", "s2", "score", "group"), row, strict=True)) for row in STS_ROWS]


def toy(data: str | bytes, fmt: str = "tsv", name: str = "data.tsv", **kwargs: Any) -> Callable[[Path], Path]:
    return lambda tmp_path: toy_spec(tmp_path, data, fmt, name, **kwargs)


def without(record: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != key}


DATA_CASES = [
    Case("jsonl row without a mapped column", "row 3: column 's2' is missing",
         toy(jsonl([*RECORDS[:2], without(RECORDS[2], "s2"), RECORDS[3]]), "jsonl", "data.jsonl")),
    Case("jsonl row without the where column", "row 2: column 'group' of the split's `where` is missing",
         toy(jsonl([RECORDS[0], without(RECORDS[1], "group"), *RECORDS[2:]]), "jsonl", "data.jsonl",
             split={"where": {"group": ["a", "b"]}})),
    Case("jsonl text with a lone surrogate", "data.jsonl:2: a string holds the lone surrogate \\udc00",
         toy(jsonl([RECORDS[0], {**RECORDS[1], "s1": "tail \udc00"}, *RECORDS[2:]]), "jsonl", "data.jsonl")),
    Case("label mixing a number and a text", "row 2: column 'group' holds the text '1' where row 1 holds the number 1",
         toy(jsonl([{**r, "group": v} for r, v in zip(RECORDS, [1, "1", 2, 2], strict=True)]), "jsonl",
             "data.jsonl", protocol=CLUSTERING)),
    Case("header naming a column twice", "the header names column 's2' twice",
         toy(tsv(header="s1\ts2\ts2\tgroup"))),
    Case("names naming a column twice", "column 's1' is named twice in `names`",
         toy(tsv(header=""), source={"options": {"names": ["s1", "s2", "score", "s1"]}})),
    Case("values for a column that is not mapped", "values.grup: column 'grup' is not mapped by `columns`",
         toy(tsv(), source={"values": {"grup": {"a": 1}}})),
    Case("where value that matches no row", "where.group: 'c' matches no row",
         toy(tsv(), split={"where": {"group": ["a", "c"]}})),
    Case("where that keeps nothing", "no row of", toy(tsv(), split={"where": {"group": "a", "score": "1.0"}})),
    # the way out, named
    Case("lone quote without quoting none", "set `quoting: none` in the spec's source",
         toy(tsv([STS_ROWS[0], ('"A cat sleeps.', *STS_ROWS[1][1:]), *STS_ROWS[2:]]))),
    Case("headerless file without names", "give the column names in the source's `options: {names: [...]}`",
         toy(tsv(header=""))),
    Case("csv format on a tab-separated file", "is the file tab-separated (`format: tsv`)?",
         toy(tsv(), "csv", "data.csv")),
    Case("csv format on a tab-separated file, names given", "the line holds tabs",
         toy(tsv(header=""), "csv", "data.csv", source={"options": {"names": ["s1", "s2", "score", "group"]}})),
]


@pytest.mark.parametrize("case", DATA_CASES, ids=lambda c: c.name)
def test_reader_fault_is_one_line_exit_2_nothing_written(case: Case, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    test_data_fault_is_one_line_exit_2_nothing_written(case, tmp_path, capsys)


def test_a_where_not_value_that_matches_nothing_is_refused(tmp_path: Path) -> None:
    """`not: z` where no row is z removes nothing, and `not: '4'` against cells written '4.0' silently removed
    nothing (issue 32): a `not` value must match some row, as a value to keep must."""
    from specrun.data import load_split

    spec = toy_spec(tmp_path, tsv(), split={"where": {"group": {"not": "z"}}})
    with pytest.raises(SpecrunError, match=r"'z' matches no row of .*a typo removes nothing"):
        load_split(plan_of(spec), "test", tmp_path / "data", check=False)
    spec = toy_spec(tmp_path, tsv(), split={"where": {"score": {"not": "4"}}})  # the cell is '4.0': text
    with pytest.raises(SpecrunError, match=r"'4' matches no row"):
        load_split(plan_of(spec), "test", tmp_path / "data", check=False)
    spec = toy_spec(tmp_path, tsv(), split={"where": {"score": {"not": 4}}})  # a YAML number: by value
    assert len(load_split(plan_of(spec), "test", tmp_path / "data", check=False).items) == len(STS_ROWS) - 1


def test_where_compares_numbers_by_value(tmp_path: Path) -> None:
    """`where: {score: 4}` keeps the row written '4.0'; text values still match text as written."""
    from specrun.data import load_split

    spec = toy_spec(tmp_path, tsv(), split={"where": {"score": [4, 0.5], "group": {"not": "a"}}})
    items = load_split(plan_of(spec), "test", tmp_path / "data", check=False).items
    assert [item.fields["text1"] for item in items] == ["The sun is bright."]
    spec = toy_spec(tmp_path, tsv(), split={"where": {"score": "4.0"}})
    assert len(load_split(plan_of(spec), "test", tmp_path / "data", check=False).items) == 1
    records = [{**record, "score": float(record["score"])} for record in RECORDS]  # JSON numbers
    spec = toy_spec(tmp_path, jsonl(records), "jsonl", "data.jsonl", split={"where": {"score": ["4", 1]}})
    assert len(load_split(plan_of(spec), "test", tmp_path / "data", check=False).items) == 2


def archive(entries: dict[str, bytes], *, corrupt: bool = False) -> bytes:
    """A zip of `entries` (deflated); `corrupt` flips bytes in the middle of the first member's compressed data."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for name, content in entries.items():
            target.writestr(name, content)
    data = bytearray(buffer.getvalue())
    if corrupt:
        with zipfile.ZipFile(io.BytesIO(bytes(data))) as source:
            info = source.infolist()[0]
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        for offset in range(start + 4, start + info.compress_size - 4):
            data[offset] ^= 0x5A
    return bytes(data)


MEMBER = tsv(STS_ROWS * 40).encode("utf-8")  # long enough to compress into a real deflate stream
ARCHIVE_CASES = [
    Case("corrupt member of an unpinned archive", "member 'data.tsv' cannot be extracted, the archive is damaged",
         toy(archive({"data.tsv": MEMBER}, corrupt=True), name="data.zip",
             source={"files": {"test": {"path": "data.zip", "member": "data.tsv"}}})),
    Case("two entries ending in the member", "'a/data.tsv', 'b/data.tsv' all end in it",
         toy(archive({"a/data.tsv": MEMBER, "b/data.tsv": MEMBER}), name="data.zip",
             source={"files": {"test": {"path": "data.zip", "member": "data.tsv"}}})),
]


@pytest.mark.parametrize("case", ARCHIVE_CASES, ids=lambda c: c.name)
def test_archive_fault_is_one_line_exit_2_nothing_written(case: Case, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    test_data_fault_is_one_line_exit_2_nothing_written(case, tmp_path, capsys)


def test_an_entry_named_exactly_or_once_by_its_ending_still_reads(tmp_path: Path) -> None:
    from specrun.data import load_split

    for entries in ({"data.tsv": MEMBER, "x/data.tsv": MEMBER}, {"x/data.tsv": MEMBER, "x/other.tsv": b""}):
        spec = toy_spec(tmp_path, archive(entries), name="data.zip",
                        source={"files": {"test": {"path": "data.zip", "member": "data.tsv"}}})
        assert len(load_split(plan_of(spec), "test", tmp_path / "data", check=False).items) == 160


# --- plugin readers and adapters ---------------------------------------------------------------------------------

def plugin_rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [dict(zip(lines[0].split("\t"), line.split("\t"), strict=True)) for line in lines[1:]]


def exits(path: Path) -> Any:
    raise SystemExit(0)


PLUGIN_READERS: dict[str, tuple[Callable[[Path], Any], str]] = {
    "a dict": (lambda path: {"s1": "x", "s2": "y", "score": "1"},
               "plugin_rows (from toy-plugin) returned an object of type dict; a reader returns a list"),
    "strings": (lambda path: path.read_text(encoding="utf-8").splitlines(),
                "(from toy-plugin) returned row 1 as a str"),
    "a number": (lambda path: 7, "(from toy-plugin) returned an object of type int"),
    "exit 0": (exits, "format plugin_rows (from toy-plugin) called exit(0) while reading"),
}


@pytest.mark.parametrize("returns", list(PLUGIN_READERS))
def test_a_plugin_reader_returning_no_rows_is_one_line(returns: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.core.contracts import ReaderEntry
    from specrun.core.registry import READERS, register_reader

    read, expected = PLUGIN_READERS[returns]
    register_reader(ReaderEntry("plugin_rows", lambda path, layout, split: read(path), provider="toy-plugin"))
    try:
        case = Case(returns, expected, toy(tsv(), "plugin_rows"))
        test_data_fault_is_one_line_exit_2_nothing_written(case, tmp_path, capsys)
    finally:
        READERS.unregister("plugin_rows")


def test_a_plugin_reader_may_return_any_iterable_of_dicts(tmp_path: Path) -> None:
    from specrun.core.contracts import ReaderEntry
    from specrun.core.registry import READERS, register_reader
    from specrun.data import load_split

    register_reader(ReaderEntry("plugin_rows", lambda path, layout, split: iter(plugin_rows(path)),
                                provider="toy-plugin"))
    try:
        spec = toy_spec(tmp_path, tsv(), "plugin_rows")
        items = load_split(plan_of(spec), "test", tmp_path / "data", check=False).items
        assert [item.fields["gold"] for item in items] == [4.0, 1.0, 3.5, 0.5]
    finally:
        READERS.unregister("plugin_rows")


class MisbehavingAdapter(HashingAdapter):
    """The hashing adapter, except for what FAULT says: one vector too few, another dimension from the second
    call on, or exit(0)."""

    FAULT = ""

    def __init__(self, model: ModelRef | None, settings: EncoderSettings, devices: list[str]) -> None:
        if self.FAULT == "exit while loading":
            raise SystemExit(0)
        super().__init__(model, settings.with_values(adapter="hashing"), devices)
        self.calls = 0

    def encode_group(self, texts: Sequence[str], batch_size: int, role: str = "symmetric",
                     prompt: str = "") -> np.ndarray:
        vectors = super().encode_group(texts, batch_size, role, prompt)  # type: ignore[arg-type]
        self.calls += 1
        if self.FAULT == "a vector too few":
            return vectors[:-1]
        if self.FAULT == "another dimension" and self.calls > 1:
            return np.concatenate([vectors, vectors[:, :1]], axis=1)
        if self.FAULT == "exit while encoding":
            raise SystemExit(0)
        return vectors


ADAPTER_FAULTS = {
    "a vector too few": "adapter misbehaving returned 2 vector(s) for a group of 3 texts",  # the queries come first
    "another dimension": "returned vectors of 65 dimensions after vectors of 64",
    "exit while encoding": "adapter misbehaving called exit(0) while encoding",
    "exit while loading": "adapter misbehaving called exit(0) while loading",
}


@pytest.mark.parametrize("fault", list(ADAPTER_FAULTS))
def test_a_misbehaving_plugin_adapter_is_one_line_before_anything_is_cached(
        fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Queries and documents are two calls (two roles): a changed dimension shows on the second."""
    monkeypatch.setattr(MisbehavingAdapter, "FAULT", fault)
    ADAPTERS.register("misbehaving", AdapterEntry("misbehaving", MisbehavingAdapter, needs_model=False))
    try:
        make_beir(tmp_path / "data", "corpusset")
        spec = fingerprinted(beir_spec(tmp_path, "beir_corpus"), tmp_path / "data")
        out, cache = tmp_path / "out", tmp_path / "cache"
        code, _, err = run_cli([str(spec), "--data-dir", str(tmp_path / "data"), "--adapter", "misbehaving",
                                "--cache-dir", str(cache), "--output", str(out), "-q"], capsys)
    finally:
        ADAPTERS.unregister("misbehaving")
    line = assert_one_line_error(code, err, contains=ADAPTER_FAULTS[fault])
    assert "Traceback" not in err and line
    shards = [name for name in files_under(cache) if name.endswith(".shard")]
    assert len(shards) <= (1 if fault == "another dimension" else 0)  # the first call's group is whole
    assert files_under(out) == []


def test_valid_rows_still_read(tmp_path: Path) -> None:
    """What the stricter checks must not refuse: a number column written as JSON numbers and as text (both
    converted to numbers), a kept column that is sometimes null, a header cell that looks like a number, a valid
    surrogate pair, duplicated cells in data rows."""
    from specrun.data import load_split

    records = [{**record, "score": value, "note": note}
               for record, value, note in zip(RECORDS, [4, "1.0", 3.5, ".5"], ["x", None, "y", None], strict=True)]
    records[0]["s1"] = "emoji \U0001f600 pair"
    spec = toy_spec(tmp_path, jsonl(records), "jsonl", "data.jsonl",
                    source={"columns": {"text1": "s1", "text2": "s2", "gold": "score", "note": "note"}})
    items = load_split(plan_of(spec), "test", tmp_path / "data", check=False).items
    assert [item.fields["gold"] for item in items] == [4.0, 1.0, 3.5, 0.5]
    assert [item.fields["note"] for item in items] == ["x", None, "y", None]
    assert items[0].fields["text1"].endswith("\U0001f600 pair")
    rows = [(s1, s1, score, "2019") for s1, _, score, _ in STS_ROWS]
    spec = toy_spec(tmp_path, tsv(rows, header="s1\ts2\tscore\t2019"))
    assert len(load_split(plan_of(spec), "test", tmp_path / "data", check=False).items) == 4


def test_blank_header_names_may_repeat_but_a_named_column_may_not() -> None:
    """Trailing delimiters give several blank column names (nothing can map them); a name given twice would let
    one column silently stand for the other."""
    from specrun.readers.delimited import header_problem

    assert header_problem(["sentence1", "sentence2", "score", "", ""], "\t") is None
    problem = header_problem(["sentence1", "score", "score"], "\t")
    assert problem is not None and "'score' twice" in problem
