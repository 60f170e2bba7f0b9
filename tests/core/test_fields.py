"""Converters of item fields at the edge of float's range: an integer of 309 to 4,300 digits (JSON holds any) was
an OverflowError traceback in the number converters and in the label statistics (a bad-input hunt); it is now an
infinite number, refused as one in one line, and a label compared as the integer it is."""

from __future__ import annotations

import pytest

from specrun.core.errors import FieldError
from specrun.core.fields import parse_number, to_number
from specrun.results.statistics import field_statistics

HUGE = 10**400


@pytest.mark.parametrize("value", [HUGE, -HUGE])
def test_an_integer_beyond_float_is_an_infinite_number_refused_as_one(value: int) -> None:
    assert parse_number(value) == (float("inf") if value > 0 else float("-inf"))
    with pytest.raises(FieldError, match="expected a finite number"):
        to_number(value)


def test_a_label_beyond_float_is_counted_in_order_as_the_integer_it_is() -> None:
    stats = field_statistics("label", [HUGE, 1, "b", HUGE, 2.5, "a"])
    assert list(stats.labels or {}) == [str(label) for label in (1, 2.5, HUGE, "a", "b")]
