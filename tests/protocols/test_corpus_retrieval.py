"""Corpus-scale retrieval: the search against a full float64 sort (ties by corpus order, duplicates, the exact
fallback), numpy against faiss, the measures against pytrec_eval within 1e-9, the old BEIR path's numbers, memory
that never grows with queries x documents, and the BEIR layout end to end (hashing adapter and the real model)
against an independent computation."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
import yaml

from specrun.core.contracts import RunContext
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import SpecrunError
from specrun.core.plain_yaml import load_plain
from specrun.core.types import CORPUS_CUTOFFS, Item
from specrun.core.types import trec_output as output_name
from specrun.protocols.corpus_retrieval import CorpusOptions, CorpusRetrievalProtocol
from specrun.protocols.ranking import corpus_measures
from specrun.protocols.retrieval import RetrievalProtocol
from specrun.search.cosine import cosine_rows
from specrun.search.exact import rank_corpus
from tests.conftest import reference_model, require, run_ok
from tests.fixtures import POOL, QUERIES, make_beir

HERE = Path(__file__).resolve().parent
TREC = {"ndcg": "ndcg_cut", "map": "map_cut", "recall": "recall", "precision": "P"}


def brute_force(queries: np.ndarray, docs: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Every query x document cosine_rows score, sorted by (-score, position): the reference ranking."""
    ranked_i, ranked_s = [], []
    for query in queries:
        scores = cosine_rows(np.repeat(query[None, :], len(docs), axis=0), docs)
        order = sorted(range(len(docs)), key=lambda i: (-scores[i], i))[:depth]
        ranked_i.append(order)
        ranked_s.append(scores[order])
    return np.array(ranked_i), np.array(ranked_s)


def ranked(queries: np.ndarray, docs: np.ndarray, depth: int, **options: object) -> tuple:
    return rank_corpus(queries, lambda a, b: docs[a:b], len(docs), depth, **options)


