"""`leaderboard` of suite runs: per suite, the models ranked by each aggregate with rank intervals from the joint
bootstrap, and by MTEB's Borda count over the members. A suite is a benchmark on the one leaderboard (the same
model, Markdown, JSON and HTML page as specs'): a board per aggregate, and across suites the same Borda and mean
over each suite's headline aggregate (its first) as across specs.

Joint bootstrap: member i of every model is resampled with seed member_seed(suite seed, i) over the same unit
ids, so resample b draws the same units for every model (paired within a member; members on the same items share
one draw, the others are independent); the
aggregate of each model's member resamples b is its score in resample b, and `board._ranking.rank_scores`
reads ranks, rank intervals and the difference to the best from the (B, models) table, as it does per spec.

Borda as MTEB's leaderboard computes it (mteb/leaderboard/table.py, `_borda_count` and `_get_borda_rank`): per
member, a model's points are (number of models - its rank by value), ties taking the average rank; the points
are summed over members and ranked with ties at the best (minimum) rank. Points = #models below + half the
models tied with it, which is `board._ranking.borda_points`. The Borda rank interval reads the same joint
resamples: the Borda points of resample b from every member's resample b."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specrun.board._ranking import Ranking, borda_points, min_ranks, rank_interval, rank_scores
from specrun.board.joint import aggregate_interval, aggregate_method, over_resamples, point
from specrun.board.leaderboard.build import Across, across_benchmarks
from specrun.board.leaderboard.model import (
    META_COLUMNS,
    Board,
    BordaRow,
    Leaderboard,
    ModelEntry,
    SpecBoard,
    ranked_board,
)
from specrun.board.leaderboard.render import render_html, render_markdown
from specrun.board.suites.runs import SuiteRun, is_suite_json, read_suite_runs
from specrun.core.errors import CompareError
from specrun.core.types import AGGREGATE_LABELS
from specrun.core.workspace import warn_stderr
from specrun.outputs import SetKind, write_output_sets
from specrun.results import IDENTITY_FIELDS, Results, run_identity, run_labels
from specrun.suites.results import read_suite_results

SUITE_BOARD_FILES = SetKind("a suites' leaderboard", ("leaderboard.md", "leaderboard.json", "leaderboard.html"))


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


def _board(board: SuiteBoard, name: str, ranking: Ranking, names: Sequence[str], headline: bool) -> Board:
    """One aggregate's board, each row with its run's own interval of the aggregate."""
    def row(m: int) -> dict[str, Any]:  # the interval recomputed from the members' draws, never suite.json's
        run = board.runs[m]
        _, low, high = aggregate_interval(name, [member.draws for member in run.members],
                                          run.results.provenance.confidence, board.method)
        return {"results": str(run.path), "score": float(ranking.observed[m]), "ci_low": low, "ci_high": high,
                "n": len(run.members)}

    return ranked_board(ranking, names, row, split="members", metric=name, metric_label=AGGREGATE_LABELS[name],
                        direction=board.runs[0].members[0].direction, headline=headline,
                        n_units=len(board.runs[0].members))


def suite_spec_board(board: SuiteBoard, names: Sequence[str], published: dict | None = None) -> SpecBoard:
    """One suite as a benchmark of the leaderboard: a board per aggregate (the first is its headline) and the
    members' Borda count."""
    r = board.runs[0].results
    p = r.provenance
    b = board.borda
    borda = [BordaRow(model=names[m], points=float(b.points[m]), rank=int(b.rank[m]), rank_low=int(b.rank_low[m]),
                      rank_high=int(b.rank_high[m])) for m in sorted(range(len(names)), key=lambda m: (b.rank[m],
                                                                                                     names[m]))]
    boards = [_board(board, name, ranking, names, headline=k == 0)
              for k, (name, ranking) in enumerate(board.rankings.items())]
    missing = [m.spec_id for m in r.members if m.status == "missing"]
    return SpecBoard(kind="suite", spec_id=r.suite_id, title=f"{r.title} (version {r.version})",
                     resamples=p.resamples, confidence=p.confidence, seed=p.seed,
                     unit={"members": "members' own units, member i of every model on the same draw"},
                     boards=boards, borda=borda, suite_published=published,
                     headline_choice="the suite's first aggregate" + (
                         f"; partial: missing for every model: {', '.join(missing)}" if missing else ""),
                     members=[f"{m.score.spec_id} {m.score.split} {m.score.metric}" for m in board.runs[0].members])


