"""The bottom layer: plain types every stage shares, importing no stage.

`Item` is what the data stage produces and protocols read; `Outputs` what a protocol produces and metrics read;
`Embed` the callable the encoder stage hands to protocols; `FIELD_KINDS` the kinds of item fields a protocol can
ask for, each with the converter the data stage applies to a raw value (a new kind is one function and one line).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> (len(texts), dim) matrix, rows in the order given

RANK_CUTOFFS = (1, 3, 5, 10, 20, 100)  # the K of precision_at_K / recall_at_K, shared by protocol and metrics


@dataclass(frozen=True)
class Item:
    id: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outputs:
    """Per-unit arrays in unit order, aligned: what metrics consume and the bootstrap resamples."""

    unit: str
    ids: list[str]
    arrays: dict[str, np.ndarray]


class Score(BaseModel):
    """A metric's value on all units, its bootstrap interval and the number of units it was computed on: what
    the metrics stage returns, results.json stores and every reader shows (one type for all of them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    ci_low: float
    ci_high: float
    n: int = Field(gt=0)


class FieldError(ValueError):
    """A raw value is not of the field's kind; the message says what was expected (the data stage adds where)."""


# A plain decimal number as data files write it. Python's float() also takes '2_2' (22.0), '١٢' (Arabic-Indic
# digits) and surrounding whitespace; a gold score written so is a defect of the file, not a number.
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)",
                      re.ASCII | re.IGNORECASE)


def parse_number(value: Any) -> float | None:
    """A float from a JSON/Excel number or a plain decimal string; None for anything else (bools included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _DECIMAL.fullmatch(value.strip(" ")):
        return float(value)
    return None


def visible(text: str) -> bool:
    """Whether a text holds anything but white space and invisible format characters (zero-width space, joiner,
    BOM, bidi marks): an embedding of nothing is not a sentence."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Zs", "Zl", "Zp", "Mn")
               for ch in text)


def _shown(value: Any) -> Any:
    return value if not isinstance(value, list) else f"a list of {len(value)}"


def to_text(value: Any) -> str:
    if not isinstance(value, str):
        raise FieldError(f"expected text, got {_shown(value)!r}")
    if not visible(value):
        raise FieldError("empty text" + (" (only invisible characters)" if value.strip() else ""))
    return value


def to_number(value: Any) -> float:
    number = parse_number(value)
    if number is None:
        raise FieldError(f"expected a number, got {_shown(value)!r}")
    if not math.isfinite(number):
        raise FieldError(f"expected a finite number, got {_shown(value)!r}")
    return number


def to_texts(value: Any) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(t, str) and visible(t) for t in value):
        raise FieldError(f"expected a non-empty list of non-empty texts, got {_shown(value)!r}")
    return value


def to_labels(value: Any) -> list[int]:
    labels = [str(label).strip() for label in value] if isinstance(value, list) else None
    if labels is None or any(label not in ("0", "1") for label in labels):
        bad = next((label for label in labels or [] if label not in ("0", "1")), value)
        raise FieldError(f"labels must be 0 or 1, got {_shown(bad)!r}")
    return [int(label) for label in labels]


FIELD_KINDS: dict[str, Callable[[Any], Any]] = {
    "text": to_text,
    "number": to_number,
    "texts": to_texts,
    "labels": to_labels,
}
