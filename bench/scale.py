"""Scale bench of corpus retrieval: a deterministic synthetic BEIR folder (documents, queries, graded qrels), then
the time and peak RSS of each phase: read (the `beir_corpus` reader), encode (a fast vectorised fake embedding,
so the search is what is timed, kept in memory as the runner's embedding store is), search, metrics, bootstrap.

    python bench/scale.py --docs 1000000 --queries 10000

The fake embedding of a text is a seeded pseudo-random vector of its crc32; a query `q<i> near: <doc text>` is
that document's vector plus noise, so the measures are not all zero. Its numbers say nothing about any model.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from specrun.metrics import estimate
from specrun.protocols.corpus_retrieval import CorpusOptions
from specrun.protocols.ranking import corpus_measures
from specrun.readers.beir import read_beir_corpus
from specrun.search.exact import rank_corpus

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
         "xi", "omicron", "pi", "rho", "sigma", "tau")


def generate(folder: Path, n_docs: int, n_queries: int, seed: int) -> None:
    """corpus.jsonl, queries.jsonl, qrels/test.tsv; every 500th document repeats the text of the one before."""
    rng = np.random.default_rng(seed)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    words = rng.integers(0, len(WORDS), size=(n_docs, 6))
    texts = []
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(n_docs):
            text = texts[-1] if i % 500 == 499 else f"doc {i} " + " ".join(WORDS[w] for w in words[i])
            texts.append(text)
            handle.write(json.dumps({"_id": f"d{i}", "title": "", "text": text}) + "\n")
    judged = rng.integers(0, n_docs, size=(n_queries, 4))
    scores = rng.integers(0, 4, size=(n_queries, 4))
    scores[:, 0] = np.maximum(scores[:, 0], 1)
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for q in range(n_queries):
            handle.write(json.dumps({"_id": f"q{q}", "text": f"q{q} near: {texts[judged[q, 0]]}"}) + "\n")
    with (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for q in range(n_queries):
            for d, s in dict(zip(judged[q].tolist(), scores[q].tolist(), strict=True)).items():
                handle.write(f"q{q}\td{d}\t{s}\n")


def hashed_vectors(texts: Sequence[str], dim: int) -> np.ndarray:
    """A splitmix64 stream per text's crc32, mapped to [-1, 1): vectorised, deterministic, float32."""
    seeds = np.array([zlib.crc32(t.encode("utf-8")) for t in texts], dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = seeds[:, None] * np.uint64(0x9E3779B97F4A7C15) + np.arange(1, dim + 1, dtype=np.uint64)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return ((x >> np.uint64(40)).astype(np.float32) / np.float32(2**23) - 1).astype(np.float32)


def fake_embeddings(texts: list[str], dim: int, chunk: int = 50_000) -> np.ndarray:
    out = np.empty((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), chunk):
        part = texts[start:start + chunk]
        vectors = hashed_vectors(part, dim)
        for row, text in enumerate(part):
            if text.startswith("q") and " near: " in text:
                near = hashed_vectors([text.split(" near: ", 1)[1]], dim)[0]
                vectors[row] = near + 0.8 * vectors[row]
        out[start:start + len(part)] = vectors
    return out


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB on Linux


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--top-k", type=int, default=1000)
    parser.add_argument("--search", choices=("numpy", "faiss"), default="numpy")
    parser.add_argument("--chunk-size", type=int, default=CorpusOptions.model_fields["chunk_size"].default,
                        help="documents per chunk (default: the protocol's)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--folder", type=Path, help="where the data is written (default: a temporary folder)")
    args = parser.parse_args(argv)
    options = CorpusOptions(top_k=args.top_k, search=args.search, chunk_size=args.chunk_size)
    phases: dict[str, dict[str, float]] = {}

    def phase(name: str, started: float) -> None:
        phases[name] = {"seconds": round(time.perf_counter() - started, 2), "peak_rss_gb": round(peak_rss_gb(), 3)}
        print(f"{name:10s} {phases[name]['seconds']:9.2f} s   peak RSS {phases[name]['peak_rss_gb']:.3f} GB",
              file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as temp:
        folder = args.folder or Path(temp)
        clock = time.perf_counter()
        generate(folder, args.docs, args.queries, args.seed)
        phase("generate", clock)
        clock = time.perf_counter()
        rows = read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]
        phase("read", clock)
    corpus = rows[0]["corpus"]
    query_texts = [row["query"] for row in rows]

    clock = time.perf_counter()  # the runner's store: every unique text once, looked up by text
    unique = list(dict.fromkeys([*corpus.texts, *query_texts]))
    store = fake_embeddings(unique, args.dim)
    row_of = {text: row for row, text in enumerate(unique)}

    def embed(texts: Sequence[str]) -> np.ndarray:
        return store[[row_of[t] for t in texts]]

    phase("encode", clock)
    clock = time.perf_counter()
    texts = corpus.texts
    ranked, _, fallbacks = rank_corpus(embed(query_texts), lambda start, stop: embed(texts[start:stop]), len(texts),
                                       options.top_k, search=options.search, chunk_size=options.chunk_size)
    phase("search", clock)
    clock = time.perf_counter()
    arrays = corpus_measures(ranked, [row["qrels"] for row in rows], corpus.position)
    phase("metrics", clock)
    clock = time.perf_counter()
    scores = {name: estimate(name, arrays, resamples=args.resamples, confidence=0.95, seed=args.seed)
              for name in ("ndcg_cut_10", "map_cut_100", "mrr_cut_10", "recall_cut_1000", "precision_cut_10")}
    phase("bootstrap", clock)
    report = {"docs": len(texts), "queries": len(rows), "dim": args.dim, "top_k": options.top_k,
              "search": options.search, "chunk_size": options.chunk_size, "exact_fallbacks": fallbacks,
              "phases": phases, "scores": {k: v.model_dump() for k, v in scores.items()}}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
