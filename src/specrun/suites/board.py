"""`leaderboard` of suite runs: per suite, the models ranked by each aggregate with rank intervals from the joint
bootstrap, and by MTEB's Borda count over the members.

Joint bootstrap: member i of every model is resampled with seed member_seed(suite seed, i) over the same unit
ids, so resample b draws the same units for every model (paired within a member; members on the same items share
one draw, the others are independent); the
aggregate of each model's member resamples b is its score in resample b, and `leaderboard.ranking.rank_scores`
reads ranks, rank intervals and the difference to the best from the (B, models) table, as it does per spec.

Borda as MTEB's leaderboard computes it (mteb/leaderboard/table.py, `_borda_count` and `_get_borda_rank`): per
member, a model's points are (number of models - its rank by value), ties taking the average rank; the points
are summed over members and ranked with ties at the best (minimum) rank. Points = #models below + half the
models tied with it, which is `leaderboard.ranking.borda_points`. The Borda rank interval reads the same joint
resamples: the Borda points of resample b from every member's resample b."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specrun.core.errors import CompareError
from specrun.core.markdown import md_text
from specrun.core.workspace import warn_stderr
from specrun.leaderboard.ranking import Ranking, borda_points, min_ranks, rank_interval, rank_scores
from specrun.metrics.aggregate import AGGREGATE_LABELS, aggregate_method, over_resamples, point
from specrun.outputs import SetKind, write_output_sets
from specrun.suites.joint import SuiteRun, display_labels, is_suite_json, read_suite_runs
from specrun.suites.results import read_suite_results

SUITE_BOARD_FORMAT = "specrun.suite-leaderboard/1"
SUITE_BOARD_FILES = SetKind("a suites' leaderboard", ("leaderboard.md", "leaderboard.json"))


@dataclass(frozen=True)
class Borda:
    points: np.ndarray  # (M,) observed, summed over members
    rank: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray


@dataclass(frozen=True)
class SuiteBoard:
    runs: list[SuiteRun]
    rankings: dict[str, Ranking]  # aggregate name -> its ranking
    method: str
    borda: Borda


def suite_inputs(paths: Sequence[Path]) -> list[Path] | None:
    """The suite.json named, or found below the folders named, when the inputs are suite runs; None when none
    is (a leaderboard of results.json); a mix is one line."""
    found: list[Path] = []
    plain = []
    for path in paths:
        inside = sorted(p for p in path.rglob("suite.json") if p.is_file()) if path.is_dir() else []
        if inside or (path.is_file() and is_suite_json(path)):
            found += inside or [path]
        else:
            plain.append(path)
    if found and plain:
        raise CompareError("a leaderboard ranks suite runs (suite.json) or runs (results.json), not both",
                           file=str(plain[0]))
    unique = {p.resolve(): p for p in reversed(found)}
    return list(reversed(unique.values())) or None


def borda(runs: Sequence[SuiteRun]) -> Borda:
    """MTEB's Borda count over the members (module docstring), with its rank interval over the joint resamples."""
    first = runs[0].members
    sign = 1.0 if first[0].direction == "higher" else -1.0
    observed = np.stack([[run.members[k].draws.value for run in runs] for k in range(len(first))])  # (K, M)
    resampled = np.stack([np.stack([run.members[k].draws.values for run in runs], axis=1)
                          for k in range(len(first))])  # (K, B, M)
    points = borda_points(sign * observed).sum(axis=0)
    low, high = rank_interval(min_ranks(borda_points(sign * resampled).sum(axis=0)),
                              runs[0].results.provenance.confidence)
    return Borda(points=points, rank=min_ranks(points), rank_low=low, rank_high=high)


def rank_suite(runs: list[SuiteRun]) -> SuiteBoard:
    """Every aggregate of one suite's runs ranked on the joint resamples, and the Borda count."""
    if not runs[0].members:
        raise CompareError(f"suite {runs[0].results.suite_id}: no member is scored; nothing to rank")
    p = runs[0].results.provenance
    method = aggregate_method([m.score.interval or "percentile" for m in runs[0].members])
    rankings = {}
    for aggregate in runs[0].results.aggregates:
        draws = [[m.draws for m in run.members] for run in runs]
        observed = np.array([point(aggregate.name, d) for d in draws])
        scores = np.stack([over_resamples(aggregate.name, d) for d in draws], axis=1)
        rankings[aggregate.name] = rank_scores(observed, scores, direction=runs[0].members[0].direction,
                                               confidence=p.confidence, method=method)
    return SuiteBoard(runs=runs, rankings=rankings, method=method, borda=borda(runs))


