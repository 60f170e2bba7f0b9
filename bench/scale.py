"""Scale bench of corpus retrieval: a deterministic synthetic BEIR folder (documents, queries, graded qrels), then
the time and peak RSS of each phase: read (the `beir_corpus` reader), encode (a fast vectorised fake embedding,
so the search is what is timed, written in the runner's canonical groups to the runner's store: verified shards on
disk, read back when asked), search (from that store, chunk by chunk), metrics, bootstrap; and the floor of this
machine: the float32 products of the same queries with every chunk of documents, timed alone in the same run.

    python bench/scale.py --docs 1000000 --queries 10000

The fake embedding of a text is a seeded pseudo-random vector of its crc32; a query `q<i> near: <doc text>` is
that document's vector plus noise, so the measures are not all zero. Its numbers say nothing about any model.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import EncoderInfo
from specrun.encoders.batching import groups_of
from specrun.encoders.corpus_encoding import CorpusLookup, encode_corpus
from specrun.encoders.store import CacheKey, EmbeddingCache
from specrun.encoders.vectors import Embeddings, GroupChecks
from specrun.metrics import estimate
from specrun.protocols.corpus_retrieval import CorpusOptions
from specrun.protocols.ranking import corpus_measures
from specrun.readers.beir import read_beir_corpus
from specrun.search.exact import rank_positions

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
         "xi", "omicron", "pi", "rho", "sigma", "tau")


def doc_text(i: int, words: np.ndarray) -> str:
    return f"doc {i} " + " ".join(WORDS[w] for w in words[i].tolist())


def generate(folder: Path, n_docs: int, n_queries: int, seed: int) -> None:
    """corpus.jsonl, queries.jsonl, qrels/test.tsv; every 500th document repeats the text of the one before.
    Run in a child process, so that what it holds is not in the bench's peak RSS."""
    rng = np.random.default_rng(seed)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    words = rng.integers(0, len(WORDS), size=(n_docs, 6)).astype(np.uint8)

    def text_of(i: int) -> str:
        return doc_text(i - 1 if i % 500 == 499 else i, words)

    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(n_docs):
            handle.write(json.dumps({"_id": f"d{i}", "title": "", "text": text_of(i)}) + "\n")
    judged = rng.integers(0, n_docs, size=(n_queries, 4))
    scores = rng.integers(0, 4, size=(n_queries, 4))
    scores[:, 0] = np.maximum(scores[:, 0], 1)
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for q in range(n_queries):
            handle.write(json.dumps({"_id": f"q{q}", "text": f"q{q} near: {text_of(int(judged[q, 0]))}"}) + "\n")
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


BATCH = 32
STORE_KEY = CacheKey(model="scale-bench", model_files="", settings=EncoderSettings(adapter="scale-bench"))
STORE_INFO = EncoderInfo(settings=EncoderSettings(adapter="scale-bench"), pooling="none", normalize=False, device="cpu")


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
    parser.add_argument("--folder", type=Path, help="where the data and the store are written, in a temporary "
                        "folder removed at the end (default: the system's temporary folder)")
    args = parser.parse_args(argv)
    options = CorpusOptions(top_k=args.top_k, search=args.search, chunk_size=args.chunk_size)
    phases: dict[str, dict[str, float]] = {}

    def phase(name: str, started: float) -> None:
        phases[name] = {"seconds": round(time.perf_counter() - started, 2), "peak_rss_gb": round(peak_rss_gb(), 3)}
        print(f"{name:10s} {phases[name]['seconds']:9.2f} s   peak RSS {phases[name]['peak_rss_gb']:.3f} GB",
              file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(dir=args.folder) as temp:
        folder = Path(temp)
        clock = time.perf_counter()
        child = multiprocessing.get_context("spawn").Process(target=generate,
                                                             args=(folder, args.docs, args.queries, args.seed))
        child.start()
        child.join()
        if child.exitcode:
            raise SystemExit(f"generating the data failed (exit {child.exitcode})")
        phase("generate", clock)
        clock = time.perf_counter()
        rows = read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]
        phase("read", clock)
        corpus = rows[0]["corpus"]
        query_texts = [row["query"] for row in rows]
        report = encode_search_score(args, options, phases, phase, rows, corpus, query_texts, folder)
    report["floor_s"] = floor_seconds(args, len(corpus), options.chunk_size, embed_queries(query_texts, args.dim))
    # a corpus too small to time (a smoke run) has no ratio, never a division by a floor rounded to 0
    report["search_over_floor"] = round(phases["search"]["seconds"] / max(report["floor_s"], 0.01), 2)
    print(f"floor      {report['floor_s']:9.2f} s   search / floor {report['search_over_floor']:.2f}   store "
          f"{report['store_gb']:.3f} GB on disk", file=sys.stderr, flush=True)
    print(json.dumps(report, indent=1))
    return 0


