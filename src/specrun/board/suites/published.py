"""A suite's leaderboard beside MTEB's published results (`leaderboard SUITE_RUNS --published DIR`): each member's
counterpart (its spec metric's `mteb` key; a member over several cells: the mean of theirs, MTEB's task score over
its subsets and splits) read for every model of DIR; the models with every member get MTEB's Mean(Task) (the plain
mean over members), Mean(TaskType) (the mean over task types of their members' mean) and Borda (per member,
n - average rank, summed; ranked with ties at the best rank), computed over those models and our runs together
(`board._beside`); a model missing a member is listed with what it lacks, unranked, as MTEB's leaderboard
leaves it out of its means. Our aggregates keep their intervals and get rank intervals among the published
points; a published aggregate is a point."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from specrun.board._beside import borda_beside, rank_beside
from specrun.board.joint import over_resamples, point
from specrun.board.suites.runs import SuiteRun, display_labels, suite_file_members
from specrun.core.markdown import md_text
from specrun.core.types import AGGREGATE_LABELS
from specrun.metrics import intervals
from specrun.metrics.resampling import percentile_interval
from specrun.mteb.results import PublishedDir
from specrun.mteb.results.comparable import flags_of

MTEB_AGGREGATES = ("mean_task", "mean_task_type")


@dataclass
class SuitePublished:
    """Per published model: each member's value (by member position) and the flags' reasons."""

    members: list[str]  # labels, in the runs' scored-member order
    task_types: list[str]
    values: dict[str, dict[int, float]] = field(default_factory=dict)
    flags: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)  # members with no counterpart: nothing can be ranked


def read_members(runs: Sequence[SuiteRun], published: PublishedDir) -> SuitePublished:
    """Every model's published value of every scored member (module docstring), with its flags."""
    first = runs[0]
    declared = suite_file_members(first.path, first.results)
    members = [declared[m.score.index] for m in first.members]
    out = SuitePublished(members=[m.label for m in members], task_types=[m.task_type for m in members])
    for k, own in enumerate(members):
        cells = [(c.spec.spec, c.metric, c.split) for c in own.cells] or [(own.loaded.spec, own.metric, own.split)]
        per_cell: list[dict[str, float]] = []
        for spec, metric, split in cells:
            ref = spec.mteb_ref(metric, split)
            if ref is None:
                out.unmapped.append(own.label)
                break
            found = published.every_model(ref, spec.metrics[metric].range)
            out.notes += [f"{own.label}: published, set aside: {reason}" for reason in found.set_aside]
            per_cell.append({v.model: v.value for v in found.values})
            for v in found.values:
                reasons = [f"{own.label}: {f.reason}" for f in flags_of(v, own.task_type)]
                out.flags.setdefault(v.model, []).extend(reasons)
        else:
            for model in set.intersection(*(set(c) for c in per_cell)):
                out.values.setdefault(model, {})[k] = math.fsum(c[model] for c in per_cell) / len(per_cell)
    return out


def published_aggregate(name: str, values: list[float], task_types: list[str]) -> float:
    """MTEB's Mean(Task) or Mean(TaskType) of one published model's member values."""
    if name == "mean_task":
        return math.fsum(values) / len(values)
    types = list(dict.fromkeys(task_types))
    means = [math.fsum(v for v, t in zip(values, task_types, strict=True) if t == kind) /
             task_types.count(kind) for kind in types]
    return math.fsum(means) / len(means)


