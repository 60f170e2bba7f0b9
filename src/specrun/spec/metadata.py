"""The spec's optional `metadata`: what a task is about, in the words of MTEB's TaskMetadata, and the filters
`specrun list` applies with it (`filters`). Every key is optional: what is not known is left out, never guessed."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from specrun.core.types import Strict
from specrun.mteb.vocabulary import (
    ANNOTATIONS_CREATORS,
    DOMAINS,
    LANGUAGE_SCRIPT_MEANING,
    LANGUAGE_SCRIPT_PATTERN,
    SAMPLE_CREATION,
)

DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
PATTERN_MEANINGS = {LANGUAGE_SCRIPT_PATTERN: LANGUAGE_SCRIPT_MEANING,
                    DATE_PATTERN: "a date YYYY-MM-DD"}  # how an error names what was expected

LanguageScript = Annotated[str, Field(pattern=LANGUAGE_SCRIPT_PATTERN)]
IsoDate = Annotated[str, Field(pattern=DATE_PATTERN)]


class Metadata(Strict):
    """What the task is about, in MTEB's words; every key optional: what is not known is left out, never
    guessed. Lists and filters (`specrun list --language --domain`) read it."""

    languages: list[LanguageScript] | None = Field(
        None, min_length=1, description="The data's languages as ISO 639-3 plus script, e.g. [jpn-Jpan].")
    domains: list[Literal[DOMAINS]] | None = Field(  # type: ignore[valid-type]
        None, min_length=1, description="MTEB's domains of the texts, e.g. [Medical, Academic].")
    annotations_creators: Literal[ANNOTATIONS_CREATORS] | None = Field(  # type: ignore[valid-type]
        None, description="Who made the gold labels (MTEB's annotator types).")
    sample_creation: Literal[SAMPLE_CREATION] | None = Field(  # type: ignore[valid-type]
        None, description="How the texts came to be (MTEB's sample creation methods).")
    date: tuple[IsoDate, IsoDate] | None = Field(
        None, description="When the texts were written or collected: [from, to], YYYY-MM-DD.")
    reference: Annotated[str, Field(pattern=r"^https?://\S+$")] | None = Field(
        None, description="A URL describing the data (its paper or page).")

    @field_validator("date", mode="before")
    @classmethod
    def _two_dates(cls, value: Any) -> Any:
        if isinstance(value, list) and len(value) != 2:
            raise ValueError(f"date must be two dates [from, to], got {len(value)}")
        return value

    @field_validator("date")
    @classmethod
    def _real_dates_in_order(cls, value: tuple[str, str] | None) -> tuple[str, str] | None:
        if value is None:
            return value
        try:
            start, end = (datetime.date.fromisoformat(day) for day in value)
        except ValueError as exc:
            raise ValueError(f"not a calendar date: {exc}") from None
        if start > end:
            raise ValueError(f"date must be [from, to] with from <= to, got {list(value)}")
        return value

    @property
    def language_codes(self) -> list[str]:
        """The ISO 639-3 codes alone (jpn of jpn-Jpan)."""
        return [code.split("-")[0] for code in self.languages or []]
