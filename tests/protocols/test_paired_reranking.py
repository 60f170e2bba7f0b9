"""paired_reranking: p-MRR of og/changed query pairs against a hand-worked case (MTEB's rank_score, its
id-descending ties, a document outside a run at len + 1), the pooled, og and changed trec measures, and the pairs
it refuses."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from specrun.core.contracts import RunContext
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import DataError
from specrun.core.types import Item
from specrun.protocols.corpus_reranking import CandidateOptions
from specrun.protocols.paired_reranking import PairedRerankingProtocol, pair_p_mrr, rank_score

KIND = PairedRerankingProtocol()
# 2-d vectors: a document's cosine to the og query (1, 0) is its first coordinate over its norm, to the changed
# query (0, 1) its second; d2 and d3 share a norm and a first coordinate, so they tie under the og query only
VECTORS = {"og query": (1.0, 0.0), "changed query": (0.0, 1.0), "doc one": (0.9, 0.3), "doc two": (0.5, 0.8),
           "doc three": (0.5, -0.8), "doc four": (0.1, -0.2)}
CORPUS = SharedCorpus.from_lists(ids=["d1", "d2", "d3", "d4"], texts=["doc one", "doc two", "doc three", "doc four"])


def embed(texts: Sequence[str], field: str) -> np.ndarray:
    return np.array([VECTORS[text] for text in texts], dtype=np.float64)


def pair(pair_id: str, changed: list[str]) -> Item:
    every = ["d1", "d2", "d3", "d4"]
    return Item(id=pair_id, fields={"query": "og query", "qrels": {"d1": 1, "d3": 1}, "candidates": every,
                                    "changed_query": "changed query", "changed_qrels": {"d1": 1, "d3": 0},
                                    "changed_candidates": every, "changed": changed, "corpus": CORPUS})


def test_p_mrr_equals_a_hand_worked_case() -> None:
    """top_k 3. og query: d1 .949, d2 = d3 .530 (a tie: d3 first, ids descending), d4 .447, so the og run is
    [d1, d3, d2] and d4, outside it, has rank 3 + 1 = 4. Changed query: d2 .848, d1 .316, d3 -.848, d4 -.894: run
    [d2, d1, d3], d4 again rank 4.
    Pair p0, changed [d3, d4]: d3 og 2 -> new 3, moved down: 1 - (1/3)/(1/2) = 1/3; d4 4 -> 4: (1/4)/(1/4) - 1
    = 0; p-MRR (1/3 + 0) / 2 = 1/6.
    Pair p1, changed [d2, zz] (zz is in no run, nor in the corpus): d2 og 3 -> new 1, moved up:
    (1/3)/(1/1) - 1 = -2/3; zz 4 -> 4: 0; p-MRR -1/3. Their mean, MTEB's p-MRR: -1/12.
    MRR@10 against each query's own qrels: og {d1, d3} relevant, d1 first: 1; changed {d1}, second: 1/2; the
    plain MRR@10 is their mean, 3/4 (MTEB's over all four queries)."""
    out = KIND.run([pair("p0", ["d3", "d4"]), pair("p1", ["d2", "zz"])], RunContext(embed),
                   CandidateOptions(top_k=3))
    assert out.unit == "pairs" and out.ids == ["p0", "p1"]
    np.testing.assert_allclose(out.arrays["p_mrr"], [1 / 6, -1 / 3], rtol=0, atol=1e-15)
    assert np.mean(out.arrays["p_mrr"]) == pytest.approx(-1 / 12, abs=1e-15)
    np.testing.assert_array_equal(out.arrays["og_mrr_cut_10"], [1.0, 1.0])
    np.testing.assert_array_equal(out.arrays["changed_mrr_cut_10"], [0.5, 0.5])
    np.testing.assert_array_equal(out.arrays["mrr_cut_10"], [0.75, 0.75])
    np.testing.assert_array_equal(out.arrays["og_recall_cut_3"], [1.0, 1.0])  # d3 at 2 counts, d4 is not judged


def test_rank_score_and_a_pair_follow_mteb() -> None:
    """MTEB's rank_score: <= 0 for a document that moved up or stayed, > 0 for one that moved down; a document
    listed twice counts twice."""
    assert rank_score(2, 2) == 0.0 and rank_score(1, 4) == pytest.approx(0.75) and rank_score(4, 1) == -0.75
    runs = np.array([[0, 2, 1], [1, 0, -1]])  # positions: og run d1, d3, d2; changed run d2, d1 (short)
    position = {"d1": 0, "d2": 1, "d3": 2}
    assert pair_p_mrr(runs[0], runs[1], ["d3", "d3"], position) == pytest.approx(1 - 2 / 3)  # 2 -> 3 (len 2 + 1)
    assert pair_p_mrr(runs[0], runs[1], ["d2"], position) == pytest.approx(1 / 3 - 1)  # 3 -> 1


def test_a_pair_without_a_changed_document_or_with_a_candidate_outside_the_corpus_is_one_line() -> None:
    options = CandidateOptions()
    with pytest.raises(DataError, match="pair p0: no changed document, so no p-MRR") as caught:
        KIND.validate_items([pair("p0", [])], options, "rows")
    assert "\n" not in str(caught.value)
    stray = pair("p1", ["d1"])
    stray.fields["changed_candidates"] = ["d1", "d9"]
    with pytest.raises(DataError, match="pair p1: changed_candidates 'd9' is not a document of the corpus"):
        KIND.validate_items([stray], options, "rows")
