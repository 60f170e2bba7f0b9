"""A suite member over several cells of one spec: its subsets (MTEB's hf_subsets), its splits (MTEB's
eval_splits), or both. MTEB's task score is the plain mean over the task's (subset, split) cells of the main score
(mteb/benchmarks/_create_table.py: the long frame's rows of a task averaged, a task missing a cell left out), so
the member's value is the mean over its cells. Each subset runs and is read back as a spec of its own
(`<id>.<subset>`); the member's own interval is the mean over its cells' resamples (board.subsets.mean_over_subsets,
on the spec's resamples, confidence and seed: a member over one split's subsets gets the interval its spec's
subsets.json gives), and in the suite's joint resamples each cell is drawn over its own units on its own seed
(two splits are different items, so independent; board.joint.joint_draws) and the member's resample b is
their mean, one member in every aggregate."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specrun.board.joint import MemberUnits, PartUnits
from specrun.board.subsets import SubsetUnits, mean_over_subsets
from specrun.board.suites.units import units_key
from specrun.results.verify import Verified
from specrun.suites.model import Cell, ResolvedMember
from specrun.suites.results import PartScore


@dataclass(frozen=True)
class ReadPart:
    """One cell a member scores (its spec's, or one of its subsets' on one split), read back verified, with its
    units."""

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


def read_parts(m: ResolvedMember, verified: Sequence[Verified]) -> list[ReadPart]:
    """Each cell read from its spec's results (`verified`: one per spec of m.runs, in that order)."""
    if not m.cells:
        return [read_part(verified[0], m.split, m.metric)]
    by_spec = {spec.spec.id: v for spec, v in zip(m.runs, verified, strict=True)}
    return [read_part(by_spec[c.spec.spec.id], c.split, c.metric) for c in m.cells]


def member_units(m: ResolvedMember, parts: Sequence[ReadPart]) -> MemberUnits:
    """What the member draws for the joint resamples: its units, or each subset's (one member all the same)."""
    if not m.cells:
        units = parts[0].units
        return MemberUnits(m.index, units.metric, units.arrays, units.key, m.member.weight, m.task_type)
    return MemberUnits.of_parts(m.index, [p.units for p in parts], m.member.weight, m.task_type)


def member_ids(m: ResolvedMember, parts: Sequence[ReadPart]) -> list[str]:
    """The member's unit ids, each cell's prefixed by its subset and split: two runs' members compare on the same
    units."""
    if not m.cells:
        return parts[0].ids
    return [f"{_cell_name(m, cell)}/{unit}" for cell, part in zip(m.cells, parts, strict=True) for unit in part.ids]


def _cell_name(m: ResolvedMember, cell: Cell) -> str:
    return "/".join([*([str(cell.spec.subset)] if m.subsets is not None else []),
                     *([cell.split] if m.splits is not None else [])])


def own_mean(m: ResolvedMember, parts: Sequence[ReadPart]) -> tuple[float, float, float, str]:
    """(value, low, high, method): the member's own score, the mean over its cells with its interval from their
    resamples, each cell on [spec seed, its subset's place in the spec's subsets] (as the spec's subsets.json,
    for a member over one split) or [spec seed, (its split's place in the member's splits, that place)]."""
    first = m.cells[0].spec
    parent = first.parent or first.spec
    order = list(parent.subsets or {})
    u = parent.uncertainty
    splits = m.splits
    units = [SubsetUnits(p.units.metric, p.arrays, p.interval,
                         _seed_index(order, cell, None if splits is None else splits.index(cell.split)))
             for cell, p in zip(m.cells, parts, strict=True)]
    return mean_over_subsets(units, resamples=u.resamples, confidence=u.confidence, seed=first.spec.subset.seed)


def _seed_index(order: list[str], cell: Cell, split: int | None) -> int | tuple[int, int]:
    subset = order.index(str(cell.spec.subset)) if cell.spec.subset is not None else 0
    return subset if split is None else (split, subset)


def part_scores(m: ResolvedMember, parts: Sequence[ReadPart], relative: dict[str, str]) -> list[PartScore]:
    """Each cell's own score, where its results.json lies (`relative`: spec id -> its path relative to the output
    root) and its sha256."""
    out = []
    for cell, part in zip(m.cells, parts, strict=True):
        score = part.verified.results.scores[cell.split][cell.metric]
        subset, split, metric = cell.key
        out.append(PartScore(subset=subset, split=split, metric=metric, spec_id=cell.spec.spec.id,
                             value=score.value, ci_low=score.ci_low, ci_high=score.ci_high, interval=score.interval,
                             n=score.n, results=relative[cell.spec.spec.id],
                             results_sha256=hashlib.sha256(part.verified.path.read_bytes()).hexdigest()))
    return out
