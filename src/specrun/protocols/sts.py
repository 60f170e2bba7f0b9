"""STS: the similarity of each pair's two embeddings (cosine, or the protocol's `similarity`: dot, or MTEB's
euclidean and manhattan variants as negated distances) against a gold similarity (zero-shot), or, with a fit split,
SentEval's supervised probe: a linear regression on the features |u - v| and u * v of the fit split's pairs
predicts each evaluated pair's similarity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, Embed, Item, Outputs, Support
from specrun.search.cosine import cosine_rows
from specrun.search.similarity import SIMILARITIES, similarity_rows


class StsOptions(KindOptions):
    fit_split: str | None = Field(
        None, description="A split whose pairs fit SentEval's supervised probe (a linear regression on |u - v| "
                          "and u * v); without it the prediction is the cosine (zero-shot).")


def pair_features(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """SentEval's STS features of a pair: |u - v| and u * v, side by side."""
    left, right = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
    return np.concatenate([np.abs(left - right), left * right], axis=1)


class StsProtocol(ProtocolKind[StsOptions]):
    """STS: embed each sentence on its own; the prediction is the cosine of the pair, or a probe's prediction."""

    info = KindInfo(
        item_fields={"text1": "text", "text2": "text", "gold": "number"},
        outputs=("prediction", "gold"),
        gold={"gold": "gold"},
        unit="pairs",
        prompt_task="STS",
        split_options=("fit_split",),
        plot=("prediction", "gold"),
        caption="predicted similarity against gold",
        hub_task="sentence-similarity",
        hub_task_id="semantic-similarity-scoring",
        similarities=SIMILARITIES,
    )
    Options = StsOptions

    def _embedded(self, items: Sequence[Item], embed: Embed) -> tuple[np.ndarray, np.ndarray]:
        return (embed([item.fields["text1"] for item in items], "text1"),
                embed([item.fields["text2"] for item in items], "text2"))

    def validate_items(self, items: Sequence[Item], options: StsOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        if options.fit_split is not None:
            fit_gold = np.array([item.fields["gold"] for item in support[options.fit_split]], dtype=np.float64)
            if np.ptp(fit_gold) == 0:
                raise DataError(f"fit split {options.fit_split!r}: every gold score is {float(fit_gold[0])!r}; a probe "
                                "fitted on it predicts a constant")

    def run(self, items: Sequence[Item], ctx: RunContext, options: StsOptions) -> Outputs:
        left, right = self._embedded(items, ctx.embed)
        prediction = similarity_rows(left, right, ctx.similarity)  # cosine also refuses a zero vector
        gold = np.array([item.fields["gold"] for item in items], dtype=np.float64)
        if options.fit_split is not None:
            from sklearn.linear_model import LinearRegression

            fit = ctx.support[options.fit_split]
            fit_left, fit_right = self._embedded(fit, ctx.embed)
            cosine_rows(fit_left, fit_right)  # only to refuse a zero or non-finite vector of the fit split
            fit_gold = np.array([item.fields["gold"] for item in fit], dtype=np.float64)
            probe = LinearRegression().fit(pair_features(fit_left, fit_right), fit_gold)
            prediction = probe.predict(pair_features(left, right))
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"prediction": prediction, "gold": gold})

    def example(self) -> KindExample:
        pairs = [("a cat sits on the mat", "a cat is on the mat", 4.5), ("dogs bark at night", "a dog barks", 3.0),
                 ("the stock market fell", "a child plays football", 0.5), ("rain falls", "it is raining", 4.0),
                 ("he reads a book", "she cooks dinner", 1.0)]
        return KindExample(items=[Item(id=f"p{i}", fields={"text1": a, "text2": b, "gold": g})
                                  for i, (a, b, g) in enumerate(pairs)])


PROTOCOLS.register("sts", StsProtocol())
