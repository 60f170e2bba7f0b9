"""The leaderboard built from verified runs: runs found and checked against each other (the same items, the same
bootstrap settings), grouped into boards, ranked (`ranking`) and written as Markdown, JSON and HTML."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from specrun.board._ranking import (
    OverallRanking,
    PairedStatistic,
    Ranking,
    board_scores,
    combined,
    rank_overall,
    rank_scores,
)
from specrun.board.leaderboard._inputs import check_same_items, find_results, full_runs
from specrun.board.leaderboard._subsets import SubsetGroup, subset_groups, subsets_board
from specrun.board.leaderboard.model import (
    META_COLUMNS,
    Leaderboard,
    ModelEntry,
    Overall,
    OverallRow,
    SpecBoard,
    ranked_board,
)
from specrun.board.leaderboard.render import render_html, render_markdown
from specrun.core.errors import CompareError, SpecrunError
from specrun.core.files import write_atomic
from specrun.core.settings import PROMPT_FLAGS
from specrun.core.workspace import warn_stderr
from specrun.metrics import METRICS
from specrun.metrics.estimate import n_runs
from specrun.metrics.resampling import percentile_interval
from specrun.results import (
    IDENTITY_FIELDS,
    ModelProvenance,
    Results,
    run_identity,
    run_labels,
)
from specrun.results.verify import Verified, check_against_spec, find_spec, load_verified
from specrun.spec.model import Spec

MAIN_DECLARED = "the spec's main metric (its `mteb` counterpart's `main: true`)"


def headline(results: Results, spec: Spec | None = None) -> tuple[str, str, str]:
    """The (split, metric id) a spec contributes across specs, and why: the metric the spec declares its main one
    (`mteb.main`), on the split of its counterpart; where it declares none (or is not found), its first metric on
    `test` if scored, else on its last scored split, and the reason says so. A mean of one spec's Pearson with
    other specs' Spearmans is what a silent first metric gave."""
    if spec is not None:
        mains = [(split, m) for m, metric in spec.metrics.items() if metric.mteb and metric.mteb.main
                 for split, _ in spec.mteb_cells(m)]
        scored = [(split, m) for split, m in mains if m in results.scores.get(split, {})]
        if scored:
            split, metric_id = next((key for key in scored if key[0] == "test"), scored[0])
            return split, metric_id, MAIN_DECLARED
    split = "test" if "test" in results.scores else list(results.scores)[-1]
    why = ("the spec declares no main metric (no `mteb` counterpart with `main: true` on a scored split): its first "
           "metric" if spec is not None else "the spec was not found (its main metric is unknown): its first metric")
    return split, next(m for m in results.metrics if m in results.scores[split]), why


def spec_of(run: Verified) -> Spec | None:
    """The spec a run used, found by the sha256 it records, and the run checked against it (labels, direction,
    ranges: an edit is refused); None where it is not found (no longer loadable)."""
    try:
        loaded = find_spec(run.results, run.path)
    except (SpecrunError, OSError):
        warn_stderr(f"{run.path}: its spec was not found here; its labels and ranges are the file's, checked "
                    "against the metric registry only (run from the folder the run was made in)")
        return None
    check_against_spec(run, loaded)
    return loaded.spec


VARIANT_MODES = ("each", "worst", "mean")


def entry_identity(results: Results, prompt_variants: str) -> tuple[Any, ...]:
    """A run's row: its identity, or with --prompt-variants worst|mean its identity less the prompts (every
    prompt variant of one model configuration is one row)."""
    ident = run_identity(results)
    if prompt_variants == "each":
        return ident
    defaults = {name: ModelProvenance.model_fields[name].default for name in PROMPT_FLAGS}
    return (ident[0], *(defaults.get(name, value) for name, value in zip(IDENTITY_FIELDS, ident[1:], strict=True)))


def _entry_row(ranking: Ranking, runs: Sequence[Verified], m: int, split: str, metric_id: str,
               confidence: float) -> dict[str, Any]:
    """An entry's score, interval, n and results: its run's; a model's variants reduced to their worst or mean get
    the interval of that statistic."""
    score = runs[0].results.scores[split][metric_id]
    if len(runs) > 1:  # the entry's statistic is its variants' worst or mean: its own interval
        low, high = percentile_interval(ranking.scores[:, m], confidence)
        score = score.model_copy(update={"value": float(ranking.observed[m]), "ci_low": low, "ci_high": high})
    return {"results": str(runs[0].path), "variant_results": [str(run.path) for run in runs] if len(runs) > 1 else [],
            "score": score.value, "ci_low": score.ci_low, "ci_high": score.ci_high, "n": score.n}


