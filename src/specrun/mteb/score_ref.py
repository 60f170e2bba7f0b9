"""A spec metric's counterpart in MTEB's result files: where its published number is read and where an export
writes it. Its own module, as the task metadata's: the spec model imports it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from specrun.core.types import Strict
from specrun.mteb.vocabulary import LANGUAGE_SCRIPT_PATTERN

MAX_NAME = 64  # as the spec's names (spec.model.MAX_NAME): a task name is a file name
SPEC_NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"  # the spec's own names (spec.model.NAME_PATTERN)
MTEB_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"  # an MTEB task name is a file name in its results repository
MTEB_SCORE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$"
MTEB_PATTERN_MEANINGS = {MTEB_NAME_PATTERN: "a name of letters, digits, '_', '.', '-' (as MTEB spells it)",
                         MTEB_SCORE_PATTERN: "an MTEB score key of letters, digits, '_', '.', '@', '-'"}
MtebName = Annotated[str, Field(pattern=MTEB_NAME_PATTERN, max_length=MAX_NAME)]
MtebLanguage = Annotated[str, Field(pattern=LANGUAGE_SCRIPT_PATTERN)]  # ISO 639-3 and script, e.g. eng-Latn


class MtebRef(Strict):
    """Where this metric's number sits in MTEB's result files (`<org>__<model>/<revision>/<task>.json`, then
    `scores.<split>`, the entry of `hf_subset` `subset`, key `score`): read for published rows, written by
    `export --format mteb`."""

    task: MtebName = Field(description="MTEB's task name as its result files spell it (the file name, less .json).")
    split: MtebName | None = Field(None, description=(
        "MTEB's split of the task, e.g. test; or `splits` where the metric stands for MTEB's score on several."))
    splits: dict[Annotated[str, Field(pattern=SPEC_NAME_PATTERN, max_length=MAX_NAME)], MtebName] | None = Field(
        None, min_length=1, description=(
            "The spec's evaluated split -> MTEB's split, for a metric whose score on each of those splits is MTEB's "
            "on its counterpart (a task evaluated on several splits: one metric, not a copy per split)."))
    subset: MtebName = Field("default", description="MTEB's hf_subset, e.g. default, jpn-eng.")
    score: Annotated[str, Field(pattern=MTEB_SCORE_PATTERN, max_length=MAX_NAME)] = Field(
        description="The key of the score in that entry, e.g. cosine_spearman, accuracy, f1.")
    main: bool = Field(False, description="This score is the task's `main_score` in MTEB (written so on export).")
    languages: list[MtebLanguage] = Field(default_factory=list, description=(
        "The subset's languages as MTEB writes them (ISO 639-3 and script, e.g. eng-Latn), written on export: "
        "mteb's get_score selects entries by them."))
    caveat: Annotated[str, Field(min_length=1, max_length=1000)] | None = Field(None, description=(
        "Why ours may differ from MTEB's published number (MTEB's copy of the data is not the one read here, say); "
        "check-published shows it beside the difference."))
    spec_split: Annotated[str, Field(pattern=SPEC_NAME_PATTERN, max_length=MAX_NAME)] | None = Field(None, description=(
        "The spec's evaluated split that is MTEB's `split`; needed only when the spec evaluates several."))

    @model_validator(mode="after")
    def _one_split_form(self) -> MtebRef:
        if (self.split is None) == (self.splits is None):
            raise ValueError("name MTEB's split (`split: test`) or, for several, `splits: {SPEC_SPLIT: MTEB_SPLIT}`; "
                             "not both, not neither")
        if self.splits is not None and self.spec_split is not None:
            raise ValueError("`spec_split` goes with `split`; `splits` names each spec split itself")
        return self

    def cells(self, evaluated: list[str]) -> list[tuple[str, MtebRef]]:
        """Each (spec split, counterpart on MTEB's split of it) this names among the evaluated splits, `split` set
        in each: one for `split` (its `spec_split`, or the only evaluated split), one per entry of `splits`."""
        if self.splits is not None:
            return [(ours, self.model_copy(update={"split": theirs, "splits": None}))
                    for ours, theirs in self.splits.items()]
        own = self.spec_split or (evaluated[0] if len(evaluated) == 1 else None)
        return [(own, self)] if own is not None else []