def suite_published(runs: Sequence[SuiteRun], published: PublishedDir, method: str,
                    published_only: str = "all", labels: Sequence[str] | None = None) -> dict:
    """The published section of one suite's board (JSON): ranked models per aggregate and Borda, ours with
    rank intervals (labelled as the board labels them, given), the models left out with why."""
    read = read_members(runs, published)
    labels = list(labels) if labels is not None else display_labels(runs)
    n = len(read.members)
    out: dict = {"members": read.members, "published_only": published_only, "notes": read.notes,
                 "lacking": [], "flagged_out": [], "aggregates": {}, "borda": []}
    if read.unmapped or not runs[0].members:
        out["not_ranked"] = f"members without an MTEB counterpart: {', '.join(dict.fromkeys(read.unmapped))}"
        return out
    ranked = []
    for model in sorted(set(read.values) | set(read.flags)):
        have = read.values.get(model, {})
        if len(have) < n:
            out["lacking"].append({"model": model, "lacks": [read.members[k] for k in range(n) if k not in have]})
        elif published_only == "comparable" and read.flags.get(model):
            out["flagged_out"].append({"model": model, "flags": read.flags[model]})
        else:
            ranked.append(model)
    direction = runs[0].members[0].direction
    confidence = runs[0].results.provenance.confidence
    table = np.array([[read.values[model][k] for k in range(n)] for model in ranked]).reshape(len(ranked), n)
    for name in MTEB_AGGREGATES:
        draws = [[m.draws for m in run.members] for run in runs]
        observed = np.array([point(name, d) for d in draws])
        scores = np.stack([over_resamples(name, d) for d in draws], axis=1)
        plausible = intervals.plausible(method, observed, scores)
        values = np.array([published_aggregate(name, list(row), read.task_types) for row in table])
        beside = rank_beside(values, observed, plausible, direction=direction, confidence=confidence)
        rows = [{"model": model, "kind": "published", "score": float(values[i]), "rank": int(beside.published_rank[i]),
                 "flags": read.flags.get(model, [])} for i, model in enumerate(ranked)]
        for m, label in enumerate(labels):
            low, high = percentile_interval(plausible[:, m], confidence)
            rows.append({"model": label, "kind": "ours", "score": float(observed[m]), "ci_low": low,
                         "ci_high": high, "rank": int(beside.rank[m]), "rank_low": int(beside.rank_low[m]),
                         "rank_high": int(beside.rank_high[m])})
        out["aggregates"][name] = sorted(rows, key=lambda r: (r["rank"], r["model"]))
    ours_obs = np.stack([[run.members[k].draws.value for run in runs] for k in range(n)])
    ours_b = np.stack([np.stack([run.members[k].draws.values for run in runs], axis=1) for k in range(n)])
    borda = borda_beside(table.T, ours_obs, ours_b, direction=direction, confidence=confidence)
    rows = [{"model": model, "kind": "published", "points": float(borda.points[i]), "rank": int(borda.rank[i]),
             "flags": read.flags.get(model, [])} for i, model in enumerate(ranked)]
    rows += [{"model": label, "kind": "ours", "points": float(borda.points[len(ranked) + m]),
              "rank": int(borda.rank[len(ranked) + m]), "rank_low": int(borda.rank_low[m]),
              "rank_high": int(borda.rank_high[m])} for m, label in enumerate(labels)]
    out["borda"] = sorted(rows, key=lambda r: (r["rank"], r["model"]))
    return out


def published_section(section: dict, percent: str) -> list[str]:
    """The suite board's Markdown of `suite_published`'s section."""
    lines = ["### Ranked with MTEB's published results", ""]
    if "not_ranked" in section:
        return [*lines, f"Not ranked: {md_text(section['not_ranked'])}.", ""]
    for name, rows in section["aggregates"].items():
        mteb_name = "Mean (Task)" if name == "mean_task" else "Mean (TaskType)"
        lines += [f"#### {AGGREGATE_LABELS[name]} (MTEB's {mteb_name})",
                  "", f"| rank ({percent} interval) | model | score | {percent} CI | flags |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [_row(r, f"{r['score']:.4f}", f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]" if "ci_low" in r else "—")
                  for r in rows]
        lines.append("")
    lines += ["#### Borda count over members (MTEB's)", "", f"| rank ({percent} interval) | model | points | flags |",
              "| --- | --- | --- | --- |"]
    lines += [_row(r, f"{r['points']:g}") for r in section["borda"]]
    lines += ["", f"{sum(r['kind'] == 'published' for r in section['borda'])} published models have every member "
                  f"({section['published_only']} ranked); a published value is a point (its rank has no interval); "
                  "ours: rank interval from our resamples against the fixed published values. Ties share the best "
                  "rank; rows of one rank by model name."]
    if section["flagged_out"]:
        lines += ["", "Left out (flagged, --published-only comparable): " + "; ".join(
            f"{md_text(f['model'])} ({md_text(', '.join(f['flags']))})" for f in section["flagged_out"]) + "."]
    if section["lacking"]:
        lines += ["", "Not ranked, lacking members: " + "; ".join(
            f"{md_text(x['model'])} (lacks {md_text(', '.join(x['lacks']))})" for x in section["lacking"]) + "."]
    return [*lines, ""]


def _row(r: dict, value: str, ci: str | None = None) -> str:
    rank = (f"{r['rank']} ({r['rank_low']}–{r['rank_high']})" if r["kind"] == "ours" else f"{r['rank']} (a point)")
    name = md_text(r["model"]) + (" (ours)" if r["kind"] == "ours" else " (published)")
    flags = "ours" if r["kind"] == "ours" else md_text("; ".join(r["flags"])) or "comparable"
    cells = [rank, name, value, *([ci] if ci is not None else []), flags]
    return "| " + " | ".join(cells) + " |"


__all__ = ["MTEB_AGGREGATES", "published_section", "read_members", "suite_published"]