def board_json(board: SuiteBoard) -> dict:
    r = board.runs[0].results
    labels = display_labels(board.runs)
    return {"suite_id": r.suite_id, "title": r.title, "version": r.version,
            "suite_sha256": r.provenance.suite_sha256, "resamples": r.provenance.resamples,
            "confidence": r.provenance.confidence, "seed": r.provenance.seed, "interval": board.method,
            "members": [m.score.model_dump(mode="json", include={"index", "spec_id", "split", "metric"})
                        for m in board.runs[0].members],
            "models": [{"label": label, "run": run.label, "model": run.results.provenance.model,
                        "suite": str(run.path)} for run, label in zip(board.runs, display_labels(board.runs),
                                                                    strict=True)],
            "aggregates": {name: [{"model": labels[m], "score": float(k.observed[m]), "rank": int(k.rank[m]),
                                   "rank_low": int(k.rank_low[m]), "rank_high": int(k.rank_high[m]),
                                   "diff_to_best": float(k.diff[m]), "diff_low": float(k.diff_low[m]),
                                   "diff_high": float(k.diff_high[m]), "separable_from_best": bool(k.separable[m])}
                                  for m in range(len(labels))] for name, k in board.rankings.items()},
            "borda": [{"model": labels[m], "points": float(board.borda.points[m]), "rank": int(board.borda.rank[m]),
                       "rank_low": int(board.borda.rank_low[m]), "rank_high": int(board.borda.rank_high[m])}
                      for m in range(len(labels))]}


def board_markdown(board: SuiteBoard) -> str:
    r = board.runs[0].results
    percent = f"{r.provenance.confidence * 100:g} %"
    labels = [md_text(label) for label in display_labels(board.runs)]
    lines = [f"## {md_text(r.title)} (suite {md_text(r.suite_id)}, version {md_text(r.version)})", ""]
    for name, k in board.rankings.items():
        lines += [f"### {AGGREGATE_LABELS[name]}", "", f"| rank | {percent} rank interval | model | score | "
                  f"best − model | {percent} CI |", "| --- | --- | --- | --- | --- | --- |"]
        for m in np.argsort(k.rank, kind="stable"):
            lines.append(f"| {k.rank[m]} | [{k.rank_low[m]}, {k.rank_high[m]}] | {labels[m]} | {k.observed[m]:.4f} "
                         f"| {k.diff[m]:+.4f} | [{k.diff_low[m]:+.4f}, {k.diff_high[m]:+.4f}] |")
        lines.append("")
    b = board.borda
    lines += ["### Borda count over members (as MTEB ranks)", "", f"| rank | {percent} rank interval | model | "
              "points |", "| --- | --- | --- | --- |"]
    lines += [f"| {b.rank[m]} | [{b.rank_low[m]}, {b.rank_high[m]}] | {labels[m]} | {b.points[m]:g} |"
              for m in np.argsort(b.rank, kind="stable")]
    lines += ["", f"Rank intervals: {r.provenance.resamples} joint resamples; member i of every model on the same "
                  f"resampled units (seed [{r.provenance.seed}, i]; members on the same items share one draw); "
                  f"aggregates read by {board.method} intervals. Borda: per member, points = models − rank (ties: "
                  "average rank), summed over members, ranked with ties at the best rank."]
    missing = [m for m in r.members if m.status == "missing"]
    if missing:
        lines += ["", "Partial: missing for every model: " + ", ".join(md_text(m.spec_id) for m in missing) + "."]
    return "\n".join(lines) + "\n"


def build_suite_leaderboard(paths: Sequence[Path], output: Path, *, title: str | None = None,
                            published: Path | None = None, published_only: str = "all") -> list[Path]:
    """`specrun leaderboard` of suite runs: each suite's runs verified, checked together and ranked; then
    leaderboard.md and leaderboard.json written into `output` together (nothing when anything fails). With
    `published`, each suite's MTEB aggregates and Borda over the published models too (`board_published`)."""
    from specrun.mteb.results import PublishedDir
    from specrun.suites.board_published import published_section, suite_published

    if output.exists() and not output.is_dir():
        raise CompareError("the leaderboard output must be a folder", file=str(output))
    groups: dict[str, list[Path]] = {}
    for path in paths:
        results = read_suite_results(path)
        if isinstance(results, str):
            raise CompareError(results)
        groups.setdefault(results.suite_id, []).append(path)
    if published_only not in ("all", "comparable"):
        raise CompareError(f"--published-only {published_only}: expected all or comparable")
    published_dir = PublishedDir(published) if published is not None else None
    boards = [rank_suite(read_suite_runs(group)) for group in groups.values()]
    heading = title or "specrun leaderboard of suites"
    sections = [suite_published(b.runs, published_dir, b.method, published_only) if published_dir else None
                for b in boards]
    text = f"# {md_text(heading)}\n\n" + "\n".join(
        board_markdown(b) + ("\n".join(published_section(p, f"{b.runs[0].results.provenance.confidence * 100:g} %"))
                             if p is not None else "") for b, p in zip(boards, sections, strict=True))
    document = {"format": SUITE_BOARD_FORMAT, "title": heading, "suites": [
        board_json(b) | ({"published": p} if p is not None else {}) for b, p in zip(boards, sections, strict=True)]}
    for p in sections:
        for line in (p or {}).get("notes", []):
            warn_stderr(line)
    files = {"leaderboard.md": text, "leaderboard.json": json.dumps(document, indent=1, ensure_ascii=False) + "\n"}
    write_output_sets([(output, files, SUITE_BOARD_FILES)])
    return [output / name for name in files]
