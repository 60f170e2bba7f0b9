"""Kinds of item fields and the converter of each: what a protocol's `item_fields` name, and what the data stage
applies to a raw value. A protocol that needs a new kind registers its converter from its own file
(`FIELD_KINDS.register`); a name registered twice is refused."""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

from specrun.core.errors import FieldError
from specrun.core.registry import FIELD_KINDS

# A plain decimal number as data files write it. Python's float() also takes '2_2' (22.0), '١٢' (Arabic-Indic
# digits) and surrounding whitespace; a gold score written so is a defect of the file, not a number.
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)",
                      re.ASCII | re.IGNORECASE)


def parse_number(value: Any) -> float | None:
    """A float from a JSON/Excel number or a plain decimal string; None for anything else (bools included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer beyond float's range (a JSON number of 309+ digits): infinite
            return math.inf if value > 0 else -math.inf
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


def to_label(value: Any) -> str | int:
    """A class label: a non-empty text as written, or a whole number (a `values` map's target); labels are
    ordered by sorting (numbers numerically), as MTEB's sorted integer labels."""
    if isinstance(value, bool):
        raise FieldError(f"expected a class label (text or whole number), got {value!r}")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip():
        return value
    raise FieldError(f"expected a class label (text or whole number), got {_shown(value)!r}")


def to_label_set(value: Any) -> list[str | int]:
    """An item's labels in a multilabel task: a list of class labels (as `to_label`), each once; empty allowed
    (an item of none of the classes, as MTEB's multilabel tasks hold)."""
    if not isinstance(value, list):
        raise FieldError(f"expected a list of class labels, got {_shown(value)!r}")
    labels = [to_label(label) for label in value]
    if len(set(labels)) != len(labels):
        raise FieldError(f"a label is given twice in {labels!r}")
    return labels


def to_label_path(value: Any) -> str | int | list[str | int]:
    """A hierarchical class label, coarsest level first: a non-empty list of class labels (as `to_label`), or a
    plain label, kept as it is (a path of one level; so data of plain labels is read, and fingerprinted, as
    before)."""
    if not isinstance(value, list):
        return to_label(value)
    if not value:
        raise FieldError("expected a label path (a non-empty list of class labels), got an empty list")
    bad = next((label for label in value if isinstance(label, (list, dict))), None)
    if bad is not None:
        raise FieldError(f"a label path holds class labels, not {type(bad).__name__}s: {_shown(value)!r}")
    return [to_label(label) for label in value]


def to_numbers(value: Any) -> list[float]:
    """A non-empty list of finite numbers (several scores of one item, e.g. one per machine summary)."""
    if not isinstance(value, list) or not value:
        raise FieldError(f"expected a non-empty list of numbers, got {_shown(value)!r}")
    return [to_number(number) for number in value]


def to_binary(value: Any) -> int:
    """A binary label, 0 or 1 (a `values` map turns NLI labels into it: entailment 1, others 0)."""
    number = parse_number(value)
    if number not in (0.0, 1.0):
        raise FieldError(f"expected a binary label 0 or 1, got {_shown(value)!r}")
    return int(number)


for _kind, _converter in (("text", to_text), ("number", to_number), ("texts", to_texts), ("labels", to_labels),
                          ("label", to_label), ("binary", to_binary), ("numbers", to_numbers),
                          ("label_set", to_label_set), ("label_path", to_label_path)):
    FIELD_KINDS.register(_kind, _converter)
