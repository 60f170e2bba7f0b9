"""What a suite run writes: suite.json (each member's score, interval, n and results sha256; each aggregate with
its interval; provenance) and suite.md. suite.json is read back, checked, when a suite runs again: it says which
members were run with which request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, ValidationError

from specrun.core.errors import SpecrunError
from specrun.core.files import read_regular_file
from specrun.core.markdown import md_text
from specrun.core.types import AGGREGATE_LABELS, Aggregate, Strict

SUITE_FORMAT = "specrun.suite/1"
SUITE_LIMIT = 16 << 20


class PartScore(Strict):
    """One cell of a member over several subsets or splits: its own score, read from its own run."""

    subset: str | None = None  # None: a spec without subsets
    split: str | None = None  # None (a suite.json of members over one split's subsets): the member's split
    metric: str | None = None  # None (as `split`): the member's metric
    spec_id: str  # the cell's run: `<spec id>.<subset>`, or the spec's id
    value: float
    ci_low: float
    ci_high: float
    interval: str
    n: int
    results: str  # its results.json, relative to the output root
    results_sha256: str


class MemberScore(Strict):
    index: int
    spec: str  # as the suite names it
    spec_id: str
    spec_sha256: str
    split: str
    metric: str
    task_type: str
    weight: float
    optional: bool
    status: Literal["scored", "missing"]
    reason: str | None = None  # why a missing member is missing
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    interval: str | None = None  # the member's own interval method, as its results name it
    n: int | None = None
    results: str | None = None  # results.json, relative to the output root
    results_sha256: str | None = None
    request_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")  # spec, model and settings the member was run with
    reused: bool = False  # read back from an earlier run, not run now
    encoded: int = 0  # texts the model encoded for it in this run
    # a member over several subsets or splits: each cell's score (value, interval and n are then their mean's,
    # with the interval as the spec's subsets.json gives it for one split's subsets, and the total n; `results` is
    # None); absent otherwise, so an earlier suite.json reads as it did (one written as `subsets` reads as cells)
    cells: list[PartScore] | None = Field(None, validation_alias=AliasChoices("cells", "subsets"))

    def cell_keys(self) -> tuple[tuple[str | None, str, str], ...] | None:
        """(subset, split, metric) of each cell, as ResolvedMember's cells say them; None for a member of one."""
        if self.cells is None:
            return None
        return tuple((c.subset, c.split or self.split, c.metric or self.metric) for c in self.cells)

    @property
    def name(self) -> str:
        """The spec id, and for a member over several cells how many subsets and splits it averages."""
        keys = self.cell_keys()
        if not keys:
            return self.spec_id
        subsets, splits = dict.fromkeys(k[0] for k in keys), dict.fromkeys(k[1] for k in keys)
        over = [f"{len(subsets)} subsets"] * (None not in subsets) + [f"{len(splits)} splits"] * (len(splits) > 1)
        return f"{self.spec_id} (mean of {' × '.join(over)})"

    @property
    def label(self) -> str:
        return f"{self.name} {self.split}"


class AggregateScore(Strict):
    name: Aggregate
    value: float
    ci_low: float
    ci_high: float
    interval: str = "percentile"  # how the joint resamples are read: the members' common method
    members: int
    partial: bool  # some optional member is missing: computed over fewer members


class SuiteProvenance(Strict):
    suite_path: str
    suite_sha256: str
    run: str  # the run's folder name: the model and every setting chosen (as each member's folder)
    model: str
    revision: str | None
    weights_sha256: str
    resamples: int
    confidence: float
    seed: int
    specrun_version: str
    created: str
    limit: int | None = Field(None, gt=0, description="--limit: every member read the first N items of each split "
                                                     "(a smoke run of the suite).")


class SuiteResults(Strict):
    format: Literal["specrun.suite/1"] = SUITE_FORMAT
    suite_id: str
    title: str
    version: str
    members: list[MemberScore]
    aggregates: list[AggregateScore]
    provenance: SuiteProvenance


