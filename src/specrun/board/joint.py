"""Aggregates over members (a suite's members, a spec's subsets) and their intervals. Each member is resampled
over its own units (and its runs) through the one resampling driver, seeded by [seed, member index]; members over
the same units (the same items, in the same order) share the first such member's seed, so resample b draws the
same items for all of them and their correlation reaches the aggregate; other members are independent. The
aggregate of each joint resample (row b holds every member's b-th resample) makes its distribution, read by the
members' common interval method."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specrun.metrics import intervals
from specrun.metrics.estimate import resample

Stream = int | tuple[int, ...]  # whose seed a unit set draws on: a member's index, or (member, part)


@dataclass(frozen=True)
class MemberDraws:
    """One member's value and its bootstrap distribution for the suite's joint resamples."""

    value: float
    values: np.ndarray  # (resamples,)
    weight: float
    task_type: str


def member_seed(seed: int, index: int | tuple[int, ...]) -> int:
    """Member `index`'s own seed: independent streams for every member, the same on every run. A tuple
    (member, part) seeds one subset of a member over several subsets: each subset its own stream."""
    path = list(index) if isinstance(index, tuple) else [index]
    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])


def member_draws(metric: str, arrays: dict[str, np.ndarray], *, resamples: int, seed: int,
                 index: int | tuple[int, ...], weight: float, task_type: str) -> MemberDraws:
    """One member's draws on the seed of member `index` (its own, or the first member's over the same units)."""
    drawn = resample(metric, arrays, resamples=resamples, seed=member_seed(seed, index))
    return MemberDraws(value=drawn.point, values=drawn.values, weight=weight, task_type=task_type)


@dataclass(frozen=True)
class MemberUnits:
    """A member's units before they are drawn: `key` says which items they are (equal keys: the same items in
    the same order), so that `joint_draws` can give members over the same items one draw."""

    index: int
    metric: str
    arrays: dict[str, np.ndarray]
    key: str
    weight: float
    task_type: str
    parts: tuple[PartUnits, ...] = ()  # a member over several subsets: theirs (metric, arrays, key: the first's)

    @classmethod
    def of_parts(cls, index: int, parts: Sequence[PartUnits], weight: float, task_type: str) -> MemberUnits:
        """A member over several subsets: its value is the mean of theirs, each resampled over its own units."""
        first = parts[0]
        return cls(index, first.metric, first.arrays, first.key, weight, task_type, tuple(parts))


@dataclass(frozen=True)
class PartUnits:
    """One subset's units of a member over several subsets (`key` as MemberUnits' key)."""

    metric: str
    arrays: dict[str, np.ndarray]
    key: str


def draw_groups(keys: Sequence[tuple[Stream, str]]) -> dict[Stream, Stream]:
    """(stream, units key) -> stream -> the stream whose seed its draws take: the first with the same key. A stream
    is a member's index, or (member, part) for a subset of a member over several. Members scored on the same items
    drawn independently would let their errors cancel in the mean that in truth add up (two metrics on the same
    pairs): the aggregate's interval would be too narrow."""
    first: dict[str, Stream] = {}
    return {index: first.setdefault(key, index) for index, key in keys}


def _streams(m: MemberUnits) -> list[tuple[Stream, PartUnits]]:
    """A member's resampled unit sets: itself (seed index i), or each of its parts (seed index (i, j))."""
    if not m.parts:
        return [(m.index, PartUnits(m.metric, m.arrays, m.key))]
    return [((m.index, j), part) for j, part in enumerate(m.parts)]


def joint_draws(members: Sequence[MemberUnits], *, resamples: int, seed: int) -> list[MemberDraws]:
    """Every member's draws for the joint resamples, members over the same units on one seed (`draw_groups`); a
    member over several subsets draws each over its own units on its own seed, and its resample b is the mean of
    theirs (as a spec's subsets' mean: board.subsets), so it counts once in every aggregate."""
    streams = [_streams(m) for m in members]
    groups = draw_groups([(index, part.key) for member in streams for index, part in member])
    out = []
    for m, member in zip(members, streams, strict=True):
        drawn = [member_draws(part.metric, part.arrays, resamples=resamples, seed=seed, index=groups[index],
                              weight=m.weight, task_type=m.task_type) for index, part in member]
        out.append(drawn[0] if not m.parts else mean_draws(drawn, m.weight, m.task_type))
    return out


def mean_draws(parts: Sequence[MemberDraws], weight: float, task_type: str) -> MemberDraws:
    """A member over several subsets: the mean of their values (math.fsum) and of their resamples."""
    return MemberDraws(value=point("mean_task", parts), values=over_resamples("mean_task", parts), weight=weight,
                       task_type=task_type)


def point(name: str, members: Sequence[MemberDraws]) -> float:
    """The aggregate of the members' values, summed exactly (math.fsum)."""
    if name == "mean_task":
        return math.fsum(m.value for m in members) / len(members)
    if name == "weighted_mean":
        return math.fsum(m.weight * m.value for m in members) / math.fsum(m.weight for m in members)
    types = dict.fromkeys(m.task_type for m in members)
    means = [point("mean_task", [m for m in members if m.task_type == t]) for t in types]
    return math.fsum(means) / len(means)


def over_resamples(name: str, members: Sequence[MemberDraws]) -> np.ndarray:
    """The aggregate of each joint resample: (resamples,)."""
    table = np.stack([m.values for m in members], axis=1)  # (resamples, members)
    if name == "mean_task":
        return table.mean(axis=1)
    if name == "weighted_mean":
        weights = np.array([m.weight for m in members])
        return table @ weights / weights.sum()
    types = list(dict.fromkeys(m.task_type for m in members))
    per_type = [table[:, [i for i, m in enumerate(members) if m.task_type == t]].mean(axis=1) for t in types]
    return np.stack(per_type, axis=1).mean(axis=1)


def aggregate_method(methods: Sequence[str]) -> str:
    """How an aggregate's resamples are read: its members' common method (a statistic whose resamples are biased
    stays centred when averaged), percentile when they differ or for bca, whose jackknife needs one statistic of
    one set of units. centred_t_runs counts as centred: its t floor is over one metric's own runs, which a mean
    over members or subsets does not have."""
    shared = {"centred" if method == "centred_t_runs" else method for method in methods}
    return shared.pop() if len(shared) == 1 and "bca" not in shared else "percentile"


def aggregate_interval(name: str, members: Sequence[MemberDraws], confidence: float,
                       method: str = "percentile") -> tuple[float, float, float]:
    """(value, low, high) of one aggregate, its joint resamples read by `method` (percentile, basic, centred)."""
    value = point(name, members)
    low, high = intervals.interval(method, value, over_resamples(name, members), confidence)
    return value, low, high