def clustered(seed: int, n_docs: int, n_queries: int, dim: int = 16, duplicates: int = 0,
              levels: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Random vectors; `duplicates` exact copies of earlier documents; `levels` quantises so many ties exist."""
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(n_docs, dim)).astype(np.float32)
    if duplicates:
        docs[rng.choice(n_docs, duplicates, replace=False)] = docs[rng.integers(0, n_docs, duplicates)]
    queries = rng.normal(size=(n_queries, dim)).astype(np.float32)
    if levels:
        docs = np.round(docs * levels / 3).astype(np.float32)
        docs[np.all(docs == 0, axis=1), 0] = 1
        queries = np.round(queries * levels / 3).astype(np.float32)
        queries[np.all(queries == 0, axis=1), 0] = 1
    return queries, docs


@pytest.mark.parametrize("search", ["numpy", "faiss"])
@pytest.mark.parametrize("case", [
    {"seed": 1, "n_docs": 300, "n_queries": 40, "duplicates": 60},
    {"seed": 2, "n_docs": 500, "n_queries": 30, "levels": 1},  # coarse vectors: ties everywhere
    {"seed": 3, "n_docs": 50, "n_queries": 10},  # depth + margin covers the corpus: no proof needed
])
@pytest.mark.parametrize("depth", [1, 10, 120])
def test_search_equals_a_full_float64_sort(case: dict, depth: int, search: str) -> None:
    if search == "faiss":
        require("faiss")
    queries, docs = clustered(**case)
    expect_i, expect_s = brute_force(queries, docs, depth)
    got_i, got_s, _ = ranked(queries, docs, depth, search=search, chunk_size=37)
    np.testing.assert_array_equal(got_i, expect_i)
    np.testing.assert_array_equal(got_s, expect_s)


@pytest.mark.parametrize("search", ["numpy", "faiss"])
def test_ties_beyond_the_candidates_take_the_exact_scan(search: str) -> None:
    if search == "faiss":
        require("faiss")
    rng = np.random.default_rng(4)
    docs = rng.normal(size=(400, 16)).astype(np.float32)
    docs[rng.choice(400, 150, replace=False)] = docs[7]  # 151 equal documents, more than top_k + margin
    queries = (docs[7] + 0.01 * rng.normal(size=(5, 16))).astype(np.float32)
    got_i, got_s, fallbacks = ranked(queries, docs, 10, search=search, chunk_size=64)
    assert fallbacks == 5
    expect_i, expect_s = brute_force(queries, docs, 10)
    np.testing.assert_array_equal(got_i, expect_i)
    np.testing.assert_array_equal(got_s, expect_s)
    assert np.all(np.diff(got_i, axis=1) > 0)  # all tied: corpus order


def test_ties_by_corpus_order_across_chunks() -> None:
    docs = np.array([[0, 1], [1, 0], [2, 0], [0, 3], [5, 0], [1, 0]], dtype=np.float32)  # 1, 2, 4, 5 tie
    got_i, got_s, _ = ranked(np.array([[1, 0]], dtype=np.float32), docs, 5, chunk_size=2)
    assert got_i[0].tolist() == [1, 2, 4, 5, 0]
    assert got_s[0].tolist() == [1.0, 1.0, 1.0, 1.0, 0.0]


def test_numpy_and_faiss_give_identical_rankings() -> None:
    require("faiss")
    queries, docs = clustered(7, 2000, 64, dim=32, duplicates=300)
    a = ranked(queries, docs, 100, search="numpy", chunk_size=333)
    b = ranked(queries, docs, 100, search="faiss", chunk_size=500)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def graded_qrels(rng: np.random.Generator, n_queries: int, n_docs: int, ids: list[str]) -> list[dict[str, int]]:
    qrels = []
    for _ in range(n_queries):
        chosen = rng.choice(n_docs, int(rng.integers(1, 9)), replace=False)
        judged = {ids[d]: int(rng.integers(0, 4)) for d in chosen}
        judged[ids[int(chosen[0])]] = max(1, judged[ids[int(chosen[0])]])  # at least one relevant
        qrels.append(judged)
    return qrels


def trec_reference(ranking: np.ndarray, qrels: list[dict[str, int]], ids: list[str]) -> dict[str, np.ndarray]:
    """pytrec_eval on the full top-k run (scores that encode the rank, so trec_eval's own tie order never acts);
    MRR@K is recip_rank on the run cut at K."""
    names = [f"q{i}" for i in range(len(qrels))]
    qrels_in = {name: dict(judged) for name, judged in zip(names, qrels, strict=True)}
    cut = ",".join(map(str, CORPUS_CUTOFFS))
    measures = {f"ndcg_cut.{cut}", f"map_cut.{cut}", f"recall.{cut}", f"P.{cut}"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_in, measures)
    run = {name: {ids[d]: float(len(row) - r) for r, d in enumerate(row)} for name, row in zip(names, ranking,
                                                                                              strict=True)}
    result = evaluator.evaluate(run)
    out = {output_name(ours, k): np.array([result[n][f"{trec}_{k}"] for n in names])
           for ours, trec in TREC.items() for k in CORPUS_CUTOFFS}
    rr = pytrec_eval.RelevanceEvaluator(qrels_in, {"recip_rank"})
    for k in CORPUS_CUTOFFS:
        cut_run = {name: dict(list(docs.items())[:k]) for name, docs in run.items()}
        found = rr.evaluate(cut_run)
        out[output_name("mrr", k)] = np.array([found[n]["recip_rank"] for n in names])
    return out


@pytest.mark.parametrize("depth", [5, 40, 1000])
def test_measures_equal_pytrec_eval(depth: int) -> None:
    """Ties (duplicates), graded relevance, relevant documents outside the top k, k above and below the corpus."""
    rng = np.random.default_rng(11)
    queries, docs = clustered(11, 400, 60, duplicates=80)
    ids = [f"doc{i}" for i in range(len(docs))]
    qrels = graded_qrels(rng, len(queries), len(docs), ids)
    ranking, _, _ = ranked(queries, docs, depth, chunk_size=90)
    ours = corpus_measures(ranking, qrels, {d: i for i, d in enumerate(ids)})
    theirs = trec_reference(ranking, qrels, ids)
    assert set(ours) == set(theirs) == set(CorpusRetrievalProtocol.info.outputs) - {"query_group"}  # the run's own
    for name, values in theirs.items():
        np.testing.assert_allclose(ours[name], values, rtol=0, atol=1e-9, err_msg=name)
    if depth < len(docs):
        assert np.any(ours["mrr_cut_1000"] == 0)  # some queries find nothing relevant in their top k
    assert any(max(q.values()) > 1 for q in qrels)


def vectors_for(texts: list[str], dim: int = 24) -> dict[str, np.ndarray]:
    return {t: np.random.default_rng(abs(hash(t)) % 2**32).normal(size=dim).astype(np.float32) for t in texts}


def test_the_beir_fixture_gives_the_old_paths_numbers(tmp_path: Path) -> None:
    from specrun.readers.beir import read_beir, read_beir_corpus

    folder = make_beir(tmp_path)
    old_rows = read_beir(folder, None, "test")  # type: ignore[arg-type]
    new_rows = read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]
    table = vectors_for(POOL + [q for q, _, _ in QUERIES.values()])

    def embed(texts: list[str], _field: str = "") -> np.ndarray:
        return np.stack([table[t] for t in texts])

    old = RetrievalProtocol().run([Item(r["query_id"], r) for r in old_rows],
                                  RunContext(embed), RetrievalProtocol.Options())
    new = CorpusRetrievalProtocol().run([Item(r["query_id"], r) for r in new_rows], RunContext(embed), CorpusOptions())
    assert old.ids == new.ids
    pairs = {"ap": "map_cut_1000", "rr": "mrr_cut_1000", "ndcg_at_10": "ndcg_cut_10",
             **{f"precision_at_{k}": f"precision_cut_{k}" for k in (1, 3, 5, 10)},
             **{f"recall_at_{k}": f"recall_cut_{k}" for k in (1, 3, 5, 10, 100)}}
    for before, after in pairs.items():
        np.testing.assert_allclose(new.arrays[after], old.arrays[before], rtol=0, atol=1e-12, err_msg=after)


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_numpy_search_holds_a_chunk_and_its_normalised_copy_at_most() -> None:
    """The chunk `documents` returns is normalised once (a float32 division per block of scores would cost a
    quarter of the product) and then let go: a search holds two chunks of vectors at most, one block of scores
    and the candidates, whatever the corpus."""
    from specrun.search import exact as corpus

    n_docs, n_queries, dim = 40_000, 16, 64
    docs = np.random.default_rng(3).standard_normal((n_docs, dim), dtype=np.float32)
    queries = docs[:n_queries] + 0.1
    chunk_bytes = n_docs * dim * 4  # 10 MB: the whole corpus is one chunk
    tracemalloc.start()
    try:
        got_i, _, _ = rank_corpus(queries, lambda a, b: docs[a:b].copy(), n_docs, 10,
                                  chunk_size=n_docs)  # a fresh array per chunk, as `embed` gives
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    scores = min(corpus.BLOCK_BYTES, n_queries * n_docs * 4)
    assert peak < 2 * chunk_bytes + 3 * scores + 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert peak > chunk_bytes, "the chunk itself is expected to be counted"
    np.testing.assert_array_equal(got_i, brute_force(queries, docs, 10)[0])


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_memory_never_grows_with_queries_times_documents() -> None:
    n_docs, n_queries, dim = 200_000, 2_000, 32

    def unit(seeds: np.ndarray) -> np.ndarray:
        out = np.empty((len(seeds), dim), dtype=np.float32)
        for row, seed in enumerate(seeds):
            out[row] = np.random.default_rng(int(seed)).standard_normal(dim)
        return out

    def documents(start: int, stop: int) -> np.ndarray:  # seeded per document, vectorised per chunk
        rng = np.random.default_rng(start)
        return rng.standard_normal((stop - start, dim), dtype=np.float32)

    chunk = 20_000

    queries = unit(np.arange(n_queries) + 10**9)
    tracemalloc.start()
    try:
        ranking, _, _ = rank_corpus(queries, documents, n_docs, 10, chunk_size=chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    full = n_queries * n_docs * 4  # one float32 score per query and document: 1.6 GB
    assert peak < full / 10, f"peak {peak / 2**20:.0f} MiB"
    assert ranking.shape == (n_queries, 10)
    check = np.random.default_rng(0).choice(n_queries, 3, replace=False)  # spot-check against a full sort
    all_docs = np.concatenate([documents(s, min(s + chunk, n_docs)) for s in range(0, n_docs, chunk)])
    np.testing.assert_array_equal(ranking[check], brute_force(queries[check], all_docs, 10)[0])


# --- the BEIR layout end to end ---------------------------------------------------------------------------------

DOCS = [*POOL, POOL[0], "A completely unrelated sentence about gardening.", POOL[5],
        "Tomatoes need sun and water every day.", "How do I print text without a newline?"]
GRADED = {  # query -> {doc index: score}; duplicates judged differently; the last query's relevant doc lies low
    "c1": ("How can I convert a String to an int?", {6: 2, 4: 1, 2: 0}),
    "c2": ("Compiling my .java program in the terminal fails", {0: 3, 12: 1, 1: 2}),
    "c3": ("I get an exception when the array index is too big", {11: 2, 5: 1, 14: 1}),
    "c4": ("How should I water my tomato plants?", {15: 2, 13: 1}),
    "c5": ("When is the deadline for the second report?", {3: 1}),
}


def make_graded_beir(root: Path) -> Path:
    folder = root / "corpusset" / "data"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(DOCS)), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": text}) + "\n" for q, (text, _) in GRADED.items()), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\td{d}\t{s}\n" for q, (_, judged) in GRADED.items() for d, s in judged.items()), encoding="utf-8")
    return folder


def corpus_spec(tmp_path: Path, data: Path, **options: object) -> Path:
    from specrun.cli import main

    spec = load_plain((HERE / "corpus_beir.yaml").read_text(encoding="utf-8"))
    spec["protocols"]["search"]["options"].update(options)
    del spec["splits"]["test"]["fingerprint"]
    path = tmp_path / "corpusset.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    assert main(["fingerprint", str(path), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    return path


def independent(vectors: np.ndarray, depth: int) -> dict[str, float]:
    """numpy float64 cosine of every query and document, a Python sort (ties by corpus order), pytrec_eval."""
    docs, queries = vectors[: len(DOCS)].astype(np.float64), vectors[len(DOCS):].astype(np.float64)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scores = np.round(queries @ docs.T, 10)
    ids = [f"d{i}" for i in range(len(DOCS))]
    qrels = {q: {f"d{d}": s for d, s in judged.items()} for q, (_, judged) in GRADED.items()}
    run = {}
    for row, q in enumerate(GRADED):
        order = sorted(range(len(DOCS)), key=lambda i: (-scores[row, i], i))[:depth]
        run[q] = {ids[d]: float(depth - r) for r, d in enumerate(order)}
    result = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.10", "recall.5", "P.3"}).evaluate(run)
    mrr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(
        {q: dict(list(docs_.items())[:10]) for q, docs_ in run.items()})
    mean = lambda key, table=result: float(np.mean([table[q][key] for q in GRADED]))  # noqa: E731
    return {"ndcg_at_10": mean("ndcg_cut_10"), "map_at_10": mean("map_cut_10"), "recall_at_5": mean("recall_5"),
            "p_at_3": mean("P_3"), "mrr_at_10": mean("recip_rank", mrr)}


def texts_in_order() -> list[str]:
    return DOCS + [text for text, _ in GRADED.values()]


@pytest.mark.parametrize("search", ["numpy", "faiss"])
def test_beir_corpus_end_to_end_hashing(search: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if search == "faiss":
        require("faiss")
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data, search=search)
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    vectors = adapter.encode_group(texts_in_order(), 32)
    for metric, value in independent(np.asarray(vectors), 10).items():
        score = results.scores["test"][metric]
        assert score.value == pytest.approx(value, abs=1e-9), metric
        assert score.n == len(GRADED) and score.ci_low <= score.value <= score.ci_high
    assert results.provenance.uncertainty.unit == {"search": "queries"}
    assert results.texts.total == len(DOCS) + len(GRADED)  # the corpus once, not once per query


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_beir_corpus_end_to_end_real_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data)
    results = run_ok([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "o"), "-q"], capsys)
    vectors = reference_model().encode(texts_in_order())
    expected = independent(np.asarray(vectors), 10)
    for metric, value in expected.items():
        assert results.scores["test"][metric].value == pytest.approx(value, abs=1e-9), metric
    assert 0 < expected["ndcg_at_10"] < 1


def test_corpus_is_held_once_and_fingerprints_by_digest(tmp_path: Path) -> None:
    import pickle

    from specrun.readers.beir import read_beir_corpus

    rows = read_beir_corpus(make_graded_beir(tmp_path), None, "test")  # type: ignore[arg-type]
    assert len({id(row["corpus"]) for row in rows}) == 1
    corpus = rows[0]["corpus"]
    from specrun.core.corpus import fingerprint_default

    assert json.dumps(corpus, default=fingerprint_default).startswith(f'"corpus:{len(DOCS)} documents:sha256:')
    assert not isinstance(corpus, str)  # a corpus is no string: only the fingerprint hook turns it into its digest
    again = pickle.loads(pickle.dumps(corpus))
    assert isinstance(again, SharedCorpus) and again == corpus and again.texts() == DOCS
    assert rows[1]["qrels"] == {"d0": 3, "d12": 1, "d1": 2}
    # no document is held as text or id: the ids kept are the judged ones, with their positions
    judged = {doc for row in rows for doc in row["qrels"]}
    assert dict(corpus.position) == {doc: int(doc[1:]) for doc in judged}
    assert corpus.text_digests.shape == (len(DOCS), 32) and len(corpus) == len(DOCS)


@pytest.mark.parametrize("line, expected", [
    ("c1\td6\t1.5\n", "score '1.5' is not a whole number"),
    ("c1\td6\t-1\n", "score '-1' is not a whole number"),
    ("c1\td6\t1\n", "judges document 'd6' twice"),
    ("c1\tnope\t1\n", "document 'nope' is not in corpus.jsonl"),
])
def test_bad_qrels_are_refused(line: str, expected: str, tmp_path: Path) -> None:
    from specrun.core.errors import DataError
    from specrun.readers.beir import read_beir_corpus

    folder = make_graded_beir(tmp_path)
    with (folder / "qrels" / "test.tsv").open("a", encoding="utf-8") as handle:
        handle.write(line)
    with pytest.raises(DataError, match=expected):
        read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]


def make_large_beir(root: Path, n_docs: int, n_queries: int) -> Path:
    """A synthetic BEIR folder of n_docs documents (words drawn with a fixed seed) and n_queries graded queries."""
    rng = np.random.default_rng(5)
    words = ["alpha", "beta", "gamma", "delta", "kappa", "sigma", "omega", "theta", "lambda", "zeta", "iota", "rho"]
    folder = root / "corpusset" / "data"
    (folder / "qrels").mkdir(parents=True)
    texts = [" ".join(words[w] for w in rng.integers(0, len(words), 5)) + f" {i % 97}" for i in range(n_docs)]
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    judged = rng.integers(0, n_docs, (n_queries, 3))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": f"q{q}", "text": texts[judged[q, 0]].upper()}) + "\n" for q in range(n_queries)),
        encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{q}\td{d}\t{2 - k}\n" for q in range(n_queries) for k, d in enumerate(dict.fromkeys(judged[q].tolist()))),
        encoding="utf-8")
    return folder


@pytest.mark.parametrize("cache", ["cache", "no-cache"])
def test_a_corpus_run_never_holds_the_corpus_matrix(cache: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the runner, cold and warm, cached or not: every vector waits in a store on disk (no block of the
    encoder is an array in memory), the search asks for at most one chunk of documents at a time, and the store
    hands out at most that many rows at once; the numbers equal those of a search in one chunk."""
    from specrun.encoders import corpus_encoding, vectors
    from specrun.encoders.shards import ShardRows
    from specrun.encoders.store import Found

    n_docs, n_queries, chunk = 3_000, 40, 250
    data = tmp_path / "data"
    make_large_beir(data, n_docs, n_queries)
    asked: list[int] = []
    handed: list[int] = []
    blocks: list[object] = []
    gather, getitem, add_block = vectors.gather, ShardRows.__getitem__, Found.add_block
    corpus_vectors = corpus_encoding.CorpusLookup.vectors

    def counted_gather(blocks: Sequence[object], where: np.ndarray, dim: int) -> np.ndarray:
        asked.append(len(where))
        return gather(blocks, where, dim)  # type: ignore[arg-type]

    def recorded_corpus(self: corpus_encoding.CorpusLookup) -> vectors.CorpusVectors:
        blocks.extend(self.blocks)
        return corpus_vectors(self)

    def counted_getitem(self: ShardRows, rows: object) -> np.ndarray:
        out = getitem(self, rows)  # type: ignore[arg-type]
        handed.append(len(out))
        return out

    def recorded_block(self: Found, block: object) -> int:
        blocks.append(block)
        return add_block(self, block)  # type: ignore[arg-type]

    monkeypatch.setattr(vectors, "gather", counted_gather)
    monkeypatch.setattr(corpus_encoding.CorpusLookup, "vectors", recorded_corpus)
    monkeypatch.setattr(ShardRows, "__getitem__", counted_getitem)
    monkeypatch.setattr(Found, "add_block", recorded_block)
    flags = ["--no-cache"] if cache == "no-cache" else ["--cache-dir", str(tmp_path / "cache")]
    spec = corpus_spec(tmp_path, data, chunk_size=chunk)
    scores = []
    for run in ("cold", "warm"):
        results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--batch-size", "8", "-q",
                          "--output", str(tmp_path / run), *flags], capsys)
        scores.append(results.scores)
        assert asked and max(asked) <= max(chunk, n_queries), max(asked)
        assert handed and max(handed) <= chunk, max(handed)
        assert blocks and all(isinstance(block, ShardRows) for block in blocks)
        for recorded in (asked, handed, blocks):
            recorded.clear()
    monkeypatch.undo()
    (tmp_path / "whole").mkdir()
    whole = corpus_spec(tmp_path / "whole", data, chunk_size=n_docs)
    reference = run_ok([str(whole), "--data-dir", str(data), "--adapter", "hashing", "--batch-size", "8", "-q",
                        "--no-cache", "--output", str(tmp_path / "whole-out")], capsys)
    assert scores[0] == scores[1] == reference.scores