def suite_json(results: SuiteResults) -> str:
    """suite.json; a member of one spec has no `cells` key, as before members over several cells were."""
    document = results.model_dump(mode="json")
    for member in document["members"]:
        if member["cells"] is None:
            del member["cells"]
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def read_suite_results(path: Path) -> SuiteResults | str:
    """An earlier suite.json, or why it cannot be used (then every member is run again, nothing is trusted)."""
    try:
        return SuiteResults.model_validate_json(read_regular_file(path, SUITE_LIMIT, "suite results"))
    except SpecrunError as exc:
        return exc.one_line()
    except ValidationError as exc:
        return f"{path}: not a specrun suite results file ({exc.errors(include_url=False)[0]['msg']})"


def suite_markdown(results: SuiteResults) -> str:
    p = results.provenance
    percent = f"{p.confidence * 100:g} %"
    lines = [f"# {md_text(results.title)} (suite {md_text(results.suite_id)}, version {md_text(results.version)})",
             "", f"Model: {md_text(p.model)} (run {md_text(p.run)})", "",
             *([f"Limited to {p.limit} items per split (--limit {p.limit}): a smoke run, not the suite's numbers.",
                ""] if p.limit is not None else []),
             f"| member | task type | metric | value | {percent} CI | n |", "| --- | --- | --- | --- | --- | --- |"]
    for m in results.members:
        if m.status == "missing":
            lines.append(f"| {md_text(m.label)} | {m.task_type} | {md_text(m.metric)} | "
                         f"missing | {md_text(m.reason or '')} | |")
            continue
        method = "" if m.interval == "percentile" else f" {m.interval}"
        lines.append(f"| {md_text(m.label)} | {m.task_type} | {md_text(m.metric)} | "
                     f"{m.value:.4f} | [{m.ci_low:.4f}, {m.ci_high:.4f}]{method} | {m.n} |")
    lines += ["", f"| aggregate | value | {percent} CI | members |", "| --- | --- | --- | --- |"]
    for a in results.aggregates:
        partial = f" (partial: {a.members} of {len(results.members)})" if a.partial else ""
        method = "" if a.interval == "percentile" else f" {a.interval}"
        lines.append(f"| {AGGREGATE_LABELS[a.name]} | {a.value:.4f} | [{a.ci_low:.4f}, {a.ci_high:.4f}]{method} | "
                     f"{a.members}{partial} |")
    lines += ["", f"Aggregate intervals: bootstrap over {p.resamples} joint resamples, read by the members' common "
                  f"method (percentile when they differ); each member resampled over its own units (and runs), "
                  f"members independent (seed {p.seed})."]
    lines += [f"Note: {AGGREGATE_LABELS[a.name]} lies outside its interval" for a in results.aggregates
              if not a.ci_low <= a.value <= a.ci_high]
    missing = [m for m in results.members if m.status == "missing"]
    if missing:
        lines += ["", "Partial: " + "; ".join(f"{md_text(m.spec_id)} is missing ({md_text(m.reason or '')})"
                                             for m in missing) + "."]
    return "\n".join([*lines, "", *hub_card_section(results)]) + "\n"


def hub_card_section(results: SuiteResults) -> list[str]:
    """A section to paste into the model's hub card (README.md): the suite's aggregates and members, each with
    its interval, and where the numbers come from; nothing of it is uploaded by specrun."""
    p = results.provenance
    percent = f"{p.confidence * 100:g} %"
    title = (f"{md_text(results.title)} (specrun suite `{md_text(results.suite_id)}`, "
             f"version {md_text(results.version)})")
    lines = ["## For the model's hub card", "", "<!-- paste below into the model's README.md -->", "",
             f"### {title}", "", f"| score | value | {percent} CI |", "| --- | --- | --- |"]
    for a in results.aggregates:
        partial = f", partial ({a.members} of {len(results.members)} members)" if a.partial else ""
        lines.append(f"| {AGGREGATE_LABELS[a.name]}{partial} | {a.value:.4f} | [{a.ci_low:.4f}, {a.ci_high:.4f}] |")
    for m in results.members:
        if m.value is not None:
            lines.append(f"| {md_text(m.name)} ({md_text(m.metric)}, {m.task_type}) | {m.value:.4f} | "
                         f"[{m.ci_low:.4f}, {m.ci_high:.4f}] |")
    lines += ["", f"Run {md_text(p.run)} of {md_text(p.model)} with specrun {md_text(p.specrun_version)}; intervals "
                  f"from {p.resamples} bootstrap resamples of each member's units (suite.json has every number and "
                  "the sha256 of each member's results)."]
    return lines
