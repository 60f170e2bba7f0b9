"""Descriptive statistics of the items read (results.json `statistics`, the report's last paragraphs), each checked
against a plain-Python computation on the data file; a results.json written before them still reads."""

from __future__ import annotations

import csv
import json
import statistics as pystats
from pathlib import Path

import pytest

from specrun.core.corpus import SharedCorpus
from specrun.core.types import Item
from specrun.results import Results
from specrun.results.statistics import item_statistics, spread
from tests.conftest import SPECS


@pytest.fixture(scope="module")
def biosses_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from specrun.cli import main

    out = tmp_path_factory.mktemp("statistics-run")
    assert main([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--adapter", "hashing", "--output",
                 str(out), "-q"]) == 0
    return next(out.rglob("results.json"))


def test_biosses_statistics_match_the_file(biosses_run: Path, data_dir: Path) -> None:
    with open(data_dir / "biosses" / "all.tsv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    stats = Results.model_validate_json(biosses_run.read_text()).statistics
    assert stats is not None and list(stats) == ["test"]  # train is read by no protocol here: not loaded
    test = stats["test"]
    assert test.n == len(rows) == 100 and test.evaluated
    assert test.unique_texts == len({r["sentence1"] for r in rows} | {r["sentence2"] for r in rows})
    for field, column in (("text1", "sentence1"), ("text2", "sentence2")):
        lengths = [len(r[column]) for r in rows]
        got = test.fields[field]
        assert got.kind == "text" and got.unique == len({r[column] for r in rows})
        assert got.length is not None
        assert (got.length.min, got.length.max) == (min(lengths), max(lengths))
        assert got.length.mean == pytest.approx(pystats.mean(lengths), abs=1e-12)
    gold = [float(r["score"]) for r in rows]
    values = test.fields["gold"].values
    assert values is not None and (values.min, values.max) == (min(gold), max(gold))
    assert values.mean == pytest.approx(pystats.mean(gold), abs=1e-12)


def test_the_report_ends_in_them_before_the_citation(biosses_run: Path) -> None:
    report = (biosses_run.parent / "report.md").read_text(encoding="utf-8")
    provenance, citation = report.split("\n## Provenance\n")[1].split("\n## Citation\n")
    last = provenance.strip().splitlines()[-1]
    assert last.startswith("**Statistics.** test: 100 item(s), ")
    assert "text1: 93 unique, " in last and " characters (mean " in last and "gold: values 0 to 4 (mean 2.2)" in last
    assert citation.lstrip().startswith("```text")


def test_results_written_before_statistics_still_read(biosses_run: Path) -> None:
    from specrun.reports import render_card
    from specrun.spec import load_spec

    data = json.loads(biosses_run.read_text())
    del data["statistics"]
    old = Results.model_validate(data)
    assert old.statistics is None
    report = render_card(load_spec(SPECS / "biosses.yaml").spec, [], old)
    assert "**Statistics.**" not in report and "\n## Provenance\n" in report


def test_each_field_kind_against_plain_python() -> None:
    corpus = SharedCorpus.from_lists(ids=["d0", "d1", "d2"], texts=["a", "bb", "ccc"])
    items = [
        Item(id="q0", fields={"query": "why", "label": "b", "candidates": ["x", "yy"], "relevance": [1, 0],
                              "qrels": {"d0": 1, "d1": 0}, "corpus": corpus, "scores": [1.0, 3.0]}),
        Item(id="q1", fields={"query": "why", "label": "a", "candidates": ["x", "zzz", "w"], "relevance": [1, 1, 0],
                              "qrels": {"d0": 2, "d1": 1, "d2": 1}, "corpus": corpus, "scores": [2.0]}),
        Item(id="q2", fields={"query": "how so", "label": "b", "candidates": ["v"], "relevance": [0],
                              "qrels": {"d2": 3}, "corpus": corpus, "scores": [5.0]}),
    ]
    kinds = {"query": "text", "label": "label", "candidates": "texts", "relevance": "labels", "qrels": "judgments",
             "corpus": "corpus", "scores": "numbers", "absent": "text"}
    s = item_statistics(items, kinds, evaluated=True)
    assert s.n == 3 and "absent" not in s.fields
    assert s.unique_texts == len({"why", "how so", "x", "yy", "zzz", "w", "v"})
    assert s.fields["query"].unique == 2 and s.fields["query"].length == spread([3, 3, 6])
    assert s.fields["label"].labels == {"a": 1, "b": 2}
    candidates = s.fields["candidates"]
    assert candidates.unique == len({"x", "yy", "zzz", "w", "v"}) and candidates.per_item == spread([2, 3, 1])
    assert candidates.length == spread([1, 2, 1, 3, 1, 1])
    assert s.fields["relevance"].relevant == spread([1, 2, 0]) and s.fields["relevance"].per_item == spread([2, 3, 1])
    qrels = s.fields["qrels"]
    assert qrels.relevant == spread([1, 3, 1]) and qrels.relevant.mean == pytest.approx(5 / 3)  # type: ignore[union-attr]
    assert s.fields["corpus"].documents == 3 and s.fields["corpus"].length is None  # counted, not read
    assert s.fields["scores"].values == spread([1.0, 3.0, 2.0, 5.0])
    numeric = item_statistics([Item(id=str(i), fields={"label": v}) for i, v in enumerate([10, 2, 2])],
                              {"label": "label"}, evaluated=False)
    assert list(numeric.fields["label"].labels or {}) == ["2", "10"] and not numeric.evaluated  # numbers in order
    assert item_statistics([], kinds, evaluated=True).fields == {}
