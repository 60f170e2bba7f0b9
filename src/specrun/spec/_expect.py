"""A split's expected statistics (`splits.NAME.expect`), as a reference states them: MTEB's descriptive
statistics for an imported task. results.identity compares a run's own with them."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from specrun.core.types import Strict

FieldName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=64)]  # an item field's name


class ExpectedField(Strict):
    """What one item field of a split is expected to hold (each key optional)."""

    unique: Annotated[int, Field(ge=0)] | None = Field(None, description="Distinct texts of the field.")
    characters: Annotated[int, Field(ge=0)] | None = Field(
        None, description="Characters (code points) of the field's texts, all added up.")
    label_counts: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, description="Items per label, sorted from most to fewest (label names may be encoded otherwise).")


class Expected(Strict):
    """A split's statistics as a reference states them (MTEB's descriptive statistics, for an imported task): a
    run compares its own and says where they differ, which tells a copy of other data from the reference's, as
    no score can."""

    source: str = Field(min_length=1, description="Who states these numbers (MTEB's descriptive statistics).")
    n: Annotated[int, Field(ge=0)] | None = Field(None, description="Items of the split.")
    fields: dict[FieldName, ExpectedField] = Field(default_factory=dict, description="Item field -> what it holds.")
