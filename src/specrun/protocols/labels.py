"""Class labels as integers: the labels of a split sorted (numbers numerically, texts as strings) and numbered
from 0, as MTEB's tasks hold them; shared by the kinds that read a `label` field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from specrun.core.errors import DataError
from specrun.core.types import Item


def sorted_labels(labels: Iterable[str | int], origin: str) -> list[str | int]:
    """The distinct labels in order; texts and numbers mixed in one column are refused (their order is unclear)."""
    distinct = set(labels)
    kinds = {type(label) for label in distinct}
    if len(kinds) > 1:
        raise DataError("the label column mixes numbers and texts; map them with `values` to one kind",
                        file=origin)
    return sorted(distinct)  # type: ignore[type-var]


def label_numbers(items: Sequence[Item], classes: Sequence[str | int], field: str = "label") -> np.ndarray:
    """Each item's label as its position in `classes`."""
    index = {label: number for number, label in enumerate(classes)}
    return np.array([index[item.fields[field]] for item in items], dtype=np.int64)


def shown(labels: Iterable[str | int], limit: int = 5) -> str:
    """A few labels for a message: 'a', 'b', ... (and N more). A number says it is one and a text beyond ASCII
    shows its code points, so labels that print alike ('0' and 0, 'café' composed and decomposed) are told apart."""
    ordered = sorted(labels, key=str)
    more = f" and {len(ordered) - limit} more" if len(ordered) > limit else ""
    return ", ".join(_one(label) for label in ordered[:limit]) + more


def _one(label: str | int) -> str:
    if not isinstance(label, str):
        return f"{label!r} (a number)"
    if label.isascii():
        return repr(label)
    return f"{label!r} ({' '.join(f'U+{ord(char):04X}' for char in label)})"
