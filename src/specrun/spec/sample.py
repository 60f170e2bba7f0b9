"""A split's row steps beyond `explode` and `where`, their own module beside the spec model (which imports it):
`sample`, the seeded draw MTEB's stratified_subsampling (or a plain train_test_split) makes; `split_text`, a text
cell split into a list (MTEB's `map` of a label splitter); `drop_rare`, rows of a value held by too few rows (MTEB's
solo labels dropped). The data stage (specrun.data.sample) applies them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from specrun.core.types import Strict

__all__ = ["DropRare", "RowSteps", "Sample", "SplitText"]


def _visible(value: str) -> str:
    if not value.strip():
        raise ValueError("must hold text, not only white space")
    return value


Count = Annotated[int, Field(strict=True)]  # a YAML `true` is not the number 1
Text = Annotated[str, Field(min_length=1), AfterValidator(_visible)]


class Sample(Strict):
    """A split's rows cut to a seeded sample, as MTEB's stratified_subsampling (or a task's own
    train_test_split) cuts them."""

    n: Count = Field(ge=1, description="Rows kept; mteb_stratified keeps a split of n rows or fewer whole, in its "
                                       "order (train_test_split refuses it, as datasets does).")
    stratify: Text | None = Field(None, description="mteb_stratified: the column whose values are the strata "
                                                    "(MTEB: the label column).")
    seed: Count = Field(ge=0, description="The seed of the draw (MTEB: the task seed, 42).")
    method: Literal["mteb_stratified", "train_test_split"] = Field(
        "mteb_stratified", description="mteb_stratified: the column class-encoded as MTEB encodes it, then "
                                       "datasets' train_test_split(test_size=n, seed, stratify_by_column); its test "
                                       "part, in its order. train_test_split: datasets' train_test_split(test_size=n, "
                                       "seed), not stratified; its test part, in its order.")

    @model_validator(mode="after")
    def _strata(self) -> Sample:
        if (self.stratify is None) != (self.method == "train_test_split"):
            raise ValueError("method mteb_stratified needs `stratify: COLUMN`; train_test_split takes none")
        return self


class SplitText(Strict):
    """A column's text split into a list, as `text.split(sep)[:max_parts]`."""

    sep: Annotated[str, Field(min_length=1)] = Field(description="The separator (Python's str.split).")
    max_parts: Count | None = Field(None, ge=1, description="Keep the first max_parts parts. Default: all.")


class DropRare(Strict):
    """Rows whose value is held by too few rows of the split, dropped."""

    column: Text = Field(description="The column counted (MTEB: the label column).")
    min_count: Count = Field(2, ge=2, description="Keep a row whose value at least this many rows of the split "
                                                  "hold (MTEB drops the labels of one row: 2).")


class RowSteps(Strict):
    """The split's row steps in this module (Split's base): applied after `explode`, in the order listed, then
    `where`, `drop_rare` and `sample`."""

    split_text: dict[Text, SplitText] | None = Field(
        None, description="Column -> how its text cells become lists (a label path: `sep: '.'`), after `explode`; "
                          "a cell that is not text is refused.")
    drop_rare: DropRare | None = Field(
        None, description="Drop the rows whose value in `column` fewer than `min_count` rows of the split hold "
                          "(after `where`, before `sample`), as MTEB's clustering tasks drop a label of one "
                          "document.")
