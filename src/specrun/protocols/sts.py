"""Zero-shot STS: the cosine of each pair's two embeddings against a gold similarity."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

import numpy as np
from pydantic import BaseModel

from specrun.core.contracts import KindExample, ProtocolKind
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, Embed, Item, Outputs, Support
from specrun.search.cosine import cosine_rows


class StsProtocol(ProtocolKind):
    """Zero-shot STS: embed each sentence on its own; the prediction is the cosine of the pair."""

    item_fields: ClassVar[dict[str, str]] = {"text1": "text", "text2": "text", "gold": "number"}
    outputs: ClassVar[tuple[str, ...]] = ("prediction", "gold")
    unit: ClassVar[str] = "pairs"
    plot: ClassVar[tuple[str, str] | None] = ("prediction", "gold")
    hub_task: ClassVar[str] = "sentence-similarity"
    hub_task_id: ClassVar[str] = "semantic-similarity-scoring"
    caption: ClassVar[str] = "predicted similarity against gold"

    def validate_items(self, items: Sequence[Item], options: BaseModel, origin: str) -> None:
        return None

    def texts(self, items: Sequence[Item], options: BaseModel, support: Support = NO_SUPPORT) -> Iterator[str]:
        for item in items:
            yield item.fields["text1"]
            yield item.fields["text2"]

    def run(self, items: Sequence[Item], embed: Embed, options: BaseModel,
            support: Support = NO_SUPPORT) -> Outputs:
        left = embed([item.fields["text1"] for item in items])
        right = embed([item.fields["text2"] for item in items])
        prediction = cosine_rows(left, right)
        gold = np.array([item.fields["gold"] for item in items], dtype=np.float64)
        return Outputs(unit=self.unit, ids=[item.id for item in items],
                       arrays={"prediction": prediction, "gold": gold})

    def example(self) -> KindExample:
        pairs = [("a cat sits on the mat", "a cat is on the mat", 4.5), ("dogs bark at night", "a dog barks", 3.0),
                 ("the stock market fell", "a child plays football", 0.5), ("rain falls", "it is raining", 4.0),
                 ("he reads a book", "she cooks dinner", 1.0)]
        return KindExample(items=[Item(id=f"p{i}", fields={"text1": a, "text2": b, "gold": g})
                                  for i, (a, b, g) in enumerate(pairs)])


PROTOCOLS.register("sts", StsProtocol())
