"""A spec's subsets on the leaderboard as MTEB ranks a task of several hf_subsets: one benchmark, scored by the mean
over its subsets (mteb/benchmarks/_create_table.py averages a task's subsets before anything is ranked), so the
Borda count and the mean across benchmarks count the task once, not once per subset.

Each subset's own boards stay on the page (`part_of` names the mean they count through). The mean's board is
computed as the run's `subsets.json` computes it (`board.subsets.mean_over_subsets`): every subset resampled over
its own units on the seed [seed, its place in the spec's subsets] (independent), the mean of each joint resample
read by the subsets' common interval method; ranks read those resamples as every board does
(`board._ranking.rank_scores`). An entry (a model configuration) lacking one of the subsets any entry ran has no
mean: it is absent from that benchmark (below every model that has it, as a model without a run of a spec). Where
the spec file is not found (the subsets' order, hence their seeds, is unknown), the subsets stay benchmarks of
their own, and a line says so."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specrun.board._ranking import Ranking, rank_scores
from specrun.board.joint import aggregate_method, member_draws, over_resamples, point
from specrun.board.leaderboard.model import Board, SpecBoard, ranked_board
from specrun.core.errors import SpecrunError
from specrun.metrics import METRICS, intervals
from specrun.results.verify import Verified, find_spec

Entries = Mapping[tuple[Any, ...], Sequence[Verified]]  # an entry's identity -> its runs of one spec


@dataclass(frozen=True)
class SubsetGroup:
    """The subsets of one spec file present on the board, with what their seeds and the mean's heading need."""

    parent_id: str
    title: str
    order: list[str]  # the spec's subsets, in its order: subset i resamples on [seed, i]
    members: dict[str, str]  # subset spec id -> its subset name, in the spec's order


def subset_groups(first_runs: Mapping[str, Verified], note: Callable[[str], None]) -> list[SubsetGroup]:
    """The spec files two or more of whose subsets are on the board (keyed by each spec id's first run)."""
    found: dict[str, SubsetGroup] = {}
    versions: dict[str, set[str]] = {}
    for spec_id, run in first_runs.items():
        subset = run.results.provenance.subset
        if subset is None:
            continue
        try:
            loaded = find_spec(run.results, run.path)
        except (SpecrunError, OSError):
            note(f"{spec_id}: its spec file is not found, so the order of its subsets (their seeds) is unknown: "
                 "its subsets are ranked as benchmarks of their own")
            continue
        parent = loaded.parent
        assert parent is not None and parent.subsets is not None  # a run of a subset is found as one
        group = found.setdefault(parent.id, SubsetGroup(parent.id, parent.title, list(parent.subsets), {}))
        group.members[spec_id] = subset
        versions.setdefault(parent.id, set()).add(run.results.provenance.spec_sha256)
    for parent_id, shas in versions.items():
        if len(shas) > 1 and len(found[parent_id].members) > 1:  # its subsets' order (their seeds) may differ
            note(f"{parent_id}: its subsets' runs used {len(shas)} versions of the spec file, so they are ranked "
                 "as benchmarks of their own (run them with one version for their mean)")
            del found[parent_id]
    return [SubsetGroup(g.parent_id, g.title, g.order, dict(sorted(g.members.items(),
                                                                 key=lambda item: g.order.index(item[1]))))
            for g in found.values() if len(g.members) > 1]


def _entry_board(group: SubsetGroup, entries: Mapping[str, Entries], complete: Sequence[tuple[Any, ...]],
                 split: str, metric_id: str) -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]], str]:
    """Each complete entry's mean over the subsets (observed, (B, M) resamples, its own interval) and the method."""
    observed, resampled, own, methods = [], [], [], []
    for ident in complete:
        draws = []
        for spec_id, subset in group.members.items():
            run = entries[spec_id][ident][0]
            info = run.results.metrics[metric_id]
            score = run.results.scores[split][metric_id]
            u = run.results.provenance.uncertainty
            arrays = run.units[(split, info.protocol)][1]
            try:
                draws.append(member_draws(info.metric, {name: arrays[name] for name in METRICS[info.metric].inputs},
                                          resamples=u.resamples, seed=u.seed, index=group.order.index(subset),
                                          weight=1.0, task_type=""))
            except SpecrunError as exc:
                raise exc.prefixed(f"{group.parent_id} (mean over subsets), {spec_id} {split} {metric_id}") from None
            methods.append(score.interval)
        observed.append(point("mean_task", draws))
        resampled.append(over_resamples("mean_task", draws))
    method = aggregate_method(methods)
    confidence = next(iter(entries[next(iter(group.members))].values()))[0].results.provenance.uncertainty.confidence
    scores = np.stack(resampled, axis=1)
    own = [intervals.interval(method, value, scores[:, m], confidence) for m, value in enumerate(observed)]
    return np.array(observed), scores, own, method


def subsets_board(group: SubsetGroup, entries: Mapping[str, Entries], names: Mapping[tuple[Any, ...], str],
                  headline: tuple[str, str]) -> tuple[SpecBoard, Ranking, list[tuple[Any, ...]]] | str:
    """The mean over the group's subsets as one benchmark (a board per split and metric every subset scored; the
    subsets' headline is its headline), its headline ranking and the entries it ranks; or why there is none."""
    idents = [set(entries[spec_id]) for spec_id in group.members]
    complete = sorted(set.intersection(*idents), key=lambda ident: names[ident])
    if not complete:
        return f"no model ran every one of its subsets on the board ({', '.join(group.members)})"
    first = entries[next(iter(group.members))][complete[0]][0].results
    u = first.provenance.uncertainty
    boards, head = [], None
    for split, scores in first.scores.items():
        for metric_id in first.metrics:
            if metric_id not in scores or any(metric_id not in entries[s][complete[0]][0].results.scores.get(split, {})
                                              for s in group.members):
                continue
            observed, resampled, own, method = _entry_board(group, entries, complete, split, metric_id)
            info = first.metrics[metric_id]
            ranking = rank_scores(observed, resampled, direction=info.direction, confidence=u.confidence,
                                  method=method)
            paths = [[str(entries[s][i][0].path) for s in group.members] for i in complete]
            boards.append(_board(ranking, [names[i] for i in complete], paths, own, split, metric_id, info.label,
                                 info.direction, (split, metric_id) == headline, len(group.members)))
            if (split, metric_id) == headline:
                head = ranking
    if head is None:
        return f"its subsets do not all score the headline metric ({headline[0]} {headline[1]})"
    boards.sort(key=lambda board: not board.headline)
    return SpecBoard(kind="subsets", spec_id=group.parent_id, title=f"{group.title} (mean over subsets)",
                     resamples=u.resamples, confidence=u.confidence, seed=u.seed,
                     unit={"subsets": "subsets' own units, subset i on the seed [seed, i]"}, boards=boards,
                     members=list(group.members),
                     headline_choice="its subsets' headline metric, averaged over the subsets"), head, complete


def _board(ranking: Ranking, labels: Sequence[str], paths: Sequence[list[str]], own: Sequence[tuple[float, float]],
           split: str, metric_id: str, label: str, direction: str, headline: bool, subsets: int) -> Board:
    def row(m: int) -> dict[str, Any]:
        return {"results": paths[m][0], "variant_results": paths[m], "score": float(ranking.observed[m]),
                "ci_low": own[m][0], "ci_high": own[m][1], "n": subsets}

    return ranked_board(ranking, labels, row, split=split, metric=metric_id, metric_label=label,
                        direction=direction, headline=headline, n_units=subsets)
