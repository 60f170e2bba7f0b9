"""MTEB's result files, read: the results repository's layout `<org>__<model>/<revision>/<TaskName>.json`, each file
an MTEB TaskResult (mteb 1.11 and later, 1.x and 2.x alike: `task_name`, `dataset_revision`, `mteb_version`,
`scores.<split>` = one entry per `hf_subset`; 2.x adds `date`, `evaluation_phases` and a per-entry
`mteb_version`); a file of mteb before 1.11 (no `scores`, `mteb_dataset_name`) is converted as mteb's own loader
converts it (`older`). Every read is bounded and validated, and a name becomes a path only once checked: the folder
may be a whole results repository that anyone can edit."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from specrun.core.errors import PublishedError
from specrun.core.files import read_regular_file
from specrun.mteb.results._older import convert_before_1_11, is_before_1_11
from specrun.mteb.results.meta import PublishedModelMeta

PUBLISHED_LIMIT = 8 << 20  # bytes: a task file is a few kB (a multilingual one some hundred); far beyond is not one
NO_REVISION = "no_revision_available"  # MTEB's folder for a model run without a known revision
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,254}$")  # one path component: no '/', no leading '.'


class ScoreEntry(BaseModel):
    """One `hf_subset` of one split: its identity, then the task type's measures (any keys, as MTEB writes)."""

    model_config = ConfigDict(extra="allow")

    hf_subset: str
    languages: list[str] = Field(default_factory=list)
    main_score: float | None = None


class TaskFile(BaseModel):
    """The fields of MTEB's TaskResult that a published row needs; other keys (kg_co2_emissions, date,
    evaluation_phases, a writer's own extra block) are kept aside, as MTEB's loader ignores unknown ones."""

    model_config = ConfigDict(extra="allow")

    task_name: str
    dataset_revision: str
    mteb_version: str | None
    scores: dict[str, list[ScoreEntry]]
    evaluation_time: float | None = None

    _converted: bool = PrivateAttr(False)

    @property
    def layout(self) -> str:
        """Which layout the file was written in: said beside a published row."""
        return "before 1.11, converted as mteb does" if self._converted else "1.11 and later"


@dataclass(frozen=True)
class PublishedValue:
    """One published number: where it was read and what it is (it has no interval: MTEB publishes none)."""

    model: str  # org/model, as the folder names it
    revision: str
    task: str
    split: str
    subset: str
    score: str
    value: float
    mteb_version: str | None
    file: Path
    dataset_revision: str = ""
    layout: str = "1.11 and later"
    chosen: str = ""  # which revision was taken and why (index.choose)
    meta: PublishedModelMeta | None = None  # the revision's model_meta.json, where it has a valid one


def model_folder_name(model: str) -> str:
    """`org/model` -> `org__model`, the repository's folder name; refused unless it is a plain path component."""
    folder = model.replace("/", "__")
    if not _PART.fullmatch(folder):
        raise PublishedError(f"model name {model!r} does not make a plain folder name")
    return folder


def checked_part(text: str, what: str) -> str:
    """A name (task, revision) about to become a path component, refused when it is not a plain one."""
    if not _PART.fullmatch(text):
        raise PublishedError(f"{what} {text!r} is not a plain file name (letters, digits, '_', '.', '@', '+', '-')")
    return text


def read_task_file(path: Path) -> TaskFile:
    """A task file, bounded and validated; one PublishedError line naming the file and key otherwise. A file
    without `scores` whose mteb version is below 1.11 or absent is converted first (`older`), as mteb's
    `TaskResult.from_disk` does; a file with `scores` that says it was written before 1.11 holds both layouts'
    marks and is refused."""
    raw = read_regular_file(path, PUBLISHED_LIMIT, "published result file", error=PublishedError)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise PublishedError(f"not an MTEB result file: not JSON ({str(exc)[:80]})", file=str(path)) from None
    if not isinstance(data, dict):
        raise PublishedError("not an MTEB result file: not a JSON object", file=str(path))
    converted = "scores" not in data and is_before_1_11(data)
    if "scores" in data and is_before_1_11(data) and data.get("mteb_version") is not None:
        raise PublishedError(f"mteb {data['mteb_version']} wrote the layout before 1.11, which has no `scores`; "
                             "this file has both", file=str(path), key="mteb_version")
    try:
        task_file = TaskFile.model_validate(convert_before_1_11(data) if converted else data)
    except ValueError as exc:
        if not isinstance(exc, ValidationError):
            raise PublishedError(f"not an MTEB result file: {exc}", file=str(path)) from None
        error = exc.errors(include_url=False)[0]
        key = ".".join(str(part) for part in error["loc"]) or None
        raise PublishedError(f"not an MTEB result file: {error['msg']}", file=str(path), key=key) from None
    task_file._converted = converted
    return task_file


def score_of(task_file: TaskFile, path: Path, split: str, subset: str, score: str) -> float | str:
    """The number at `scores.<split>`, entry `subset`, key `score`; or why there is none (a line, not an error,
    naming the file by its model, revision and task: no local path)."""
    shown = "/".join(path.parts[-3:])
    entries = task_file.scores.get(split)
    if entries is None:
        return f"{shown}: no split {split!r} (it has: {', '.join(task_file.scores) or 'none'})"
    found = [entry for entry in entries if entry.hf_subset == subset]
    if not found:
        return f"{shown}: split {split!r} has no hf_subset {subset!r}"
    if len(found) > 1:
        raise PublishedError(f"split {split!r} holds hf_subset {subset!r} twice", file=str(path),
                             key=f"scores.{split}")
    value: Any = getattr(found[0], score, None) if score == "main_score" else (found[0].model_extra or {}).get(score)
    if value is None:
        nested = sorted(k for k, v in (found[0].model_extra or {}).items() if isinstance(v, dict))
        return f"{shown}: split {split!r}, hf_subset {subset!r} has no score {score!r}" + (
            f" (it nests its scores under {', '.join(nested)}; mteb's loader reads no {score!r} there either)"
            if nested else "")
    number = _finite(value)
    if number is None:
        shown_value = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:20]}... ({len(repr(value))} chars)"
        raise PublishedError(f"score {score!r} is {shown_value}, not a finite number", file=str(path),
                             key=f"scores.{split}.{subset}.{score}")
    return number


def _finite(value: Any) -> float | None:
    """The value as a finite float, or None: a JSON integer too large for a float (400 digits) is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


__all__ = ["NO_REVISION", "PUBLISHED_LIMIT", "PublishedValue", "ScoreEntry", "TaskFile", "checked_part",
           "model_folder_name", "read_task_file", "score_of"]
