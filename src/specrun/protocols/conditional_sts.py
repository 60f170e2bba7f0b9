"""Conditional STS: the similarity of two sentences under a condition, each sentence pair with two
conditions."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import numpy as np
from pydantic import Field, field_validator

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, FieldText, Item, Outputs, Support
from specrun.search.similarity import SIMILARITIES, similarity_rows

_PLACEHOLDER = re.compile(r"\{(sentence|condition)\}")


class ConditionalOptions(KindOptions):
    template: str = Field(description="Text embedded for a sentence under a condition; {sentence}, {condition}.")
    condition_template: str = Field("{condition}", description="Text embedded for the condition alone.")
    subtract_condition: bool = Field(description="Subtract the condition's embedding from the conditional one.")
    invalid_gold: float | None = Field(None, description="Rows with this gold (e.g. -1) are excluded.")

    @field_validator("template")
    @classmethod
    def _has_sentence(cls, value: str) -> str:
        if "{sentence}" not in value:
            raise ValueError("template must contain {sentence}")
        return value


def fill(template: str, sentence: str, condition: str) -> str:
    """Substitute {sentence} and {condition} once each; braces inside the texts are left alone."""
    values = {"sentence": sentence, "condition": condition}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


class ConditionalStsProtocol(ProtocolKind[ConditionalOptions]):
    """Conditional STS: rows come in adjacent pairs (same two sentences, two conditions). Each sentence is
    embedded under its condition (a template), optionally minus the condition's own embedding; the
    prediction is their similarity (the protocol's: cosine by default). The unit is the sentence pair with its
    two conditions."""

    info = KindInfo(
        item_fields={"text1": "text", "text2": "text", "condition": "text", "gold": "number"},
        outputs=("prediction_a", "prediction_b", "gold_a", "gold_b", "valid_a", "valid_b"),
        unit="sentence pairs",
        prompt_task="STS",
        hub_task="sentence-similarity",
        hub_task_id="semantic-similarity-scoring",
        similarities=SIMILARITIES,
        every_item_a_unit=False,
    )
    Options = ConditionalOptions

    def validate_items(self, items: Sequence[Item], options: ConditionalOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        if len(items) % 2:
            raise DataError(f"{len(items)} rows; conditional rows come in adjacent pairs", file=origin)
        for first, second in zip(items[::2], items[1::2], strict=True):
            for key in ("text1", "text2"):
                if first.fields[key] != second.fields[key]:
                    raise DataError(f"items {first.id} and {second.id} form a pair but differ in {key}", file=origin)

    def _conditioned(self, item: Item, key: str, options: ConditionalOptions) -> str:
        return fill(options.template, item.fields[key], item.fields["condition"])

    def texts(self, items: Sequence[Item], options: ConditionalOptions,
              support: Support = NO_SUPPORT) -> Iterator[FieldText]:
        for item in items:
            yield "text1", self._conditioned(item, "text1", options)
            yield "text2", self._conditioned(item, "text2", options)
            if options.subtract_condition:
                yield "condition", fill(options.condition_template, "", item.fields["condition"])

    def run(self, items: Sequence[Item], ctx: RunContext, options: ConditionalOptions) -> Outputs:
        left = ctx.embed([self._conditioned(item, "text1", options) for item in items], "text1").astype(np.float64)
        right = ctx.embed([self._conditioned(item, "text2", options) for item in items], "text2").astype(np.float64)
        if options.subtract_condition:
            condition = ctx.embed([fill(options.condition_template, "", item.fields["condition"]) for item in items],
                              "condition")
            left, right = left - condition, right - condition
        prediction = similarity_rows(left, right, ctx.similarity)
        if len(prediction) > 2 and np.ptp(prediction) <= 1e-12 * max(1.0, float(np.abs(prediction).max())):
            raise DataError(f"every one of the {len(prediction)} pairs scores {float(prediction[0]):.6g}; a constant "
                            "prediction measures nothing (are the vectors all the same?)")
        gold = np.array([item.fields["gold"] for item in items], dtype=np.float64)
        valid = np.ones_like(gold) if options.invalid_gold is None else (gold != options.invalid_gold) * 1.0
        return Outputs(unit=self.info.unit, ids=[item.id for item in items[::2]], arrays={
            "prediction_a": prediction[::2], "prediction_b": prediction[1::2],
            "gold_a": gold[::2], "gold_b": gold[1::2], "valid_a": valid[::2], "valid_b": valid[1::2]})

    def example(self) -> KindExample:
        rows = [("a man rides a red bike", "a woman rides a blue bike", "the vehicle", 5),
                ("a man rides a red bike", "a woman rides a blue bike", "the colour", 1),
                ("two dogs play on a beach", "a cat sleeps on a sofa", "the animal", 2),
                ("two dogs play on a beach", "a cat sleeps on a sofa", "the place", 1),
                ("a chef cuts vegetables", "a chef serves soup", "the job", 5),
                ("a chef cuts vegetables", "a chef serves soup", "the action", 2),
                ("kids build a sandcastle", "kids swim in the sea", "the place", 4),
                ("kids build a sandcastle", "kids swim in the sea", "the activity", 2)]
        return KindExample(items=[Item(id=f"c{i}", fields={"text1": a, "text2": b, "condition": c, "gold": g})
                                  for i, (a, b, c, g) in enumerate(rows)],
                           options={"template": "{sentence} (about {condition})", "subtract_condition": False})


PROTOCOLS.register("conditional_sts", ConditionalStsProtocol())
