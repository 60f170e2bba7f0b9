"""Protocol stage: which texts a kind of evaluation needs, and how embeddings become per-unit predictions.

A protocol never knows which benchmark it serves. A new protocol is one class plus one line in PROTOCOLS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from specrun.errors import SpecrunError

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> (len(texts), dim) matrix


@dataclass(frozen=True)
class Item:
    id: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outputs:
    """Per-unit arrays in item order, aligned: what metrics consume and the bootstrap resamples."""

    unit: str
    ids: list[str]
    arrays: dict[str, np.ndarray]


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of a with the same row of b, in float64; a zero vector is an error, not a NaN."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norm_a = np.linalg.norm(a, axis=1)
    norm_b = np.linalg.norm(b, axis=1)
    if np.any(norm_a == 0) or np.any(norm_b == 0):
        raise SpecrunError("the model returned a zero embedding; cosine is undefined")
    return np.einsum("ij,ij->i", a, b) / (norm_a * norm_b)


class StsProtocol:
    """Zero-shot STS: embed each sentence on its own; the prediction is the cosine of the pair."""

    item_fields: ClassVar[dict[str, str]] = {"text1": "text", "text2": "text", "gold": "number"}
    outputs: ClassVar[tuple[str, ...]] = ("prediction", "gold")
    unit: ClassVar[str] = "pairs"

    def texts(self, items: Sequence[Item]) -> Iterator[str]:
        for item in items:
            yield item.fields["text1"]
            yield item.fields["text2"]

    def run(self, items: Sequence[Item], embed: Embed) -> Outputs:
        left = embed([item.fields["text1"] for item in items])
        right = embed([item.fields["text2"] for item in items])
        prediction = cosine_rows(left, right)
        gold = np.array([item.fields["gold"] for item in items], dtype=np.float64)
        return Outputs(unit=self.unit, ids=[item.id for item in items],
                       arrays={"prediction": prediction, "gold": gold})


PROTOCOLS: dict[str, Any] = {
    "sts": StsProtocol(),
}
