"""Pair classification: is a sentence pair a positive (a paraphrase, an entailment)? Each pair's similarity
under four functions, scored against binary labels by threshold-free AP and by the best threshold, as MTEB's
AbsTaskPairClassification; a threshold can instead be chosen on another split and applied here, as JMTEB does.
The fixed thresholds are chosen on, and applied to, the scores of the protocol's `similarity:` (`threshold_score`:
cosine by default, so a cosine spec's numbers are the ones it always had)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, Embed, Item, Outputs, Support
from specrun.search.cosine import cosine_rows
from specrun.search.similarity import SIMILARITIES
from specrun.search.thresholds import FUNCTIONS, THRESHOLD_SCORE, best_thresholds, score_output


class PairOptions(KindOptions):
    threshold_split: str | None = Field(
        None, description="A split whose pairs choose the accuracy and F1 thresholds (on the protocol's "
                          "similarity, cosine by default) that are then applied to the evaluated split, as JMTEB; "
                          "without it they are chosen on the evaluated split itself, as MTEB.")


def similarities(left: np.ndarray, right: np.ndarray) -> dict[str, np.ndarray]:
    """Per pair: cosine, dot product, and the negated euclidean and manhattan distances (higher = more similar,
    as MTEB's reversed sort of distances)."""
    a, b = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
    return {"cosine": cosine_rows(a, b), "dot": np.einsum("ij,ij->i", a, b),
            "euclidean": -np.linalg.norm(a - b, axis=1), "manhattan": -np.abs(a - b).sum(axis=1)}


class PairClassificationProtocol(ProtocolKind[PairOptions]):
    """Each sentence embedded on its own; per pair its similarity under each function, its score under the
    protocol's similarity (`threshold_score`, one of those four) and its 0/1 label, and the thresholds for accuracy
    and F1 on that score (from the threshold split, or from the evaluated split itself)."""

    info = KindInfo(
        item_fields={"text1": "text", "text2": "text", "label": "binary"},
        outputs=(*(score_output(f) for f in FUNCTIONS), THRESHOLD_SCORE, "pair_label", "accuracy_threshold",
                 "f1_threshold"),
        gold={"pair_label": "label"},
        unit="pairs",
        prompt_task="PairClassification",
        split_options=("threshold_split",),
        hub_task="text-classification",
        hub_task_id="semantic-similarity-classification",
        similarities=SIMILARITIES,
    )
    Options = PairOptions

    def validate_items(self, items: Sequence[Item], options: PairOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        named = [("the evaluated split", items)]
        if options.threshold_split is not None:
            named.append((f"threshold split {options.threshold_split!r}", support[options.threshold_split]))
        for where, group in named:
            labels = {item.fields["label"] for item in group}
            if len(labels) < 2:
                raise DataError(f"{where}: every pair has label {int(next(iter(labels)))}; pair classification "
                                "needs both positive and negative pairs")

    def _scored(self, items: Sequence[Item], embed: Embed) -> tuple[dict[str, np.ndarray], np.ndarray]:
        labels = np.array([item.fields["label"] for item in items], dtype=np.float64)
        left = embed([item.fields["text1"] for item in items], "text1")
        right = embed([item.fields["text2"] for item in items], "text2")
        return similarities(left, right), labels

    def run(self, items: Sequence[Item], ctx: RunContext, options: PairOptions) -> Outputs:
        scores, labels = self._scored(items, ctx.embed)
        function = ctx.similarity  # the thresholds' scores: the same numbers as that function's own column
        if len(items) > 1 and np.all(scores[function] == scores[function][0]):
            raise DataError(f"every one of the {len(items)} pairs scores {float(scores[function][0]):.6g} under "
                            f"{function}; a constant prediction measures nothing (are the vectors all the same?)")
        if options.threshold_split is not None:
            chosen, chosen_labels = self._scored(ctx.support[options.threshold_split], ctx.embed)
            accuracy_threshold, f1_threshold = best_thresholds(chosen[function], chosen_labels)
        else:
            accuracy_threshold, f1_threshold = best_thresholds(scores[function], labels)
        n = len(items)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items], arrays={
            **{score_output(name): values for name, values in scores.items()}, THRESHOLD_SCORE: scores[function],
            "pair_label": labels,
            "accuracy_threshold": np.full(n, accuracy_threshold), "f1_threshold": np.full(n, f1_threshold)})

    def example(self) -> KindExample:
        pairs = [("a man plays a guitar", "a man is playing a guitar", 1), ("a dog runs", "a cat sleeps", 0),
                 ("the woman slices onions", "a woman is cutting an onion", 1), ("kids swim", "a car drives", 0),
                 ("a boy reads", "a child is reading", 1), ("rain falls", "the sun shines", 0)]
        held = [("two men talk", "two people are talking", 1), ("a bird sings", "a fish swims", 0),
                ("a girl dances", "a girl is dancing", 1), ("snow falls", "a man cooks", 0)]
        return KindExample(
            items=[Item(id=f"p{i}", fields={"text1": a, "text2": b, "label": y}) for i, (a, b, y) in enumerate(pairs)],
            options={"threshold_split": "dev"},
            support={"dev": [Item(id=f"d{i}", fields={"text1": a, "text2": b, "label": y})
                             for i, (a, b, y) in enumerate(held)]})


PROTOCOLS.register("pair_classification", PairClassificationProtocol())
