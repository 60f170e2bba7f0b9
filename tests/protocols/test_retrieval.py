"""Retrieval: per-query measures against pytrec_eval and hand-worked rankings; QABot's folder layout and the BEIR
layout end to end on the real model, against an independent computation."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from specrun.core.contracts import RunContext
from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import HashingAdapter
from specrun.protocols.ranking import rank_measures
from specrun.protocols.retrieval import RetrievalProtocol
from tests.conftest import reference_model, run_cli, run_ok
from tests.fixtures import POOL, QUERIES, fixture_spec, make_beir, make_qabot

NO_OPTIONS = RetrievalProtocol.Options()


def test_hand_worked_ranking() -> None:
    # relevant at ranks 2 and 4 of 5; R = 2
    measures = rank_measures(np.array([0, 1, 0, 1, 0]), 2)
    assert measures["ap"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert measures["rr"] == pytest.approx(0.5)
    assert measures["precision_at_1"] == 0.0
    assert measures["precision_at_5"] == pytest.approx(2 / 5)
    assert measures["recall_at_3"] == pytest.approx(1 / 2)
    ideal = 1 + 1 / math.log2(3)
    assert measures["ndcg_at_10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)


def test_precision_divides_by_the_cutoff_even_with_one_relevant() -> None:
    measures = rank_measures(np.array([1, 0, 0, 0, 0, 0]), 1)
    assert measures["precision_at_5"] == pytest.approx(0.2)
    assert measures["ap"] == measures["rr"] == measures["precision_at_1"] == 1.0


def fake_embed(vectors: dict[str, np.ndarray]):
    return lambda texts, _field: np.stack([vectors[t] for t in texts])


def test_ties_keep_file_order() -> None:
    from specrun.core.types import Item

    vectors = {"q": np.array([1.0, 0.0]), "a": np.array([0.0, 1.0]), "b": np.array([1.0, 1.0]),
               "c": np.array([2.0, 2.0])}  # b and c tie (same direction); b comes first in the file
    def first_relevant_rank(candidates: list[str], relevant: str) -> float:
        labels = [int(c == relevant) for c in candidates]
        item = Item("q", {"query": "q", "candidates": candidates, "relevance": labels})
        return 1 / RetrievalProtocol().run([item], RunContext(fake_embed(vectors)), NO_OPTIONS).arrays["rr"][0]

    assert first_relevant_rank(["a", "b", "c"], "b") == pytest.approx(1)  # tied with c, earlier in the file
    assert first_relevant_rank(["a", "b", "c"], "c") == pytest.approx(2)
    assert first_relevant_rank(["a", "c", "b"], "b") == pytest.approx(2)
    assert first_relevant_rank(["a", "c", "b"], "a") == pytest.approx(3)


def test_measures_equal_pytrec_eval() -> None:
    from specrun.core.types import Item

    rng = np.random.default_rng(5)
    texts = [f"doc{i}" for i in range(40)]
    vectors = {t: rng.normal(size=16) for t in texts}
    items, qrels, run = [], {}, {}
    for q in range(25):
        query = f"query{q}"
        vectors[query] = rng.normal(size=16)
        candidates = list(rng.choice(texts, size=int(rng.integers(20, 40)), replace=False))
        relevance = [0] * len(candidates)
        for index in rng.choice(len(candidates), size=int(rng.integers(1, 6)), replace=False):
            relevance[index] = 1
        items.append(Item(query, {"query": query, "candidates": candidates, "relevance": relevance}))
        qrels[query] = {doc: rel for doc, rel in zip(candidates, relevance, strict=True)}
        q_vec = vectors[query]
        run[query] = {doc: float(q_vec @ vectors[doc] / np.linalg.norm(q_vec) / np.linalg.norm(vectors[doc]))
                      for doc in candidates}
    ours = RetrievalProtocol().run(items, RunContext(fake_embed(vectors)), NO_OPTIONS).arrays
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "P.1,5,10", "ndcg_cut.10",
                                                                   "recall.10"}).evaluate(run)
    pairs = {"ap": "map", "rr": "recip_rank", "precision_at_1": "P_1", "precision_at_5": "P_5",
             "precision_at_10": "P_10", "recall_at_10": "recall_10", "ndcg_at_10": "ndcg_cut_10"}
    for ours_name, trec_name in pairs.items():
        expected = [theirs[item.id][trec_name] for item in items]
        np.testing.assert_allclose(ours[ours_name], expected, atol=1e-4, err_msg=ours_name)  # trec_eval rounds to 4


def encoder_of(adapter: str) -> Callable[[list[str]], np.ndarray]:
    """Texts -> vectors, done apart from specrun's run: a direct sentence-transformers encode of the real model,
    or the hashing adapter called directly."""
    if adapter == "real":
        return reference_model().encode
    hashing = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    return lambda texts: np.asarray(hashing.encode_group(texts, 32))


def independent_qabot(queries: dict[str, tuple[str, list[str], list[int]]], adapter: str = "real") -> dict[str, float]:
    """A direct encode + numpy cosine + pytrec_eval, averaged over queries."""
    encode = encoder_of(adapter)
    qrels, run = {}, {}
    for name, (query, candidates, labels) in queries.items():
        q = encode([query])[0]
        docs = encode(candidates)
        scores = docs @ q / (np.linalg.norm(docs, axis=1) * np.linalg.norm(q))
        run[name] = {f"c{i}": float(s) for i, s in enumerate(scores)}
        qrels[name] = {f"c{i}": label for i, label in enumerate(labels)}
    result = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank", "P.1,5"}).evaluate(run)
    return {measure: float(np.mean([result[q][trec] for q in queries]))
            for measure, trec in (("map", "map"), ("mrr", "recip_rank"), ("p_at_1", "P_1"), ("p_at_5", "P_5"))}


def fixture_queries() -> dict[str, tuple[str, list[str], list[int]]]:
    out = {}
    for name, (query, relevant, own) in QUERIES.items():
        kept = [i for i in range(len(POOL)) if i != own]
        out[name] = (query, [POOL[i] for i in kept], [1 if i in relevant else 0 for i in kept])
    return out


ADAPTERS = ["hashing", pytest.param("real", marks=pytest.mark.slow)]  # the real model: the full suite


def adapter_flags(adapter: str) -> list[str]:
    return ["--adapter", "hashing"] if adapter == "hashing" else []


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_qabot_layout_end_to_end(adapter: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_qabot(data)
    spec = fixture_spec("qabot", tmp_path, data)
    results = run_ok([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out"), "-q",
                      *adapter_flags(adapter)], capsys)
    expected = independent_qabot(fixture_queries(), adapter)
    for metric, value in expected.items():
        score = results.scores["test"][metric]
        assert score.value == pytest.approx(value, abs=1e-4), metric  # pytrec_eval reports 4 decimals
        assert score.n == 3 and score.ci_low <= score.value <= score.ci_high
    assert results.provenance.uncertainty.unit == {"retrieval": "queries"}
    assert results.texts.unique == len(POOL) + 3  # query 1 is a pool question: encoded as a query and a document


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_beir_layout_is_only_yaml(adapter: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_beir(data, source="qabot")
    spec = fixture_spec("qabot", tmp_path, data, edit={
        "id": "beirset", "sources.qabot.format": "beir", "sources.qabot.fetch": True,
        "sources.qabot.files": {"test": {"path": "data"}},
        "sources.qabot.columns": {"query": "query", "candidates": "candidates", "relevance": "relevance"}})
    results = run_ok([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out"), "-q",
                      *adapter_flags(adapter)], capsys)
    queries = {name: (query, POOL, [1 if i in relevant else 0 for i in range(len(POOL))])
               for name, (query, relevant, _) in QUERIES.items()}
    for metric, value in independent_qabot(queries, adapter).items():
        assert results.scores["test"][metric].value == pytest.approx(value, abs=1e-4), metric


@pytest.mark.parametrize("damage, expected", [
    (lambda d: (d / "2" / "question.txt").unlink(), "query folder 2 has no question.txt"),
    (lambda d: (d / "1" / "data.csv").write_bytes((d / "1" / "data.csv").read_bytes().replace(b",0\r\n", b",2\r\n", 1)),
     "label '2' is not 0 or 1"),
    (lambda d: (d / "3" / "data.csv").write_bytes((d / "3" / "data.csv").read_bytes().replace(b",1\r\n", b",0\r\n")),
     "query qabot-3: no relevant candidate"),
])
def test_malformed_query_folders(damage, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    dataset = make_qabot(data)
    spec = fixture_spec("qabot", tmp_path, data)
    damage(dataset)
    if expected.startswith("query qabot-"):  # rows the reader takes and the kind refuses: pinned, the refusal is left
        spec = fixture_spec("qabot", tmp_path, data)
    code, _, err = run_cli([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("\n") == 1 and expected in err, err
    assert str(dataset) in err and not (tmp_path / "out").exists()


def test_qabot_is_never_downloaded(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import SPECS

    monkeypatch.delenv("SPECRUN_DATA_DIR", raising=False)  # no mirror at all: the download path is what is tested
    code, _, err = run_cli([str(SPECS / "qabot.yaml"), "--output", str(tmp_path)], capsys)
    assert code == 2 and "never downloaded (fetch: false)" in err and "--data-dir" in err
