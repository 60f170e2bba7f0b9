"""A suite member over several subsets of one spec (MTEB's task score: the mean over the hf_subsets it takes).
Each subset runs and is read back as a spec of its own (`<id>.<subset>`); the member's value and own interval are
the mean over them as the spec's subsets.json gives it (subset_means.mean_over_subsets: the spec's resamples,
confidence and seed), and in the suite's joint resamples each subset is drawn over its own units on its own seed
and the member's resample b is their mean (metrics.aggregate.joint_draws), one member in every aggregate."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specrun.metrics.aggregate import MemberUnits, PartUnits
from specrun.results.verify import Verified
from specrun.subset_means import SubsetUnits, mean_over_subsets
from specrun.suites.aggregate import units_key
from specrun.suites.model import ResolvedMember
from specrun.suites.results import PartScore


@dataclass(frozen=True)
class ReadPart:
    """One run a member scores (its spec's, or one of its subsets'), read back verified, with its units."""

    verified: Verified
    ids: list[str]
    arrays: dict[str, np.ndarray]
    units: PartUnits
    interval: str  # its score's own interval method


def read_part(verified: Verified, split: str, metric_id: str) -> ReadPart:
    results = verified.results
    info = results.metrics[metric_id]
    ids, arrays = verified.units[(split, info.protocol)]
    return ReadPart(verified=verified, ids=list(ids), arrays=arrays,
                    units=PartUnits(info.metric, arrays, units_key(results, split, ids)),
                    interval=results.scores[split][metric_id].interval)


def member_units(m: ResolvedMember, parts: Sequence[ReadPart]) -> MemberUnits:
    """What the member draws for the joint resamples: its units, or each subset's (one member all the same)."""
    if not m.parts:
        units = parts[0].units
        return MemberUnits(m.index, units.metric, units.arrays, units.key, m.member.weight, m.task_type)
    return MemberUnits.of_parts(m.index, [p.units for p in parts], m.member.weight, m.task_type)


def member_ids(m: ResolvedMember, parts: Sequence[ReadPart]) -> list[str]:
    """The member's unit ids, each subset's prefixed by its name: two runs' members compare on the same units."""
    if not m.parts:
        return parts[0].ids
    return [f"{spec.subset}/{unit}" for spec, part in zip(m.parts, parts, strict=True) for unit in part.ids]


def own_mean(m: ResolvedMember, parts: Sequence[ReadPart]) -> tuple[float, float, float, str]:
    """(value, low, high, method): the member's own score, the mean over its subsets with its interval as the
    spec's own subsets' mean computes it (each subset on [spec seed, its place in the spec's subsets])."""
    parent = m.parts[0].parent
    assert parent is not None and parent.subsets is not None  # a member over several subsets
    order = list(parent.subsets)
    units = [SubsetUnits(p.units.metric, p.arrays, p.interval, order.index(str(spec.subset)))
             for spec, p in zip(m.parts, parts, strict=True)]
    u = parent.uncertainty
    return mean_over_subsets(units, resamples=u.resamples, confidence=u.confidence, seed=m.parts[0].spec.subset.seed)


def part_scores(m: ResolvedMember, parts: Sequence[ReadPart], relative: Sequence[str]) -> list[PartScore]:
    """Each subset's own score, where its results.json lies (relative to the output root) and its sha256."""
    out = []
    for spec, part, where in zip(m.parts, parts, relative, strict=True):
        score = part.verified.results.scores[m.split][m.member.metric]
        out.append(PartScore(subset=str(spec.subset), spec_id=spec.spec.id, value=score.value, ci_low=score.ci_low,
                             ci_high=score.ci_high, interval=score.interval, n=score.n, results=where,
                             results_sha256=hashlib.sha256(part.verified.path.read_bytes()).hexdigest()))
    return out