class FakeExecutor:
    """The runner's executor contract (`groups`) over the fake embedding: canonical groups of the texts given."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def groups(self, texts: list[str], role: str = "symmetric", prompt: str = "") -> Iterator[tuple[list[int],
                                                                                                      np.ndarray]]:
        for indices in groups_of(texts, BATCH):
            yield indices, fake_embeddings([texts[i] for i in indices], self.dim)


def encode_search_score(args: argparse.Namespace, options: CorpusOptions, phases: dict[str, dict[str, float]],
                        phase: Any, rows: Any, corpus: Any, query_texts: list[str], folder: Path) -> dict[str, Any]:
    """The runner's encoder-stage path: the queries as texts (stored, looked up by text), the corpus by its
    digests (`lookup_digests`, `encode_corpus`: a window at a time, batched canonically within it), every vector
    in a store on disk; then the search reads them back a chunk at a time."""
    clock = time.perf_counter()
    store_folder = folder / "store"
    executor = FakeExecutor(args.dim)
    queries = EmbeddingCache(store_folder, replace(STORE_KEY, role="query"), warn=print)
    unique = list(dict.fromkeys(query_texts))
    for indices, vectors in executor.groups(unique):
        queries.store([unique[i] for i in indices], vectors)
    found = queries.lookup(unique)
    embed = Embeddings(blocks=found.blocks, row_of=found.where, info=STORE_INFO, encoded=frozenset()).embed
    documents = EmbeddingCache(store_folder, replace(STORE_KEY, role="document"), warn=print)
    first, inverse = corpus.unique()
    blocks, places = documents.lookup_digests(corpus.text_digests, first)
    lookup = CorpusLookup(corpus, first, inverse, blocks, places)
    encode_corpus(executor, lookup, ("document", ""), documents,  # type: ignore[arg-type]
                  GroupChecks("scale-bench"))
    vectors = lookup.vectors()
    del lookup, first, inverse, places
    store_bytes = sum(path.stat().st_size for path in store_folder.rglob("*") if path.is_file())
    phase("encode", clock)
    report = search_and_score(args, options, phases, phase, rows, corpus, embed(query_texts), vectors)
    report["store_gb"] = round(store_bytes / 2**30, 3)
    return report


def embed_queries(query_texts: list[str], dim: int) -> np.ndarray:
    return fake_embeddings(query_texts, dim)


def floor_seconds(args: argparse.Namespace, n_docs: int, chunk_size: int, queries: np.ndarray) -> float:
    """The machine's floor for the search: one float32 product of the queries with each chunk of documents (the
    same shapes the search multiplies), timed alone; the chunk's vectors are made outside the clock."""
    elapsed = 0.0
    unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    for start in range(0, n_docs, chunk_size):
        stop = min(start + chunk_size, n_docs)
        chunk = hashed_vectors([f"floor {i}" for i in range(start, stop)], args.dim)
        block = max(1, (8 << 20) // (4 * (stop - start)))
        clock = time.perf_counter()
        for q in range(0, len(unit), block):
            unit[q:q + block] @ chunk.T
        elapsed += time.perf_counter() - clock
    return round(elapsed, 2)


def search_and_score(args: argparse.Namespace, options: CorpusOptions, phases: dict[str, dict[str, float]],
                     phase: Any, rows: Any, corpus: Any, queries: np.ndarray, vectors: Any) -> dict[str, Any]:
    clock = time.perf_counter()
    ranked, fallbacks = rank_positions(queries, vectors.rows, len(corpus), options.top_k, search=options.search,
                                       chunk_size=options.chunk_size)  # the protocol's call: positions only
    phase("search", clock)
    clock = time.perf_counter()
    arrays = corpus_measures(ranked, [row["qrels"] for row in rows], corpus.position)
    phase("metrics", clock)
    clock = time.perf_counter()
    scores = {name: estimate(name, arrays, resamples=args.resamples, confidence=0.95, seed=args.seed)
              for name in ("ndcg_cut_10", "map_cut_100", "mrr_cut_10", "recall_cut_1000", "precision_cut_10")}
    phase("bootstrap", clock)
    report = {"docs": len(corpus), "queries": len(rows), "dim": args.dim, "top_k": options.top_k,
              "search": options.search, "chunk_size": options.chunk_size, "exact_fallbacks": fallbacks,
              "phases": phases, "scores": {k: v.model_dump() for k, v in scores.items()}}
    return report


if __name__ == "__main__":
    raise SystemExit(main())
