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
from specrun.core.types import Aggregate, Strict
from specrun.spec import LoadedSpec, load_spec, subset_specs
from specrun.spec.errors import first_error
from specrun.yamlsafe import LocatedYaml, read_yaml

SUITE_SEED = 20261203  # the default seed of a suite's joint resamples
# A weight is a finite number (not a YAML `true` or a quoted "2") within twelve orders of magnitude: a weighted
# mean of at most a few hundred members then neither overflows nor loses a member to a subnormal product.
Weight = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=1e-6, le=1e6)]
Resamples = Annotated[int, Field(strict=True, ge=100, le=100_000)]  # as a spec's `uncertainty.resamples`


class Member(Strict):
    spec: str = Field(description="The member's spec file, relative to the suite file's folder.")
    metric: str | dict[str, str] = Field(description="The metric id of the spec that is the member's main score; "
                                                     "with `splits`, one id for every split or a mapping split -> "
                                                     "metric id (a spec names its metrics per split).")
    split: str | None = Field(None, description="The evaluated split scored; may be left out when the spec "
                                                "evaluates one split.")
    splits: Annotated[list[str], Field(min_length=2)] | None = Field(
        None, description="Several evaluated splits of the spec: the member is the mean over its (subset, split) "
                          "cells (MTEB's task score over its eval_splits), one member in every aggregate.")
    subset: str | None = Field(None, description="The subset of a spec with `subsets` (it or `subsets` required "
                                                 "there).")
    subsets: Annotated[list[str], Field(min_length=1)] | Literal["all"] | None = Field(
        None, description="Several subsets of a spec with `subsets` (a list, or `all`): the member is "
                                        "the mean over them of the metric on the split (MTEB's task score over "
                                        "its hf_subsets), one member (one task) in every aggregate.")
    weight: Weight = Field(1.0, description="The member's weight in `weighted_mean`: a number from 1e-6 to 1e6.")
    optional: bool = Field(False, description="A member whose data may be missing here: the suite then runs "
                                              "without it and marks every aggregate partial.")


class SuiteUncertainty(Strict):
    resamples: Resamples = Field(1000, description="Joint resamples of the members' units (100 to 100,000).")
    confidence: float = Field(0.95, gt=0, lt=1)
    seed: int = Field(SUITE_SEED, ge=0, le=2**63 - 1, description="Member i's resamples are seeded by [seed, i]: "
                                                                 "independent.")


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
class Cell:
    """One (subset, split) a member over several scores: the spec run (a subset's, or the spec), the split and the
    metric id on it."""

    spec: LoadedSpec
    split: str
    metric: str

    @property
    def key(self) -> tuple[str | None, str, str]:
        """(subset, split, metric): what suite.json records of the cell."""
        return (None if self.spec.subset is None else str(self.spec.subset), self.split, self.metric)