@pytest.mark.parametrize("search", ["numpy", "faiss"])
def test_a_chunk_mapper_gives_the_same_ranking(search: str) -> None:
    """The hook `--executor ray` uses (core.mapping, handed to the kind in its RunContext): each chunk searched on
    its own (chunk_candidates) and merged in chunk order gives the ranking of the loop in this process, positions
    and scores to the last digit; the chunks are read in order and one at a time by the mapper."""
    if search == "faiss":
        require("faiss", "faiss-cpu is not installed here")
    queries, docs = clustered(7, 2_000, 30, duplicates=200)
    read: list[int] = []

    def documents(start: int, stop: int) -> np.ndarray:
        read.append(start)
        return docs[start:stop]

    def in_turn(function: object, shared: object, items: object) -> object:
        for item in items:  # type: ignore[attr-defined]
            yield function(shared, *item)  # type: ignore[operator]

    local = rank_corpus(queries, documents, len(docs), 50, search=search, chunk_size=128)
    read.clear()
    mapped = rank_corpus(queries, documents, len(docs), 50, search=search, chunk_size=128, mapper=in_turn)
    assert read[:16] == list(range(0, 2_000, 128))  # the candidate pass, in chunk order
    assert np.array_equal(mapped[0], local[0]) and np.array_equal(mapped[1], local[1]) and mapped[2] == local[2]


