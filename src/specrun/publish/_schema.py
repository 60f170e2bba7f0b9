"""The hub's formats, not ours: task and metric ids, `eval.yaml` and `.eval_results` entries as pydantic models of
hub-docs `docs/hub/eval-results.md` (commit 064c75486afa) and `eval_results.yaml` (commit 259eaee416ae),
huggingface_hub's `EvalResultEntry` (`_eval_results.py`, 2.4.0), and the evaluation frameworks of huggingface.js
`packages/tasks/src/eval.ts` (kept as data in `hubdata/evaluation_frameworks.json` with its commit). What the hub
would reject is a problem of a HubCheck; what it would only misrepresent, a warning."""

from __future__ import annotations

import datetime
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator

from specrun.core import registry
from specrun.core.errors import PublishError
from specrun.core.types import Strict
from specrun.spec import Spec


def hub_task(kind: str) -> str:
    """The hub's task type of a protocol kind (its info says it; feature-extraction for a kind not registered
    here, as in results written with a plugin that is not installed)."""
    entry = registry.PROTOCOLS.get(kind)
    return entry.info.hub_task if entry is not None else "feature-extraction"


def hub_task_id(kind: str) -> str | None:
    """The hub's subtask (dataset card `task_ids`, huggingface.js packages/tasks/src/pipelines.ts) of a kind."""
    entry = registry.PROTOCOLS.get(kind)
    return entry.info.hub_task_id or None if entry is not None else None


def hub_metric(name: str) -> str:
    """The hub's metric type of a registered metric (its `hub_id`), else the metric's own name."""
    entry = registry.METRICS.get(name)
    return entry.hub_id or name if entry is not None else name


EVALUATION_FRAMEWORK = "specrun"


CONFIG = "default"  # the one config of a benchmark repo: hub-docs says "set to default if there's only one"


HUB_SPLIT = re.compile(r"^\w+(\.\w+)*$")  # what `datasets` accepts as a split name


REVISION = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class HubCheck:
    """What the hub would make of the files: `refusals` it rejects (push refuses them), `warnings` it accepts but
    shows wrongly or incompletely (said in the dry run and before a push); `licence`: why specrun itself refuses
    them (an unconfirmed licence; a dry run shows the files, then ends in this line)."""

    refusals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    licence: str | None = None

    def add(self, other: HubCheck) -> HubCheck:
        self.refusals += other.refusals
        self.warnings += other.warnings
        self.licence = self.licence or other.licence
        return self


def task_id(split: str, metric_id: str) -> str:
    return f"{split}-{metric_id}"


