"""corpus_retrieval's `ignore_identical_ids` (MTEB's option): a query whose id is a corpus document's id does not
rank that document; the cut at top_k still holds top_k others; the qrels are kept. End to end with the hashing
adapter on the BEIR and MTEB layouts, equal to pytrec_eval on the same vectors with the document removed from the
run; without the option the document counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.protocols.corpus_retrieval import without_own
from tests.conftest import run_ok
from tests.protocols.test_corpus_retrieval import DOCS, corpus_spec
from tests.readers.test_mteb_retrieval import write

QUERIES = {  # query id -> (text, {doc index: score}); d1 and d6 are their own documents' ids and texts
    "d1": (DOCS[1], {0: 2, 12: 1}),
    "d6": (DOCS[6], {6: 1, 4: 1}),  # its own document is judged: never ranked with the option, still counted
    "c5": ("When is the deadline for the second report?", {3: 1}),
    "d15": ("How should I water my tomato plants?", {15: 2, 13: 1}),  # its own document, another text
}
METRICS = {"ndcg_at_10": "ndcg_cut_10", "map_at_10": "map_cut_10", "recall_at_5": "recall_5", "p_at_3": "P_3"}


def test_without_own_drops_the_own_document_and_keeps_the_order() -> None:
    ranked = np.array([[4, 2, 7, 1], [3, 5, 6, 0], [9, 8, 1, 2]])
    np.testing.assert_array_equal(without_own(ranked, np.array([2, -1, 2]), 3, rows=2),
                                  [[4, 7, 1], [3, 5, 6], [9, 8, 1]])
    np.testing.assert_array_equal(without_own(ranked, np.array([1, 0, 3]), 4), [[4, 2, 7, -1], [3, 5, 6, -1],
                                                                                 [9, 8, 1, 2]])


def make_beir(root: Path) -> Path:
    folder = root / "corpusset" / "data"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(DOCS)), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": text}) + "\n" for q, (text, _) in QUERIES.items()), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\td{d}\t{s}\n" for q, (_, judged) in QUERIES.items() for d, s in judged.items()), encoding="utf-8")
    return folder


def make_mteb(root: Path) -> Path:
    repo = root / "corpusset"
    write(repo / "corpus" / "test.parquet", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(DOCS)])
    write(repo / "queries" / "test.jsonl", [{"_id": q, "text": text} for q, (text, _) in QUERIES.items()])
    write(repo / "qrels" / "test.jsonl", [{"query-id": q, "corpus-id": f"d{d}", "score": s}
                                          for q, (_, judged) in QUERIES.items() for d, s in judged.items()])
    (repo / "README.md").write_text(
        "---\nconfigs:\n" + "".join(f"- config_name: {name}\n  data_files:\n  - split: test\n    path: {part}\n"
                                    for name, part in [("corpus", "corpus/test.parquet"),
                                                       ("queries", "queries/test.jsonl"),
                                                       ("default", "qrels/test.jsonl")]) + "---\n",
        encoding="utf-8")
    return repo


def reference(depth: int, ignore: bool) -> dict[str, float]:
    """float64 cosine of the hashing vectors, a Python sort (ties by corpus order), the query's own document
    removed from its run when `ignore`, cut at depth; pytrec_eval with the qrels as they are."""
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    texts = DOCS + [text for text, _ in QUERIES.values()]
    vectors = np.asarray(HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32),
                         dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = np.round(vectors[len(DOCS):] @ vectors[:len(DOCS)].T, 10)
    run = {}
    for row, q in enumerate(QUERIES):
        order = [d for d in sorted(range(len(DOCS)), key=lambda i: (-scores[row, i], i))
                 if not (ignore and f"d{d}" == q)][:depth]
        run[q] = {f"d{d}": float(depth - r) for r, d in enumerate(order)}
    qrels = {q: {f"d{d}": s for d, s in judged.items()} for q, (_, judged) in QUERIES.items()}
    table = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.10", "recall.5", "P.3"}).evaluate(run)
    return {name: float(np.mean([table[q][key] for q in QUERIES])) for name, key in METRICS.items()}


@pytest.mark.parametrize(("ignore", "top_k"), [(True, 10), (True, len(DOCS)), (False, 10)])
def test_the_own_document_is_left_out_of_the_ranking(ignore: bool, top_k: int, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_beir(data)
    spec = corpus_spec(tmp_path, data, top_k=top_k, ignore_identical_ids=ignore)
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    expected = reference(top_k, ignore)
    for metric, value in expected.items():
        assert results.scores["test"][metric].value == pytest.approx(value, abs=1e-9), metric
    assert expected != reference(top_k, not ignore)  # the fixture tells the two apart
    assert load_plain(spec.read_text(encoding="utf-8"))["protocols"]["search"]["options"][
        "ignore_identical_ids"] is ignore


def test_the_mteb_layout_locates_the_queries_own_documents(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main

    data = tmp_path / "data"
    make_mteb(data)
    spec = load_plain((Path(__file__).parent / "corpus_beir.yaml").read_text(encoding="utf-8"))
    spec["protocols"]["search"]["options"]["ignore_identical_ids"] = True
    spec["sources"]["corpusset"] = {
        "type": "hf_dataset", "path": "owner/corpusset", "revision": "0" * 40, "licence": "cc0-1.0",
        "mirror": {"format": "mteb_retrieval", "files": {"test": "."}},
        "columns": {"query": "query", "qrels": "qrels", "corpus": "corpus"}, "ids": {"column": "query_id"}}
    del spec["splits"]["test"]["fingerprint"]
    path = tmp_path / "mteb.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    assert main(["fingerprint", str(path), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(path), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    for metric, value in reference(10, True).items():
        assert results.scores["test"][metric].value == pytest.approx(value, abs=1e-9), metric
