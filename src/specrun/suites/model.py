"""A suite file: a benchmark of benchmarks. Its members are specs (a split and a metric of each), read and checked
here; what it aggregates is named, never inferred. A file is a suite when its top level has `members` (no spec
has that key)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from specrun.core.errors import SpecrunError, SuiteError
from specrun.core.registry import METRICS, PROTOCOLS
from specrun.core.types import Strict
from specrun.spec import LoadedSpec, load_spec, subset_specs
from specrun.spec.errors import first_error
from specrun.yamlsafe import LocatedYaml, read_yaml

Aggregate = Literal["mean_task", "mean_task_type", "weighted_mean"]
SUITE_SEED = 20261203  # the default seed of a suite's joint resamples
# A weight is a finite number (not a YAML `true` or a quoted "2") within twelve orders of magnitude: a weighted
# mean of at most a few hundred members then neither overflows nor loses a member to a subnormal product.
Weight = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=1e-6, le=1e6)]
Resamples = Annotated[int, Field(strict=True, ge=100, le=100_000)]  # as a spec's `uncertainty.resamples`


class Member(Strict):
    spec: str = Field(description="The member's spec file, relative to the suite file's folder.")
    metric: str = Field(description="The metric id of the spec that is the member's main score.")
    split: str | None = Field(None, description="The evaluated split scored; may be left out when the spec "
                                                "evaluates one split.")
    subset: str | None = Field(None, description="The subset of a spec with `subsets` (required there).")
    weight: Weight = Field(1.0, description="The member's weight in `weighted_mean`: a number from 1e-6 to 1e6.")
    optional: bool = Field(False, description="A member whose data may be missing here: the suite then runs "
                                              "without it and marks every aggregate partial.")


class SuiteUncertainty(Strict):
    resamples: Resamples = Field(1000, description="Joint resamples of the members' units (100 to 100,000).")
    confidence: float = Field(0.95, gt=0, lt=1)
    seed: int = Field(SUITE_SEED, ge=0, description="Member i's resamples are seeded by [seed, i]: independent.")


class Suite(Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    title: str
    version: str
    description: str
    citation: str | None = None
    members: list[Member] = Field(min_length=1)
    aggregates: list[Aggregate] = Field(default_factory=lambda: ["mean_task"], min_length=1)
    uncertainty: SuiteUncertainty = Field(default_factory=SuiteUncertainty)


@dataclass(frozen=True)
class ResolvedMember:
    """A member with its spec read and checked: the split, metric, task type and direction it stands for."""

    index: int
    member: Member
    loaded: LoadedSpec
    split: str
    task_type: str
    direction: str

    @property
    def spec_id(self) -> str:
        return self.loaded.spec.id

    @property
    def label(self) -> str:
        return f"{self.spec_id} {self.split} {self.member.metric}"


@dataclass(frozen=True)
class LoadedSuite:
    suite: Suite
    path: Path
    sha256: str
    located: LocatedYaml
    members: list[ResolvedMember]

    def error(self, key: tuple[str | int, ...], message: str) -> SuiteError:
        at = self.located.error(key, message)
        return SuiteError(at.message, file=at.file, line=at.line, key=at.key)


def is_suite_file(path: Path | str) -> bool:
    """A YAML file whose top level holds `members`: what `specrun FILE` runs as a suite."""
    try:
        located = read_yaml(Path(path), str(path))
    except SpecrunError:
        return False
    return isinstance(located.data, dict) and "members" in located.data


def load_suite(path: Path | str) -> LoadedSuite:
    """The suite file validated, each member's spec read (its own checks), and the members checked against
    their specs: the split is evaluated, the metric is the spec's, all members point one way."""
    path = Path(path)
    located = read_yaml(path, str(path), "a suite")
    if not isinstance(located.data, dict):
        raise SuiteError("expected a mapping of suite keys at the top level", file=located.file, line=1)
    try:
        suite = Suite.model_validate(located.data)
    except ValidationError as exc:
        error = first_error(exc, located, Suite)
        raise SuiteError(error.message, file=error.file, line=error.line, key=error.key) from None
    loaded = LoadedSuite(suite=suite, path=path, sha256=located.sha256, located=located, members=[])
    members = [_resolve(loaded, index, member) for index, member in enumerate(suite.members)]
    _check_members(loaded, members)
    return LoadedSuite(suite=suite, path=path, sha256=located.sha256, located=located, members=members)


