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

AGGREGATE_LABELS = {"mean_task": "Mean (task)", "mean_task_type": "Mean (task type)",
                    "weighted_mean": "Weighted mean"}


@dataclass(frozen=True)
class MemberDraws:
    """One member's value and its bootstrap distribution for the suite's joint resamples."""

    value: float
    values: np.ndarray  # (resamples,)
    weight: float
    task_type: str


def member_seed(seed: int, index: int) -> int:
    """Member `index`'s own seed: independent streams for every member, the same on every run."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def member_draws(metric: str, arrays: dict[str, np.ndarray], *, resamples: int, seed: int, index: int,
                 weight: float, task_type: str) -> MemberDraws:
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


def draw_groups(keys: Sequence[tuple[int, str]]) -> dict[int, int]:
    """(member index, units key) -> member index -> the member whose seed its draws take: the first with the same
    key. Members scored on the same items drawn independently would let their errors cancel in the mean that in
    truth add up (two metrics on the same pairs): the aggregate's interval would be too narrow."""
    first: dict[str, int] = {}
    return {index: first.setdefault(key, index) for index, key in keys}


def joint_draws(members: Sequence[MemberUnits], *, resamples: int, seed: int) -> list[MemberDraws]:
    """Every member's draws for the joint resamples, members over the same units on one seed (`draw_groups`)."""
    groups = draw_groups([(m.index, m.key) for m in members])
    return [member_draws(m.metric, m.arrays, resamples=resamples, seed=seed, index=groups[m.index],
                         weight=m.weight, task_type=m.task_type) for m in members]


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
    one set of units."""
    shared = set(methods)
    return shared.pop() if len(shared) == 1 and "bca" not in shared else "percentile"


def aggregate_interval(name: str, members: Sequence[MemberDraws], confidence: float,
                       method: str = "percentile") -> tuple[float, float, float]:
    """(value, low, high) of one aggregate, its joint resamples read by `method` (percentile, basic, centred)."""
    value = point(name, members)
    low, high = intervals.interval(method, value, over_resamples(name, members), confidence)
    return value, low, high