def task_ids(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(split, metric id) -> hub task id, refusing two pairs that would share one ('a' + 'b-c' and 'a-b' + 'c'
    are both 'a-b-c'): the same check and message for .eval_results and eval.yaml, so the two always agree."""
    ids: dict[tuple[str, str], str] = {}
    owner: dict[str, tuple[str, str]] = {}
    for pair in pairs:
        name = task_id(*pair)
        other = owner.setdefault(name, pair)
        if other != pair:
            raise PublishError(f"hub task id {name!r} would name both split {other[0]!r} with metric {other[1]!r} "
                               f"and split {pair[0]!r} with metric {pair[1]!r}; rename a split or metric so that "
                               "'<split>-<metric>' differs; nothing was published")
        ids[pair] = name
    return ids


def spec_task_ids(spec: Spec) -> dict[tuple[str, str], str]:
    """The benchmark's task ids: every evaluated split with every metric."""
    return task_ids((split, metric_id) for split in spec.evaluated_splits for metric_id in spec.metrics)


class EvalTask(Strict):
    """One task of eval.yaml: hub-docs docs/hub/eval-results.md keeps to these three keys."""

    id: str = Field(min_length=1, description="The task id .eval_results entries name as dataset.task_id.")
    config: str = Field(min_length=1, description="The HF dataset config ('default' if there's only one).")
    split: str = Field(pattern=HUB_SPLIT.pattern, description="The HF dataset split.")


class EvalYaml(Strict):
    """A benchmark repo's eval.yaml, as hub-docs docs/hub/eval-results.md documents it."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    evaluation_framework: str = Field(min_length=1, description="One of huggingface.js EVALUATION_FRAMEWORKS.")
    tasks: list[EvalTask] = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _unique_ids(cls, tasks: list[EvalTask]) -> list[EvalTask]:
        ids = [task.id for task in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("task ids must be unique")
        return tasks


REPO_ID_PATTERN = r"^[A-Za-z0-9][\w.-]*/[\w.-]+$"
RepoId = Field(pattern=REPO_ID_PATTERN, description="A hub repo id, owner/name.")


class EvalResultDataset(Strict):
    id: str = RepoId
    task_id: str = Field(min_length=1)
    config: str | None = None
    split: str | None = None
    revision: str | None = Field(None, pattern=REVISION.pattern, description="The benchmark repo's commit.")


class EvalResultSource(Strict):
    url: str = Field(pattern=r"^https?://\S+$", description="Required whenever source is given.")
    name: str | None = None
    user: str | None = None
    org: str | None = None


class EvalResultItem(Strict):
    """One entry of `.eval_results/*.yaml` (hub-docs eval-results.md and eval_results.yaml; huggingface_hub
    EvalResultEntry)."""

    dataset: EvalResultDataset
    value: float
    verifyToken: str | None = None
    date: str | None = None
    source: EvalResultSource | None = None
    evaluation_framework: str | None = None
    notes: str | None = None

    @field_validator("date")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.date.fromisoformat(value) if len(value) == 10 else datetime.datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"date {value!r} is not an ISO-8601 date or datetime") from None
        return value


def _problems(error: ValidationError, what: str) -> list[str]:
    return [f"{what}: {'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in error.errors()]


@cache
def frameworks() -> dict[str, Any]:
    """The hub's list of evaluation frameworks, with where it was copied from."""
    text = resources.files("specrun").joinpath("hubdata/evaluation_frameworks.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def framework_check(name: str) -> HubCheck:
    data = frameworks()
    if name in data["frameworks"]:
        return HubCheck()
    source = data["source"]
    return HubCheck(refusals=[
        f"eval.yaml: evaluation_framework {name!r} is not one the hub accepts ({source['repository']} "
        f"{source['path']} at {source['commit'][:12]} lists {', '.join(sorted(data['frameworks']))}), so the hub "
        f"rejects this eval.yaml at push time; registering takes {data['registering']}"])


def check_eval_yaml(text: str) -> HubCheck:
    """eval.yaml against the documented schema and the framework list."""
    try:
        document = EvalYaml.model_validate(yaml.safe_load(text))
    except ValidationError as exc:
        return HubCheck(refusals=_problems(exc, "eval.yaml"))
    return framework_check(document.evaluation_framework)


def check_eval_results(text: str, eval_yaml_ids: Iterable[str] | None = None) -> HubCheck:
    """`.eval_results/*.yaml` against the documented schema; with the benchmark's task ids, every entry's too."""
    data = yaml.safe_load(text)
    if not isinstance(data, list) or not data:
        return HubCheck(refusals=[".eval_results: expected a non-empty list of entries"])
    check = HubCheck()
    known = set(eval_yaml_ids) if eval_yaml_ids is not None else None
    for index, entry in enumerate(data):
        try:
            item = EvalResultItem.model_validate(entry)
        except ValidationError as exc:
            check.refusals += _problems(exc, f".eval_results[{index}]")
            continue
        if known is not None and item.dataset.task_id not in known:
            check.refusals.append(f".eval_results[{index}]: task_id {item.dataset.task_id!r} is not a task of the "
                                  "benchmark's eval.yaml")
    return check


def direction_check(directions: Mapping[str, str]) -> HubCheck:
    """The hub has no direction field and ranks higher values first: a lower-is-better metric would be ranked
    upside down on the leaderboard."""
    lower = sorted(metric for metric, direction in directions.items() if direction == "lower")
    if not lower:
        return HubCheck()
    return HubCheck(refusals=[f"metric(s) {', '.join(lower)} are lower-is-better; the hub has no direction field "
                              "and ranks higher values first, so its leaderboard would rank them upside down"])


def split_check(splits: Iterable[str]) -> HubCheck:
    bad = [split for split in splits if not HUB_SPLIT.fullmatch(split)]
    if not bad:
        return HubCheck()
    return HubCheck(refusals=[f"split name(s) {', '.join(bad)} are not hub split names (letters, digits, '_', "
                              "'.'); load_dataset cannot name them"])


def hub_url(path: str) -> str:
    """A page on the hub (HF_ENDPOINT when set, else huggingface.co)."""
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    return f"{endpoint}/{path}"


def check_benchmark(benchmark: str) -> str:
    """--benchmark as the hub names a dataset (owner/name): refused here, before anything is written."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:  # the hub's own rule besides the pattern: no '--' or '..', no '-' or '.' at either end, 96 characters
        valid = bool(re.fullmatch(REPO_ID_PATTERN, benchmark)) and validate_repo_id(benchmark) is None
    except HFValidationError:
        valid = False
    if not valid or benchmark.split("/")[1].startswith(("-", ".")) or benchmark.endswith(".git"):
        raise PublishError(f"--benchmark {benchmark!r} is not a hub dataset id (OWNER/DATASET: letters, digits, "
                           "'_', '.', '-'; no '--' or '..', none of '-' '.' at either end, at most 96 "
                           "characters); nothing was written")
    return benchmark


def check_revision(revision: str | None) -> str | None:
    if revision is not None and not REVISION.fullmatch(revision):
        raise PublishError(f"--benchmark-revision {revision!r} is not a full 40-hex commit of the benchmark repo")
    return revision
