"""Reranking's trec measures against pytrec_eval on the same candidate rankings (lists of different lengths,
relevant candidates below every cutoff), and its bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval

from specrun.core.contracts import NoOptions, RunContext
from specrun.core.errors import DataError, SpecrunError
from specrun.core.types import CORPUS_CUTOFFS, Item
from specrun.protocols.reranking import RerankingProtocol

TREC = {"ndcg": "ndcg_cut", "map": "map_cut", "recall": "recall", "precision": "P"}


def test_measures_equal_pytrec_eval_on_the_cosine_ranking() -> None:
    rng = np.random.default_rng(5)
    vectors: dict[str, np.ndarray] = {}
    items, rankings = [], {}
    for q in range(12):
        n = int(rng.integers(2, 1200)) if q % 4 == 0 else int(rng.integers(2, 30))
        vectors[f"q{q}"] = rng.standard_normal(6)
        candidates = [f"q{q}c{j}" for j in range(n)]
        for text in candidates:
            vectors[text] = rng.standard_normal(6)
        relevance = [int(rng.random() < 0.2) for _ in range(n)]
        relevance[int(rng.integers(0, n))] = 1
        items.append(Item(id=f"q{q}", fields={"query": f"q{q}", "candidates": candidates, "relevance": relevance}))
        cosine = [vectors[f"q{q}"] @ vectors[c] / np.linalg.norm(vectors[f"q{q}"]) / np.linalg.norm(vectors[c])
                  for c in candidates]
        rankings[f"q{q}"] = {c: float(s) for c, s in zip(candidates, cosine, strict=True)}
    out = RerankingProtocol().run(items,
                                  RunContext(lambda texts, _field: np.stack([vectors[t] for t in texts])),
                                  NoOptions()).arrays
    qrels = {item.id: dict(zip(item.fields["candidates"], item.fields["relevance"], strict=True)) for item in items}
    cut = ",".join(map(str, CORPUS_CUTOFFS))
    result = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{cut}", f"map_cut.{cut}", f"recall.{cut}",
                                                    f"P.{cut}"}).evaluate(rankings)
    for ours, theirs in TREC.items():
        for k in CORPUS_CUTOFFS:
            expected = [result[item.id][f"{theirs}_{k}"] for item in items]
            np.testing.assert_allclose(out[f"{ours}_cut_{k}"], expected, rtol=0, atol=1e-9, err_msg=f"{ours}@{k}")
    for k in CORPUS_CUTOFFS:
        top = {q: dict(sorted(docs.items(), key=lambda kv: -kv[1])[:k]) for q, docs in rankings.items()}
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top)
        np.testing.assert_allclose(out[f"mrr_cut_{k}"], [rr[item.id]["recip_rank"] for item in items], atol=1e-9)


def test_bad_candidate_lists_are_one_line() -> None:
    protocol = RerankingProtocol()
    bad = [Item(id="q", fields={"query": "a", "candidates": ["b", "c"], "relevance": [1]})]
    with pytest.raises(DataError, match="2 candidates but 1 labels"):
        protocol.validate_items(bad, None, "f")
    none = [Item(id="q", fields={"query": "a", "candidates": ["b", "c"], "relevance": [0, 0]})]
    with pytest.raises(DataError, match="no relevant candidate"):
        protocol.validate_items(none, None, "f")
    same = [Item(id="q", fields={"query": "a", "candidates": ["b", "c"], "relevance": [0, 1]})]
    with pytest.raises(SpecrunError, match="same score"):
        protocol.run(same, RunContext(lambda texts, _field: np.ones((len(texts), 3))), NoOptions())
