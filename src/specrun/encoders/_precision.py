"""--precision: the vectors as a quantised index would hold them, so a user sees what int8 or binary costs.

The cache keeps the model's float32 vectors; quantisation is a function of a spec's own vectors (int8 and uint8
calibrate each dimension's range on them) and is applied when a protocol asks for rows. The codes are
sentence-transformers' `quantize_embeddings`, with the ranges computed once over every vector the spec embeds
(streamed, block by block: nothing grows with the corpus beyond two rows of numbers) and passed to it, as its
documentation advises for data split into parts. Protocols then compare the codes as numbers: int8 and uint8
codes by cosine (as an int8 index scores them); binary and ubinary as +1/-1 per bit, whose cosine is
1 - 2 * hamming / dim, so every ranking and correlation equals one by Hamming distance (binary and ubinary are the
same bits stored two ways: their numbers are equal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from specrun.core.errors import SpecrunError
from specrun.core.types import View

PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")
EmbedView = Callable[[View, Sequence[str]], np.ndarray]


def check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise SpecrunError(f"--precision {precision}: expected one of {', '.join(PRECISIONS)}")


def calibration_ranges(blocks: Iterable[np.ndarray]) -> np.ndarray:
    """(2, dim): each dimension's minimum and maximum over the blocks' rows."""
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    for block in blocks:
        if not len(block):
            continue
        low = block.min(axis=0) if low is None else np.minimum(low, block.min(axis=0))
        high = block.max(axis=0) if high is None else np.maximum(high, block.max(axis=0))
    if low is None or high is None:
        raise SpecrunError("--precision: no vectors to calibrate the quantisation on")
    return np.stack([low, high]).astype(np.float32)


def quantised(embed_view: EmbedView, precision: str, calibration: Iterable[np.ndarray]) -> EmbedView:
    """`embed_view` with its rows quantised to `precision` (the module docstring), as float32 numbers."""
    check_precision(precision)
    if precision == "float32":
        return embed_view
    from sentence_transformers import quantize_embeddings  # imports torch: only for a quantised run

    ranges = calibration_ranges(calibration) if precision.endswith("int8") else None

    def embed(view: View, texts: Sequence[str]) -> np.ndarray:
        vectors = embed_view(view, texts)
        if not len(vectors):
            return vectors
        codes = quantize_embeddings(vectors, precision=precision, ranges=ranges)
        if precision.endswith("int8"):
            return codes.astype(np.float32)
        packed = codes.astype(np.int16) + 128 if precision == "binary" else codes  # binary stores bits - 128
        bits = np.unpackbits(packed.astype(np.uint8), axis=-1, count=vectors.shape[1])
        return (bits.astype(np.float32) * 2 - 1)

    return embed