@dataclass(frozen=True)
class ResolvedMember:
    """A member with its spec read and checked: the split, metric, task type and direction it stands for."""

    index: int
    member: Member
    loaded: LoadedSpec  # the spec scored; of a member over several subsets, the file's spec (its id)
    split: str  # of a member over several splits, their names joined by '+'
    task_type: str
    direction: str
    # a member over several subsets or splits: its cells, split by split, each split's in the spec's subset order
    cells: tuple[Cell, ...] = ()

    @property
    def runs(self) -> tuple[LoadedSpec, ...]:
        """The specs run for the member: its cells' (each once), or its spec."""
        return tuple({c.spec.spec.id: c.spec for c in self.cells}.values()) or (self.loaded,)

    @property
    def subsets(self) -> tuple[str, ...] | None:
        """The subsets a member over several averages; None for a member of one spec (or one subset)."""
        if self.member.subsets is None:
            return None
        return tuple(dict.fromkeys(str(c.spec.subset) for c in self.cells))

    @property
    def splits(self) -> tuple[str, ...] | None:
        """The splits a member over several splits averages; None otherwise."""
        return tuple(dict.fromkeys(c.split for c in self.cells)) if self.member.splits is not None else None

    @property
    def metric(self) -> str:
        """The metric id, or of a member over splits with a metric per split, their ids joined by '+'."""
        return "+".join(dict.fromkeys(c.metric for c in self.cells)) if self.cells else str(self.member.metric)

    @property
    def spec_id(self) -> str:
        return self.loaded.spec.id

    @property
    def label(self) -> str:
        over = [f"{len(names)} {what}" for names, what in ((self.subsets, "subsets"), (self.splits, "splits"))
                if names is not None]
        mean = f" (mean of {' × '.join(over)})" if over else ""
        return f"{self.spec_id}{mean} {self.split} {self.metric}"


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
    parts = _chosen_subsets(loaded, key, member, spec)
    if len(parts) == 1 and member.subsets is None:
        spec = parts[0]
    splits = _chosen_splits(loaded, key, member, spec)
    several = member.subsets is not None or member.splits is not None
    cells = [(part, split) for split in splits for part in parts]
    kinds = [_scored(loaded, key, member, part, split) for part, split in cells]
    for (part, split), kind in zip(cells, kinds, strict=True):
        if kind[1:] != kinds[0][1:]:
            first, split0 = cells[0]
            raise loaded.error((*key, "subsets" if member.splits is None else "splits"),
                               f"{_cell_name(part, split)} is scored by a {kind[1]} metric ({kind[2]} is better), "
                               f"{_cell_name(first, split0)} by a {kinds[0][1]} ({kinds[0][2]}): one member is one "
                               "task")
    kind, direction = kinds[0][1], kinds[0][2]
    return ResolvedMember(index=index, member=member, loaded=spec, split="+".join(split for split in splits),
                          task_type=PROTOCOLS[kind].info.prompt_task, direction=direction,
                          cells=tuple(Cell(part, split, metric) for (part, split), (metric, _, _) in
                                      zip(cells, kinds, strict=True)) if several else ())


def _cell_name(spec: LoadedSpec, split: str) -> str:
    subset = f" subset {spec.subset}" if spec.subset is not None else ""
    return f"{spec.parent.id if spec.parent else spec.spec.id}{subset} split {split}"


def _chosen_splits(loaded: LoadedSuite, key: tuple[str, int], member: Member, spec: LoadedSpec) -> list[str]:
    """The splits the member scores: its `splits` (in the spec's order), its `split`, or the spec's one evaluated
    split; a metric per split names exactly the member's splits."""
    if member.split is not None and member.splits is not None:
        raise loaded.error((*key, "splits"), "give `split` (one) or `splits` (several, their mean), not both")
    if isinstance(member.metric, dict):
        if member.splits is None:
            raise loaded.error((*key, "metric"), "a metric per split (a mapping) goes with `splits`; give one "
                                                 "metric id for one split")
        if set(member.metric) != set(member.splits):
            raise loaded.error((*key, "metric"), f"the metric mapping names splits {', '.join(member.metric)}; the "
                                                 f"member's `splits` are {', '.join(member.splits)}")
    if member.splits is not None:
        twice = [name for i, name in enumerate(member.splits) if name in member.splits[:i]]
        if twice:
            raise loaded.error((*key, "splits"), f"split {twice[0]!r} named twice")
        order = spec.spec.evaluated_splits  # in the spec's order, as subsets are: one score, one way to say it
        return sorted(member.splits, key=lambda name: order.index(name) if name in order else len(order))
    if member.split is not None:
        return [member.split]
    evaluated = spec.spec.evaluated_splits
    if len(evaluated) != 1:
        raise loaded.error(key, f"{spec.spec.id if not spec.parent else spec.parent.id} evaluates {len(evaluated)} "
                                f"splits ({', '.join(evaluated)}); name the member's `split` (or `splits`)")
    return evaluated


