"""Summarization: a machine summary's predicted quality is its highest cosine to the human
summaries of the same text; per text, Spearman and Pearson of those predictions against the human scores, then
their mean over texts, as MTEB's SummarizationEvaluator."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specrun.core.contracts import KindExample, KindInfo, NoOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, Item, Outputs, Support
from specrun.search.cosine import COSINE_DECIMALS, check_norms
from specrun.search.similarity import SIMILARITIES, similarity_matrix


def max_cosines(machine: np.ndarray, human: np.ndarray, function: str = "cosine") -> np.ndarray:
    """Each machine summary's highest cosine (or other similarity, `search.similarity`) to any human summary
    (float64, rounded as every cosine)."""
    if function != "cosine":
        return similarity_matrix(machine, human, function).max(axis=1)
    machine, human = np.asarray(machine, dtype=np.float64), np.asarray(human, dtype=np.float64)
    machine_norms, human_norms = np.linalg.norm(machine, axis=1), np.linalg.norm(human, axis=1)
    check_norms(machine_norms)
    check_norms(human_norms)
    cosines = (machine / machine_norms[:, None]) @ (human / human_norms[:, None]).T
    return np.round(cosines, COSINE_DECIMALS).max(axis=1)


class SummarizationProtocol(ProtocolKind[NoOptions]):
    """Per text (the unit): its machine summaries scored by their best cosine to its human summaries, correlated
    with the human scores of the machine summaries. A text whose human scores or predictions are all equal has
    no correlation; it is left out (valid = 0), as MTEB skips it, and the count says how many remain."""

    info = KindInfo(
        item_fields={"machine_summaries": "texts", "human_summaries": "texts", "human_scores": "numbers"},
        outputs=("text_spearman", "text_pearson", "valid"),
        unit="texts",
        prompt_task="Summarization",
        hub_task="summarization",
        similarities=SIMILARITIES,
    )
    Options = NoOptions

    def validate_items(self, items: Sequence[Item], options: NoOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        for item in items:
            if len(item.fields["machine_summaries"]) != len(item.fields["human_scores"]):
                raise DataError(f"text {item.id}: {len(item.fields['machine_summaries'])} machine summaries but "
                                f"{len(item.fields['human_scores'])} human scores", file=origin)

    def run(self, items: Sequence[Item], ctx: RunContext, options: NoOptions) -> Outputs:
        from scipy import stats  # imported here: scipy.stats costs a second at start-up

        spearman, pearson, valid = np.zeros(len(items)), np.zeros(len(items)), np.zeros(len(items))
        for row, item in enumerate(items):
            predicted = max_cosines(ctx.embed(item.fields["machine_summaries"], "machine_summaries"),
                                    ctx.embed(item.fields["human_summaries"], "human_summaries"), ctx.similarity)
            human = np.asarray(item.fields["human_scores"], dtype=np.float64)
            if len(human) < 2 or np.ptp(human) == 0 or np.ptp(predicted) == 0:
                continue
            spearman[row] = stats.spearmanr(human, predicted).statistic
            pearson[row] = stats.pearsonr(human, predicted).statistic
            valid[row] = 1.0
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"text_spearman": spearman, "text_pearson": pearson, "valid": valid})

    def example(self) -> KindExample:
        texts = [(["the council approved the budget", "a budget", "council meets"],
                  ["the city council approved next year's budget"], [4.5, 2.0, 1.5]),
                 (["the team won the cup final", "a match was played", "football"],
                  ["the home team won the cup final on penalties"], [4.0, 2.5, 1.0]),
                 (["rain is expected all week", "weather news", "it might rain"],
                  ["forecasters expect rain for the whole week"], [4.8, 1.2, 3.0]),
                 (["a new phone was released", "phones", "the company sells a phone"],
                  ["the company released its new phone today"], [4.2, 1.0, 3.1])]
        return KindExample(items=[Item(id=f"s{i}", fields={"machine_summaries": m, "human_summaries": h,
                                                           "human_scores": s})
                                  for i, (m, h, s) in enumerate(texts)])


PROTOCOLS.register("summarization", SummarizationProtocol())