def _resolve(loaded: LoadedSuite, index: int, member: Member) -> ResolvedMember:
    key = ("members", index)
    if Path(member.spec).is_absolute():
        raise loaded.error((*key, "spec"), f"{member.spec}: an absolute path; give the path relative to the "
                                           "suite file's folder")
    spec_path = loaded.path.parent / member.spec
    if not spec_path.is_file():
        raise loaded.error((*key, "spec"), f"{member.spec} is not a file (read relative to the suite's folder "
                                           f"{loaded.path.parent})")
    spec = load_spec(spec_path)
    subsets = spec.spec.subsets or {}
    if subsets and member.subset not in subsets:
        raise loaded.error((*key, "subset") if member.subset else key,
                           f"{spec.spec.id} has subsets ({', '.join(subsets)}); name the member's `subset`"
                           + (f" (no subset {member.subset!r})" if member.subset else ""))
    if member.subset and not subsets:
        raise loaded.error((*key, "subset"), f"{spec.spec.id} declares no subsets")
    if member.subset:
        spec = subset_specs(spec, [member.subset])[0]
    evaluated = spec.spec.evaluated_splits
    split = member.split
    if split is None:
        if len(evaluated) != 1:
            raise loaded.error(key, f"{spec.spec.id} evaluates {len(evaluated)} splits ({', '.join(evaluated)}); "
                                    "name the member's `split`")
        split = evaluated[0]
    elif split not in evaluated:
        raise loaded.error((*key, "split"), f"{spec.spec.id} does not evaluate split {split!r}; it evaluates: "
                                            f"{', '.join(evaluated)}")
    metric = spec.spec.metrics.get(member.metric)
    if metric is None:
        raise loaded.error((*key, "metric"), f"{spec.spec.id} has no metric {member.metric!r}; its metrics: "
                                             f"{', '.join(spec.spec.metrics)}")
    kind = spec.spec.protocols[metric.protocol].kind
    return ResolvedMember(index=index, member=member, loaded=spec, split=split,
                          task_type=PROTOCOLS[kind].info.prompt_task, direction=METRICS[metric.metric].direction)


def _check_members(loaded: LoadedSuite, members: list[ResolvedMember]) -> None:
    seen: dict[tuple[str, str, str], int] = {}
    files: dict[str, ResolvedMember] = {}  # spec id -> its first member: one id is one file (one results folder)
    for m in members:
        other = files.setdefault(m.spec_id, m)
        if _spec_file(loaded, other) != _spec_file(loaded, m):
            raise loaded.error(("members", m.index, "spec"),
                               f"{m.member.spec} has the id {m.spec_id!r}, as member {other.index}'s "
                               f"{other.member.spec} has: their runs would write one folder; give them distinct ids")
        where = (m.spec_id, m.split, m.member.metric)
        if where in seen:
            raise loaded.error(("members", m.index), f"the same score as member {seen[where]} ({m.label})")
        seen[where] = m.index
        first = members[0]
        if m.direction != first.direction:
            raise loaded.error(("members", m.index, "metric"),
                               f"{m.member.metric} is {m.direction} is better, {first.member.metric} (member 0) "
                               f"{first.direction}: a mean of the two means nothing")
    if all(m.member.optional for m in members):
        raise loaded.error(("members",), "every member is optional; at least one must be required")


def _spec_file(loaded: LoadedSuite, m: ResolvedMember) -> Path:
    """The member's spec file however it is named (a relative path, a link)."""
    return (loaded.path.parent / m.member.spec).resolve()