def board_method(runs: Sequence[Verified], split: str, metric_id: str, combined_variants: bool) -> str:
    """The interval method every run's score of this board names (they agree: one spec, one version); ranks read
    centred_t_runs as centred: its t floor widens one score's interval, from runs ranks do not read."""
    methods = {run.results.scores[split][metric_id].interval for run in runs}
    if len(methods) > 1:
        raise CompareError(f"{runs[0].results.spec_id} {split} {metric_id}: the runs' intervals were read by "
                           f"different methods ({', '.join(sorted(methods))}); refusing to rank them")
    method = methods.pop()
    if method == "centred_t_runs":
        return "centred"
    if method == "bca" and combined_variants:
        raise CompareError(f"{runs[0].results.spec_id} {split} {metric_id}: a bca interval of prompt variants "
                           "reduced to their worst or mean is not computed (it has no jackknife); use "
                           "--prompt-variants each, or another interval method in the spec")
    return method


def metric_ranking(runs: Sequence[Verified], positions: Sequence[Sequence[int]], split: str, metric_id: str,
                   prompt_variants: str = "each") -> Ranking:
    """One metric's ranking of the runs (entries: one run, or a model's prompt variants at `positions` reduced to
    their worst or mean), from the joint resamples of the runs' own units; runs holding different numbers of fits
    or random runs are refused."""
    first = runs[0].results
    u, info = first.provenance.uncertainty, first.metrics[metric_id]
    metric = METRICS[info.metric]
    key = (split, info.protocol)
    models = [[np.asarray(run.units[key][1][name], dtype=np.float64) for name in metric.inputs] for run in runs]
    runs_held = {n_runs(metric, data) for data in models}
    if len(runs_held) > 1:
        raise CompareError(f"{first.spec_id} {split} {metric_id}: the runs hold different numbers of fits "
                           f"or random runs ({sorted(runs_held)}); refusing to rank them")
    method = board_method(runs, split, metric_id, combined_variants=prompt_variants != "each")
    observed, resampled = board_scores(metric.statistic, models, resamples=u.resamples, seed=u.seed,
                                       what=f"{first.spec_id} {split} {metric_id}", n_runs=runs_held.pop())
    if prompt_variants != "each":
        observed = combined(observed, positions, prompt_variants, info.direction)
        resampled = combined(resampled, positions, prompt_variants, info.direction)
    return rank_scores(observed, resampled, direction=info.direction, confidence=u.confidence, method=method,
                       paired=PairedStatistic(metric.statistic, models) if method == "bca" else None)


def spec_board(groups: Sequence[Sequence[Verified]], names: Sequence[str],
               prompt_variants: str = "each", spec: Spec | None = None,
               keep: dict[tuple[str, str], Ranking] | None = None) -> tuple[SpecBoard, Ranking]:
    """Every board of one spec (an entry: one run, or a model's prompt variants reduced to their worst or mean);
    returns the headline board's ranking too, for the across-spec level; `keep` gets every board's ranking by
    (split, metric id), entries in input order (what published points are ranked against)."""
    runs = [run for group in groups for run in group]
    positions, start = [], 0
    for group in groups:
        positions.append(list(range(start, start + len(group))))
        start += len(group)
    first = runs[0].results
    u = first.provenance.uncertainty
    head_split, head_metric, why = headline(first, spec)
    head = (head_split, head_metric)
    boards, head_ranking = [], None
    for split, scores in first.scores.items():
        for metric_id in first.metrics:
            if metric_id not in scores:
                continue
            info = first.metrics[metric_id]
            key = (split, info.protocol)
            ranking = metric_ranking(runs, positions, split, metric_id, prompt_variants)
            boards.append(ranked_board(
                ranking, names, lambda m, r=ranking, s=split, i=metric_id: _entry_row(r, groups[m], m, s, i,
                                                                                     u.confidence),
                split=split, metric=metric_id, metric_label=info.label, direction=info.direction,
                headline=(split, metric_id) == head, n_units=len(runs[0].units[key][0])))
            if (split, metric_id) == head:
                head_ranking = ranking
            if keep is not None:
                keep[(split, metric_id)] = ranking
    boards.sort(key=lambda board: not board.headline)
    assert head_ranking is not None
    return SpecBoard(spec_id=first.spec_id, title=first.title, resamples=u.resamples, confidence=u.confidence,
                     seed=u.seed, unit=dict(u.unit), boards=boards, headline_choice=why), head_ranking


