"""A spec's subsets averaged as MTEB averages its hf_subsets: per evaluated split and metric, the mean of the
subsets' values, with an interval over joint resamples (each subset resampled over its own units with its own
seed: independent; board.joint). Written beside the subsets' own runs as <id>/<model>/subsets.json and
subsets.md."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from specrun.board.joint import aggregate_interval, aggregate_method, member_draws
from specrun.core.markdown import md_text
from specrun.core.types import Strict
from specrun.evaluation import ProtocolRun
from specrun.plan import Plan
from specrun.results import Results

SUBSETS_FORMAT = "specrun.subsets/1"


class SubsetScore(Strict):
    subset: str
    split: str
    metric: str
    value: float
    ci_low: float
    ci_high: float
    interval: str  # the subset's own interval method
    n: int
    results: str  # the subset's results.json, relative to the output root


class SubsetMean(Strict):
    split: str
    metric: str
    value: float
    ci_low: float
    ci_high: float
    interval: str  # how the joint resamples are read: the subsets' common method (board.joint)
    subsets: list[str]


class SubsetMeans(Strict):
    format: Literal["specrun.subsets/1"] = SUBSETS_FORMAT
    spec_id: str
    title: str
    spec_sha256: str
    subsets: list[str]  # the subsets run, in the spec's order
    scores: list[SubsetScore]
    means: list[SubsetMean]
    resamples: int
    confidence: float
    seed: int
    limit: int | None = None  # --limit: each subset read the first N items of each split (a smoke run)


@dataclass(frozen=True)
class SubsetRun:
    """One subset's run: its plan, results, protocol runs (outputs in memory) and results folder."""

    plan: Plan
    results: Results
    runs: list[ProtocolRun]
    folder: Path


@dataclass(frozen=True)
class SubsetUnits:
    """One subset's units of a metric on a split: what its resamples draw, its own interval method and its place
    in the spec's subsets (its seed)."""

    metric: str  # the registered metric
    arrays: dict[str, np.ndarray]
    interval: str
    index: int | tuple[int, int]  # in the spec's `subsets`: the subset's seed is [seed, index]; a suite member
    # over several splits: (the split's place among its splits, the subset's)


def mean_over_subsets(parts: Sequence[SubsetUnits], *, resamples: int, confidence: float,
                      seed: int) -> tuple[float, float, float, str]:
    """(value, low, high, method) of the mean over subsets, as MTEB averages a task's hf_subsets: each subset
    resampled over its own units on its own seed (independent), read by their common method. A suite member over
    several subsets takes its own interval from here, so that it is the one its spec's subsets.json gives."""
    draws = [member_draws(p.metric, p.arrays, resamples=resamples, seed=seed, index=p.index, weight=1.0,
                          task_type="") for p in parts]
    method = aggregate_method([p.interval for p in parts])
    value, low, high = aggregate_interval("mean_task", draws, confidence, method)
    return value, low, high, method


def subset_means(runs: Sequence[SubsetRun], output_root: Path) -> SubsetMeans:
    """The mean over the subsets run of each evaluated split's metrics."""
    first = runs[0].plan.loaded
    parent = first.parent
    assert parent is not None and parent.subsets is not None  # only subsets' runs come here
    order = list(parent.subsets)
    runs = sorted(runs, key=lambda r: order.index(str(r.plan.loaded.subset)))
    u = parent.uncertainty
    scores, means = [], []
    for split, metrics in runs[0].results.scores.items():
        for metric_id in metrics:
            parts = []
            for run in runs:
                info = run.results.metrics[metric_id]
                (protocol_run,) = [r for r in run.runs if r.split == split and r.protocol == info.protocol]
                score = run.results.scores[split][metric_id]
                scores.append(SubsetScore(subset=str(run.plan.loaded.subset), split=split, metric=metric_id,
                                          value=score.value, ci_low=score.ci_low, ci_high=score.ci_high,
                                          interval=score.interval, n=score.n,
                                          results=(run.folder / "results.json").relative_to(output_root)
                                          .as_posix()))
                parts.append(SubsetUnits(info.metric, protocol_run.outputs.arrays, score.interval,
                                         order.index(str(run.plan.loaded.subset))))
            value, low, high, method = mean_over_subsets(parts, resamples=u.resamples, confidence=u.confidence,
                                                         seed=run.plan.seed)
            means.append(SubsetMean(split=split, metric=metric_id, value=value, ci_low=low, ci_high=high,
                                    interval=method, subsets=[str(r.plan.loaded.subset) for r in runs]))
    return SubsetMeans(spec_id=parent.id, title=parent.title, spec_sha256=first.sha256,
                       subsets=[str(r.plan.loaded.subset) for r in runs], scores=scores, means=means,
                       resamples=u.resamples, confidence=u.confidence, seed=runs[0].plan.seed,
                       limit=runs[0].results.provenance.limit)


def subsets_json(means: SubsetMeans) -> str:
    return json.dumps(means.model_dump(mode="json", exclude_none=True), indent=1, ensure_ascii=False) + "\n"


def subsets_markdown(means: SubsetMeans) -> str:
    percent = f"{means.confidence * 100:g} %"
    limited = [] if means.limit is None else [
        f"Limited to {means.limit} items per split (--limit): a smoke run, not the benchmark's numbers.", ""]
    lines = [f"# {md_text(means.title)}: the mean over its subsets", "", *limited,
             f"| split | metric | subset | value | {percent} CI | n |", "| --- | --- | --- | --- | --- | --- |"]
    for mean in means.means:
        for s in (s for s in means.scores if (s.split, s.metric) == (mean.split, mean.metric)):
            method = "" if s.interval == "percentile" else f" {s.interval}"
            lines.append(f"| {md_text(s.split)} | {md_text(s.metric)} | {md_text(s.subset)} | {s.value:.4f} | "
                         f"[{s.ci_low:.4f}, {s.ci_high:.4f}]{method} | {s.n} |")
        method = "" if mean.interval == "percentile" else f" {mean.interval}"
        lines.append(f"| {md_text(mean.split)} | {md_text(mean.metric)} | **mean of {len(mean.subsets)}** | "
                     f"{mean.value:.4f} | [{mean.ci_low:.4f}, {mean.ci_high:.4f}]{method} | |")
    lines += ["", f"The mean's interval: bootstrap over {means.resamples} joint resamples, each subset resampled "
                  "over its own units with its own seed (independent), read by the subsets' own method."]
    lines += [f"Note: the mean of {m.metric} on {m.split} lies outside its interval" for m in means.means
              if not m.ci_low <= m.value <= m.ci_high]
    return "\n".join(lines) + "\n"