@pytest.mark.parametrize("spare", [0, 3, None])
@pytest.mark.parametrize("levels", [None, 4])  # 4: a handful of distinct scores, ties across every cut
@pytest.mark.parametrize("opening", [5, 64])  # 64: a first block over 4 x width, cut by its own argpartition
def test_best_scores_keeps_the_best_of_everything_met(spare: int | None, levels: int | None, opening: int) -> None:
    """BestScores against a sort of every score met: blocks of different widths (one position per column, as a
    chunk gives, and one per cell, as another search's best), rows met in parts, the spare slots filled, cut
    and overflowed; what it keeps is each row's top `width` scores (ties at the cut: any of them), and each
    kept position is one met with that score."""
    from specrun.search.exact import BestScores

    rng = np.random.default_rng(11)
    rows, width = 9, 7
    best = BestScores(rows, width, spare=spare)
    met: list[dict[int, float]] = [{} for _ in range(rows)]
    position = 0
    for columns in (opening, 40, 1, 13, 7, 64, 2):
        scores = rng.normal(size=(rows, columns)).astype(np.float32)
        if levels:
            scores = np.round(scores * levels / 3).astype(np.float32)
        first = int(rng.integers(0, 3))
        if columns % 2:  # positions per cell: a (rows x columns) grid, as chunk_candidates returns
            positions = position + np.arange((rows - first) * columns).reshape(rows - first, columns)
        else:
            positions = position + np.arange(columns)
        best.add(first, scores[first:], positions)
        for r in range(first, rows):
            for c in range(columns):
                met[r][int(positions[r - first, c] if positions.ndim == 2 else positions[c])] = float(scores[r, c])
        position += (rows - first) * columns if positions.ndim == 2 else columns
    got_s, got_i = best.best()
    assert got_s.shape == got_i.shape == (rows, width)
    for r in range(rows):
        expected = sorted(met[r].values(), reverse=True)[:width]
        assert sorted(got_s[r].tolist(), reverse=True) == expected, r
        assert len(set(got_i[r].tolist())) == width
        assert all(met[r][int(i)] == float(s) for s, i in zip(got_s[r], got_i[r], strict=True))


