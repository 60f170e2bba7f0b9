"""Summarization against scipy per text and a plain mean over the texts that have a correlation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from specrun.core.contracts import NoOptions, RunContext
from specrun.core.errors import DataError
from specrun.core.types import Item
from specrun.metrics import estimate
from specrun.protocols.summarization import SummarizationProtocol


def test_per_text_correlations_of_max_cosines_averaged_over_valid_texts() -> None:
    rng = np.random.default_rng(2)
    vectors: dict[str, np.ndarray] = {}
    items, expected = [], []
    for t in range(8):
        machine = [f"t{t}m{j}" for j in range(5)]
        human = [f"t{t}h{j}" for j in range(3)]
        for text in machine + human:
            vectors[text] = rng.standard_normal(4)
        scores = [3.0] * 5 if t == 0 else list(rng.integers(1, 6, 5).astype(float))  # text 0: constant scores
        items.append(Item(id=f"t{t}", fields={"machine_summaries": machine, "human_summaries": human,
                                              "human_scores": scores}))
        if np.ptp(scores) > 0:
            predicted = [max(vectors[m] @ vectors[h] / np.linalg.norm(vectors[m]) / np.linalg.norm(vectors[h])
                             for h in human) for m in machine]
            expected.append((stats.spearmanr(scores, predicted).statistic,
                             stats.pearsonr(scores, predicted).statistic))
    out = SummarizationProtocol().run(items,
                                      RunContext(lambda texts, _field: np.stack([vectors[x] for x in texts])),
                                      NoOptions())
    assert out.arrays["valid"].tolist() == [0.0] + [1.0] * 7
    spearman = estimate("summary_spearman", out.arrays, resamples=100, confidence=0.9, seed=1)
    pearson = estimate("summary_pearson", out.arrays, resamples=100, confidence=0.9, seed=1)
    assert spearman.value == pytest.approx(np.mean([s for s, _ in expected]), abs=1e-12) and spearman.n == 7
    assert pearson.value == pytest.approx(np.mean([p for _, p in expected]), abs=1e-12)


def test_scores_must_match_the_machine_summaries() -> None:
    item = Item(id="t", fields={"machine_summaries": ["a", "b"], "human_summaries": ["c"], "human_scores": [1.0]})
    with pytest.raises(DataError, match="2 machine summaries but 1 human scores"):
        SummarizationProtocol().validate_items([item], None, "f")