@dataclass(frozen=True)
class Labels:
    """Every row of the board (an entry: a model configuration, or with --prompt-variants worst|mean its prompt
    variants together), its label, and the full label of each variant it stands for."""

    idents: list[tuple[Any, ...]]
    names: list[str]
    variants_of: dict[tuple[Any, ...], list[str]]  # entry -> the full labels of its runs' configurations
    full_labels: dict[tuple[Any, ...], str]  # a run's own configuration -> its label

    @classmethod
    def of(cls, runs: Sequence[Verified], prompt_variants: str) -> Labels:
        idents = list(dict.fromkeys(entry_identity(run.results, prompt_variants) for run in runs))
        names = run_labels(idents)
        own = list(dict.fromkeys(run_identity(run.results) for run in runs))
        full_labels = dict(zip(own, run_labels(own), strict=True))
        variants_of: dict[tuple[Any, ...], list[str]] = {ident: [] for ident in idents}
        for run in runs:
            label = full_labels[run_identity(run.results)]
            if label not in variants_of[entry_identity(run.results, prompt_variants)]:
                variants_of[entry_identity(run.results, prompt_variants)].append(label)
        if prompt_variants != "each":
            names = [f"{name} ({prompt_variants} of {len(variants_of[ident])} prompt variants)"
                     if len(variants_of[ident]) > 1 else name for name, ident in zip(names, idents, strict=True)]
        return cls(idents=idents, names=names, variants_of=variants_of, full_labels=full_labels)

    def of_entry(self, ident: tuple[Any, ...]) -> str:
        return self.names[self.idents.index(ident)]


class Across:
    """What the across-benchmark level reads: per counted benchmark, every entry's headline value (NaN: absent)
    and its resamples."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self.observed: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []

    def add(self, columns: Sequence[int], ranking: Ranking) -> None:
        self.observed.append(np.full(self.entries, np.nan))
        self.observed[-1][columns] = ranking.observed
        self.scores.append(np.full((len(ranking.scores), self.entries), np.nan))
        self.scores[-1][:, columns] = ranking.scores


def subset_mean(group: SubsetGroup, by_spec: Mapping[str, Sequence[Verified]],
                entries_of: Mapping[str, Mapping[tuple[Any, ...], Sequence[Verified]]],
                labels: Labels) -> tuple[SpecBoard, Ranking, list[int]] | None:
    """The mean over a spec's subsets as one benchmark (`subsets`), its headline ranking and its entries' columns;
    None, said on stderr, where it has none (its subsets are then ranked as benchmarks of their own)."""
    first = by_spec[next(iter(group.members))][0]
    split, metric_id, _ = headline(first.results, spec_of(first))
    made = subsets_board(group, entries_of, dict(zip(labels.idents, labels.names, strict=True)), (split, metric_id))
    if isinstance(made, str):
        warn_stderr(f"{group.parent_id}: {made}, so its subsets are ranked as benchmarks of their own")
        return None
    board, ranking, complete = made
    return board, ranking, [labels.idents.index(ident) for ident in complete]


def model_entries(runs: Sequence[Verified], labels: Labels, prompt_variants: str) -> list[ModelEntry]:
    """Every row's model: its identity fields and its metadata, read from its first run that records any (the
    weights are the entry's identity)."""
    metas: dict[tuple[Any, ...], dict[str, Any]] = {}
    for run in runs:
        meta = run.results.provenance.model_meta
        if meta is not None:
            metas.setdefault(entry_identity(run.results, prompt_variants),
                             {name: getattr(meta, name) for name in META_COLUMNS})
    return [ModelEntry(label=label, name=ident[0], prompt_variants=labels.variants_of[ident]
                       if prompt_variants != "each" else [], **dict(zip(IDENTITY_FIELDS, ident[1:], strict=True)),
                       **metas.get(ident, {}))
            for ident, label in zip(labels.idents, labels.names, strict=True)]


