"""`compare A/suite.json B/suite.json`: the paired difference of every aggregate and of every member. For joint
resample b, the aggregate of A's member resamples b minus that of B's, where member i of A and of B draw the same
units (seed member_seed(suite seed, i), the same unit ids checked): paired within each member; members on the
same items share one draw, the others are independent. The interval is read by the members' common method (as
the aggregates' own intervals are)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specrun.board.joint import aggregate_method, member_seed, over_resamples, point
from specrun.board.paired import Difference, method_note, paired_difference
from specrun.board.suites.runs import ReadMember, SuiteRun, display_labels, read_suite_runs
from specrun.core.errors import CompareError
from specrun.core.markdown import md_text
from specrun.core.types import AGGREGATE_LABELS
from specrun.metrics import intervals


@dataclass(frozen=True)
class AggregateDifference:
    name: str
    a: float
    b: float
    difference: float  # a - b
    ci_low: float
    ci_high: float
    a_better: float  # share of the plausible paired differences on A's side of 0
    members: int
    partial: bool
    interval: str


@dataclass(frozen=True)
class SuiteComparison:
    a: SuiteRun
    b: SuiteRun
    aggregates: list[AggregateDifference]
    members: list[Difference]


def compare_suites(path_a: Path, path_b: Path) -> SuiteComparison:
    """Both suite runs read back verified and checked against each other, then compared."""
    a, b = read_suite_runs([path_a, path_b])
    if not a.members:
        raise CompareError("no member is scored in either run; nothing to compare", file=str(path_a))
    p = a.results.provenance
    direction = a.members[0].direction
    method = aggregate_method([m.score.interval or "percentile" for m in a.members])
    partial = any(m.status == "missing" for m in a.results.members)
    draws_a, draws_b = [m.draws for m in a.members], [m.draws for m in b.members]
    aggregates = []
    for aggregate in a.results.aggregates:
        value_a, value_b = point(aggregate.name, draws_a), point(aggregate.name, draws_b)
        differences = over_resamples(aggregate.name, draws_a) - over_resamples(aggregate.name, draws_b)
        difference = value_a - value_b
        low, high = intervals.interval(method, difference, differences, p.confidence)
        plausible = intervals.plausible(method, difference, differences)
        wins = intervals.ahead(plausible if direction == "higher" else -plausible, max(abs(value_a), abs(value_b)))
        aggregates.append(AggregateDifference(name=aggregate.name, a=value_a, b=value_b, difference=difference,
                                              ci_low=low, ci_high=high, a_better=float(np.mean(wins)),
                                              members=len(draws_a), partial=partial, interval=method))
    members = []
    for ma, mb in zip(a.members, b.members, strict=True):
        s = ma.score
        if ma.parts:
            members.append(_mean_difference(ma, mb, p.confidence))
            continue
        info = ma.verified.results.metrics[s.metric]
        members.append(paired_difference(s.split, f"{s.spec_id} {s.metric}", info.metric, ma.direction,
                                         ma.arrays, mb.arrays, p.resamples, p.confidence,
                                         member_seed(p.seed, s.index), s.n or len(ma.ids),
                                         s.interval or "percentile"))
    return SuiteComparison(a=a, b=b, aggregates=aggregates, members=members)


def _mean_difference(ma: ReadMember, mb: ReadMember, confidence: float) -> Difference:
    """A member over several cells (subsets, splits): A's mean minus B's, its interval over their joint resamples
    (each cell of A and of B on the same units, on the cell's suite seed), read by the cells' common method."""
    s = ma.score
    method = aggregate_method([part.interval for part in s.cells or []])
    difference = ma.draws.value - mb.draws.value
    differences = ma.draws.values - mb.draws.values
    low, high = intervals.interval(method, difference, differences, confidence)
    plausible = intervals.plausible(method, difference, differences)
    wins = intervals.ahead(plausible if ma.direction == "higher" else -plausible,
                           max(abs(ma.draws.value), abs(mb.draws.value)))
    return Difference(split=s.split, metric=f"{s.name} {s.metric}", a=ma.draws.value, b=mb.draws.value,
                      difference=difference, ci_low=low, ci_high=high, a_better=float(np.mean(wins)),
                      n=s.n or len(ma.ids), interval=method)


def suite_compare_markdown(c: SuiteComparison) -> str:
    """compare's table, for the aggregates first and then for each member on the suite's member seeds."""
    r, p = c.a.results, c.a.results.provenance
    percent = f"{p.confidence * 100:g} %"
    label_a, label_b = (md_text(label) for label in display_labels([c.a, c.b]))
    lines = [f"Paired comparison on suite {md_text(r.suite_id)} (version {md_text(r.version)}): "
             f"A = {label_a}, B = {label_b}", "",
             f"| aggregate | A | B | A − B | {percent} CI | P(A better) | members |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for d in c.aggregates:
        partial = f" (partial: {d.members} of {len(r.members)})" if d.partial else ""
        lines.append(f"| {AGGREGATE_LABELS[d.name]} | {d.a:.4f} | {d.b:.4f} | {d.difference:+.4f} | "
                     f"[{d.ci_low:+.4f}, {d.ci_high:+.4f}] | {d.a_better:.3f} | {d.members}{partial} |")
    lines += ["", f"| member | split | A | B | A − B | {percent} CI | P(A better) | n |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {md_text(d.metric)} | {md_text(d.split)} | {d.a:.4f} | {d.b:.4f} | {d.difference:+.4f} | "
              f"[{d.ci_low:+.4f}, {d.ci_high:+.4f}] | {d.a_better:.3f} | {d.n} |" for d in c.members]
    method = c.aggregates[0].interval if c.aggregates else "percentile"
    lines += ["", f"Paired bootstrap: {p.resamples} joint resamples; member i of A and B on the same resampled units "
                  f"(seed [{p.seed}, i]; members on the same items share one draw); aggregates read by {method} "
                  f"intervals, members by {method_note(c.members)}."]
    lines += [f"Note: {AGGREGATE_LABELS[d.name]}: the difference lies outside its interval" for d in c.aggregates
              if not d.ci_low <= d.difference <= d.ci_high]
    missing = [m for m in r.members if m.status == "missing"]
    if missing:
        lines += ["", "Partial: missing in both runs: " + ", ".join(md_text(m.spec_id) for m in missing) + "."]
    return "\n".join(lines) + "\n"