def test_only_candidates_that_can_reach_the_top_are_rescored(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact pass scores the candidates within twice the float32 bound of each query's depth-th best (never
    fewer than depth), not the whole margin, and the ranking stays the one of a full float64 sort."""
    from specrun.search import exact

    queries, docs = clustered(5, 3_000, 20, duplicates=300)
    asked: list[int] = []
    score_pairs = exact.exact_scores

    def counting(*args: object, **kwargs: object) -> np.ndarray:
        scores = score_pairs(*args, **kwargs)  # type: ignore[arg-type]
        asked.extend(np.isfinite(scores).sum(axis=1).tolist())
        return scores

    monkeypatch.setattr(exact, "exact_scores", counting)
    got_i, got_s, fallbacks = rank_corpus(queries, lambda a, b: docs[a:b], len(docs), 50, chunk_size=256)
    assert len(asked) == len(queries) and min(asked) >= 50 and max(asked) < 50 + 64, asked
    want_i, want_s = brute_force(queries, docs, 50)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_s, want_s)
    assert fallbacks == 0


@pytest.mark.parametrize("dim", [1, 3, 17, 384])
@pytest.mark.parametrize("run", [1, 5, 40, 300])  # pairs of one query side by side: a query's row copied, or not
def test_pair_dots_are_the_numbers_of_cosine_rows(dim: int, run: int) -> None:
    """The exact pass's dot products, a block at a time, from reused buffers, with a query's row met once for a
    long run of its pairs: bit for bit the numbers cosine_rows computes for the same pairs."""
    from specrun.search import pairs
    from specrun.search.cosine import checked_norms, cosine_of_dots, cosine_rows

    rng = np.random.default_rng(dim * 1000 + run)
    queries = rng.normal(size=(50, dim)) * rng.uniform(0.01, 100, size=(50, 1))
    rows = rng.normal(size=(700, dim)).astype(np.float32).astype(np.float64)
    n = pairs.RESCORE_ROWS
    queries_of = np.sort(rng.integers(0, max(1, n // run), size=n)) % len(queries)
    docs_of = rng.integers(0, len(rows), size=n)
    buffers = pairs.PairRows(dim)
    for low, high in ((0, n), (0, 7), (100, 101)):  # whole blocks and short last ones, in the same buffers
        dots = pairs.pair_dots(queries, queries_of[low:high], rows, docs_of[low:high], buffers)
        got = cosine_of_dots(dots, checked_norms(queries)[queries_of[low:high]], checked_norms(rows)[docs_of[low:high]])
        want = cosine_rows(queries[queries_of[low:high]], rows[docs_of[low:high]])
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("width", [1, 2, 9, 1125])
def test_one_key_orders_as_lexsort(width: int) -> None:
    """The exact pass's order (one int64 key a cell) is lexsort's: score descending, then corpus position, with
    ties, -inf cells (not re-scored), scores at +-1 and positions in any order."""
    from specrun.search import exact
    from specrun.search.cosine import COSINE_DECIMALS

    rng = np.random.default_rng(width)
    rows = 30
    scores = np.round(rng.uniform(-1, 1, size=(rows, width)), COSINE_DECIMALS)
    scores[::2] = np.round(scores[::2], 2)  # many ties
    scores[rng.random(size=scores.shape) < 0.1] = -np.inf
    scores[0, 0], scores[-1, -1] = 1.0, -1.0
    positions = np.argsort(rng.random(size=(rows, 5 * width)), axis=1)[:, :width]
    for depth in sorted({1, width // 2 or 1, width}):
        for rows_at_once in (1, 7, 1_024):
            assert np.array_equal(exact._best_ordered(scores, positions, depth, rows_at_once),
                                  exact._ordered(scores, positions)[:, :depth])


def test_duplicate_queries_ranking_alike_are_no_constant_prediction() -> None:
    """Every query ranking the same list is refused only where those documents are all one vector (a review: two
    copies of one query rank alike with any model); one vector for every document is refused."""
    corpus = SharedCorpus.from_lists([f"d{i}" for i in range(5)], [f"doc {i}" for i in range(5)])
    items = [Item(id=f"q{i}", fields={"query": "the same query", "qrels": {"d3": 1}, "corpus": corpus})
             for i in range(2)]

    def distinct(texts: Sequence[str], _field: str) -> np.ndarray:
        return np.array([[1.0, float(len(text) + (text[-1] == "3"))] for text in texts])

    out = CorpusRetrievalProtocol().run(items, RunContext(distinct), CorpusOptions(top_k=3))
    assert set(out.ids) == {"q0", "q1"}
    with pytest.raises(SpecrunError, match="all of one vector; a constant prediction measures nothing"):
        CorpusRetrievalProtocol().run(items, RunContext(lambda texts, _f: np.ones((len(texts), 2))),
                                      CorpusOptions(top_k=3))