def across_benchmarks(spec_boards: Sequence[SpecBoard], counted: Across, names: Sequence[str],
                      resample_specs: bool = False, prompt_variants: str = "each") -> Overall:
    """The ranking across benchmarks (Borda and the mean, with rank intervals) of the benchmarks counted (a spec
    counted through its subsets' mean is not), in `counted`'s order: specs', subsets' means' and suites' alike."""
    counting = [board for board in spec_boards if board.part_of is None]
    directions = [board.boards[0].direction for board in counting]
    confidence = max(board.confidence for board in counting)
    overall = rank_overall(counted.observed, counted.scores, directions, confidence=confidence,
                           resample_specs=resample_specs, seeds=[board.seed for board in counting])
    return Overall(specs=[board.spec_id for board in counting], resamples=min(len(s) for s in counted.scores),
                   confidence=confidence, resample_specs=resample_specs,
                   mean_direction=directions[0] if len(set(directions)) == 1 else None,
                   rows=overall_rows(overall, names, counted.observed), prompt_variants=prompt_variants)


def compute(runs: Sequence[Verified], *, title: str = "specrun leaderboard", resample_specs: bool = False,
            progress: Callable[[str], None] | None = None, prompt_variants: str = "each",
            keep: dict[str, tuple[list[str], dict[tuple[str, str], Ranking]]] | None = None) -> Leaderboard:
    """The whole leaderboard from verified runs (any specs, any models): checks, labels, boards, overall. With
    prompt_variants worst|mean, a model's prompt variants (runs that differ in their prompts only) are one row,
    scored by their worst or mean variant in every resample."""
    if prompt_variants not in VARIANT_MODES:
        raise CompareError(f"--prompt-variants {prompt_variants}: expected one of {', '.join(VARIANT_MODES)}")
    by_spec: dict[str, list[Verified]] = {}
    for run in runs:
        by_spec.setdefault(run.results.spec_id, []).append(run)
    labels = Labels.of(runs, prompt_variants)
    # every check before any board is computed (and any progress printed)
    entries_of = {spec_id: spec_entries(spec_id, by_spec[spec_id], labels, prompt_variants)
                  for spec_id in sorted(by_spec)}
    groups = subset_groups({s: by_spec[s][0] for s in entries_of}, warn_stderr) if prompt_variants == "each" else []
    means = {g.parent_id: (g, made) for g in groups if (made := subset_mean(g, by_spec, entries_of, labels))}
    part_of = {spec_id: parent for parent, (g, _) in means.items() for spec_id in g.members}
    if prompt_variants != "each" and any(run.results.provenance.subset for run in runs):
        warn_stderr(f"--prompt-variants {prompt_variants}: a spec's subsets are ranked as benchmarks of their own "
                    "(their mean is ranked with --prompt-variants each)")
    counted = Across(len(labels.idents))
    spec_boards = []
    for spec_id, entries in entries_of.items():
        ordered = sorted(entries, key=labels.of_entry)  # ties for best: first label
        kept: dict[tuple[str, str], Ranking] = {}
        board, ranking = spec_board([entries[ident] for ident in ordered], [labels.of_entry(i) for i in ordered],
                                    prompt_variants, spec_of(by_spec[spec_id][0]), kept)
        if keep is not None:  # each board's ranking, its entries' labels in input order
            keep[spec_id] = ([labels.of_entry(i) for i in ordered], kept)
        if spec_id in part_of:  # counted through the mean over its subsets (added below)
            board = board.model_copy(update={"part_of": part_of[spec_id]})
        else:
            counted.add([labels.idents.index(ident) for ident in ordered], ranking)
        spec_boards.append(board)
        if progress is not None:
            head = board.boards[0]
            progress(f"{spec_id}: {len(ordered)} model(s) on {head.split} {head.metric}; best {head.best}, "
                     f"not separable from it: {len(head.not_separable)}")
    for _, (board, ranking, columns) in means.values():
        spec_boards.append(board)
        counted.add(columns, ranking)
    return Leaderboard(title=title, models=model_entries(runs, labels, prompt_variants), specs=spec_boards,
                       overall=across_benchmarks(spec_boards, counted, labels.names, resample_specs, prompt_variants))