def _entries(boards: Sequence[SuiteBoard]) -> tuple[list[tuple[Any, ...]], list[str], list[ModelEntry]]:
    """Every model configuration across the suites (a suite run's identity: its first scored member's run's),
    labelled once for the whole leaderboard, with its metadata."""
    idents: dict[tuple[Any, ...], Results] = {}
    for board in boards:
        seen: dict[tuple[Any, ...], Path] = {}
        for run in board.runs:
            results = run.members[0].verified.results
            ident = run_identity(results)
            if ident in seen:  # one row a configuration, as a spec's board refuses it (spec_entries)
                raise CompareError(f"suite {run.results.suite_id}: {run.path} and {seen[ident]} are runs of the same "
                                   "model configuration; pass one of them")
            seen[ident] = run.path
            idents.setdefault(ident, results)
    names = run_labels(list(idents))
    models = []
    for (ident, results), label in zip(idents.items(), names, strict=True):
        meta = results.provenance.model_meta
        models.append(ModelEntry(label=label, name=ident[0], **dict(zip(IDENTITY_FIELDS, ident[1:], strict=True)),
                                 **({n: getattr(meta, n) for n in META_COLUMNS} if meta is not None else {})))
    return list(idents), names, models


def suites_leaderboard(boards: Sequence[SuiteBoard], title: str,
                       published: Sequence[dict | None]) -> Leaderboard:
    """The suites ranked as the leaderboard ranks specs: each a benchmark, and across them the Borda count and
    mean of their headline aggregates (a model missing a suite counts as below every model that has it)."""
    idents, names, models = _entries(boards)
    specs, counted = [], Across(len(idents))
    for board, section in zip(boards, published, strict=True):
        columns = [idents.index(run_identity(run.members[0].verified.results)) for run in board.runs]
        specs.append(suite_spec_board(board, [names[c] for c in columns], section))
        counted.add(columns, next(iter(board.rankings.values())))
    return Leaderboard(title=title, models=models, specs=specs, overall=across_benchmarks(specs, counted, names))


def build_suite_leaderboard(paths: Sequence[Path], output: Path, *, title: str | None = None,
                            published: Path | None = None, published_only: str = "all") -> list[Path]:
    """`specrun leaderboard` of suite runs: each suite's runs verified, checked together and ranked; then
    leaderboard.md, .json and .html written into `output` together (nothing when anything fails), the very files
    a leaderboard of specs writes. With `published`, each suite's MTEB aggregates and Borda over the published
    models too (`board.suites.published`)."""
    from specrun.board.suites.published import suite_published
    from specrun.mteb.results import PublishedDir

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
    idents, names, _ = _entries(boards)  # the board's labels, across every suite, for the published sections too
    sections = [suite_published(b.runs, published_dir, b.method, published_only, labels=[
        names[idents.index(run_identity(run.members[0].verified.results))] for run in b.runs])
        if published_dir else None for b in boards]
    for section in sections:
        for line in (section or {}).get("notes", []):
            warn_stderr(line)
    board = suites_leaderboard(boards, title or "specrun leaderboard of suites", sections)
    board = Leaderboard.model_validate_json(board.model_dump_json())  # what is written is what validates
    files = {"leaderboard.md": render_markdown(board), "leaderboard.json": board.model_dump_json(indent=2) + "\n",
             "leaderboard.html": render_html(board)}
    write_output_sets([(output, files, SUITE_BOARD_FILES)])
    return [output / name for name in files]