def _chosen_subsets(loaded: LoadedSuite, key: tuple[str, int], member: Member, spec: LoadedSpec) -> list[LoadedSpec]:
    """The specs the member scores: its one subset's, its several subsets' (in the spec's order), or the spec."""
    subsets = spec.spec.subsets or {}
    if member.subset is not None and member.subsets is not None:
        raise loaded.error((*key, "subsets"), "give `subset` (one) or `subsets` (several, their mean), not both")
    if member.subsets is not None:
        if not subsets:
            raise loaded.error((*key, "subsets"), f"{spec.spec.id} declares no subsets")
        names = list(subsets) if member.subsets == "all" else member.subsets
        unknown = [name for name in names if name not in subsets]
        twice = [name for i, name in enumerate(names) if name in names[:i]]
        if unknown or twice:
            raise loaded.error((*key, "subsets"), f"{spec.spec.id} has no subset {unknown[0]!r}; its subsets: "
                                                  f"{', '.join(subsets)}" if unknown else f"subset {twice[0]!r} "
                                                  "named twice")
        return subset_specs(spec, names)
    if subsets and member.subset not in subsets:
        raise loaded.error((*key, "subset") if member.subset else key,
                           f"{spec.spec.id} has subsets ({', '.join(subsets)}); name the member's `subset`"
                           + (f" (no subset {member.subset!r})" if member.subset else "")
                           + ", or `subsets` for their mean")
    if member.subset and not subsets:
        raise loaded.error((*key, "subset"), f"{spec.spec.id} declares no subsets")
    return subset_specs(spec, [member.subset]) if member.subset else [spec]


def _scored(loaded: LoadedSuite, key: tuple[str, int], member: Member, spec: LoadedSpec,
            split: str) -> tuple[str, str, str]:
    """(metric id, protocol kind, direction) of the member's metric on `split` in one spec it scores; a split or
    metric the spec does not have is one line (naming the subset of a member over several)."""
    name = f"{spec.parent.id} subset {spec.subset}" if member.subsets is not None and spec.parent else spec.spec.id
    evaluated = spec.spec.evaluated_splits
    if split not in evaluated:
        raise loaded.error((*key, "split" if member.splits is None else "splits"),
                           f"{name} does not evaluate split {split!r}; it evaluates: {', '.join(evaluated)}")
    metric_id = member.metric[split] if isinstance(member.metric, dict) else member.metric
    metric = spec.spec.metrics.get(metric_id)
    if metric is None:
        raise loaded.error((*key, "metric"), f"{name} has no metric {metric_id!r}; its "
                                             f"metrics: {', '.join(spec.spec.metrics)}")
    return metric_id, spec.spec.protocols[metric.protocol].kind, METRICS[metric.metric].direction


def _check_members(loaded: LoadedSuite, members: list[ResolvedMember]) -> None:
    seen: dict[tuple[str, tuple[str, ...] | None, str, str], int] = {}
    files: dict[str, ResolvedMember] = {}  # spec id -> its first member: one id is one file (one results folder)
    for m in members:
        other = files.setdefault(m.spec_id, m)
        if _spec_file(loaded, other) != _spec_file(loaded, m):
            raise loaded.error(("members", m.index, "spec"),
                               f"{m.member.spec} has the id {m.spec_id!r}, as member {other.index}'s "
                               f"{other.member.spec} has: their runs would write one folder; give them distinct ids")
        where = (m.spec_id, m.subsets, m.split, m.metric)
        if where in seen:
            raise loaded.error(("members", m.index), f"the same score as member {seen[where]} ({m.label})")
        seen[where] = m.index
        first = members[0]
        if m.direction != first.direction:
            raise loaded.error(("members", m.index, "metric"),
                               f"{m.metric} is {m.direction} is better, {first.metric} (member 0) "
                               f"{first.direction}: a mean of the two means nothing")
    if all(m.member.optional for m in members):
        raise loaded.error(("members",), "every member is optional; at least one must be required")


def _spec_file(loaded: LoadedSuite, m: ResolvedMember) -> Path:
    """The member's spec file however it is named (a relative path, a link)."""
    return (loaded.path.parent / m.member.spec).resolve()