def spec_entries(spec_id: str, group: Sequence[Verified], labels: Labels,
                 prompt_variants: str) -> dict[tuple[Any, ...], list[Verified]]:
    """One spec's runs as board entries, checked: the same items as its first run, one run per configuration, and
    (worst|mean of variants) the same variants as on every other spec."""
    seen: dict[tuple[Any, ...], Verified] = {}
    for run in group:
        check_same_items(group[0], run)
        ident = run_identity(run.results)
        if ident in seen:
            raise CompareError(f"{spec_id}: {run.path} and {seen[ident].path} are runs of the same model "
                               f"configuration ({labels.full_labels[ident]}); pass one of them")
        seen[ident] = run
    entries: dict[tuple[Any, ...], list[Verified]] = {}
    for run in group:
        entries.setdefault(entry_identity(run.results, prompt_variants), []).append(run)
    for ident, members in entries.items():  # a row is the worst (mean) of the same variants on every spec
        here = [labels.full_labels[run_identity(run.results)] for run in members]
        if sorted(here) != sorted(labels.variants_of[ident]):
            missing = sorted(set(labels.variants_of[ident]) - set(here))
            raise CompareError(f"{spec_id}: --prompt-variants {prompt_variants} ranks {labels.of_entry(ident)} by "
                               f"the same variants on every spec, but this spec lacks {'; '.join(missing)}; run "
                               "them on it, or pass the runs of the variants it has")
    return entries


def overall_rows(overall: OverallRanking, names: Sequence[str], observed: Sequence[np.ndarray]) -> list[OverallRow]:
    """The across-spec rows, by Borda rank then label: Borda with its rank interval, the mean where defined."""
    present = np.stack([np.isfinite(o) for o in observed]).sum(axis=0)
    rows = []
    for m in sorted(range(len(names)), key=lambda m: (overall.borda_rank[m], names[m])):
        has_mean = overall.mean is not None and bool(np.isfinite(overall.mean[m]))
        rows.append(OverallRow(
            model=names[m], specs=int(present[m]), borda=float(overall.borda[m]),
            borda_rank=int(overall.borda_rank[m]), borda_rank_low=int(overall.borda_low[m]),
            borda_rank_high=int(overall.borda_high[m]),
            mean=float(overall.mean[m]) if has_mean else None,  # type: ignore[index]
            mean_rank=int(overall.mean_rank[m]) if has_mean else None,  # type: ignore[index]
            mean_rank_low=int(overall.mean_low[m]) if has_mean else None,  # type: ignore[index]
            mean_rank_high=int(overall.mean_high[m]) if has_mean else None))  # type: ignore[index]
    return rows


def build_leaderboard(paths: list[Path], output: Path, *, title: str | None = None,
                      console: Console | None = None, resample_specs: bool = False,
                      prompt_variants: str = "each", published: Path | None = None,
                      published_only: str = "all") -> list[Path]:
    """`specrun leaderboard`: verify every run, rank, and write leaderboard.md, .json and .html into `output`
    (each atomically, and only once everything is computed); with `published`, MTEB's published rows ranked with
    ours (`published_only` comparable: flagged ones listed, not ranked)."""
    from specrun.board.leaderboard.facets import with_facets
    from specrun.board.leaderboard.published import with_published
    from specrun.mteb.results import PublishedDir

    if output.exists() and not output.is_dir():
        raise CompareError("the leaderboard output must be a folder", file=str(output))
    published_dir = PublishedDir(published) if published is not None else None
    progress = (lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True)) \
        if console is not None else None
    runs = full_runs([load_verified(path) for path in find_results(paths)], paths)
    rankings: dict[str, tuple[list[str], dict[tuple[str, str], Ranking]]] = {}
    board = compute(runs, title=title or "specrun leaderboard", resample_specs=resample_specs,
                    prompt_variants=prompt_variants, progress=progress, keep=rankings)
    if published_dir is not None:
        board = with_published(board, runs, published_dir, progress or (lambda line: None), rankings,
                               published_only)
    board = with_facets(board, runs)  # what the page's filters read: languages, task types, domains
    board = Leaderboard.model_validate_json(board.model_dump_json())  # what is written is what validates
    files = {"leaderboard.md": render_markdown(board), "leaderboard.json": board.model_dump_json(indent=2) + "\n",
             "leaderboard.html": render_html(board)}
    written = []
    for name, text in files.items():
        write_atomic(output / name, text)
        written.append(output / name)
    return written
