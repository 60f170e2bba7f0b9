"""Published rows on the boards (`leaderboard --published DIR`): for every board whose metric's spec names an
`mteb` counterpart on that split, every model of DIR with that score, ranked with our rows. The rule: a published
number is a point (no interval, no per-unit predictions), so its row gets a rank and no rank interval, no paired
difference to the best, is never the best and takes no part in Borda or the mean across benchmarks; each of our
rows keeps its interval and gets a rank interval among the published points (`board._beside`). Each
published row carries its comparability flags (`mteb.results.comparable`); with `--published-only comparable`
flagged rows are listed, not ranked. Ties share the best rank (MTEB's `rank(method="min")`); rows of one rank are
listed by model name. The repository is read as it is: a file that cannot give the value is set aside with a
reason naming it (a note, never an error of the board), and where a model holds the task in several revisions
one is taken by the rule of `specrun.mteb.results._index.choose`, said in a note."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from specrun.board._beside import rank_beside
from specrun.board._ranking import Ranking
from specrun.board.leaderboard.model import Board, BoardRow, Leaderboard, PublishedRow
from specrun.core.errors import CompareError, SpecrunError
from specrun.core.registry import PROTOCOLS
from specrun.mteb.results import PublishedDir
from specrun.mteb.results.comparable import flags_of
from specrun.mteb.results.lookup import Published
from specrun.results.verify import Verified, find_spec
from specrun.spec.model import Spec

PUBLISHED_ONLY = ("all", "comparable")
Kept = dict[str, tuple[list[str], dict[tuple[str, str], Ranking]]]


def with_published(board: Leaderboard, runs: Sequence[Verified], published: PublishedDir,
                   note: Callable[[str], None], rankings: Kept | None = None,
                   published_only: str = "all") -> Leaderboard:
    """The leaderboard with each board's published rows ranked with ours (`rankings`: each board's joint
    bootstrap, from `board.compute(keep=...)`; without it the rows are listed unranked); a spec that cannot be
    found is a note, not an error."""
    if published_only not in PUBLISHED_ONLY:
        raise CompareError(f"--published-only {published_only}: expected all or comparable")
    first = {}
    for run in runs:
        first.setdefault(run.results.spec_id, run)
    specs = []
    for spec_board in board.specs:
        run = first.get(spec_board.spec_id)
        if run is None:  # a mean over subsets: MTEB publishes each subset's score (on the subsets' own boards)
            specs.append(spec_board)
            continue
        try:
            spec = find_spec(run.results, run.path).spec
        except SpecrunError as exc:
            note(f"{spec_board.spec_id}: no published rows ({exc.one_line()})")
            specs.append(spec_board)
            continue
        names, kept = (rankings or {}).get(spec_board.spec_id, ([], {}))
        boards = []
        for b in spec_board.boards:
            ref = spec.mteb_ref(b.metric, b.split) if b.metric in spec.metrics else None
            if ref is None:
                boards.append(b)
                continue
            found = published.every_model(ref, spec.metrics[b.metric].range)
            rows = published_rows(found, task_type_of(spec, b.metric))
            for line in published_notes(f"{spec_board.spec_id} {b.split} {b.metric}", found):
                note(line)
            if not rows:
                note(f"{spec_board.spec_id} {b.split} {b.metric}: no model in {published.root} has MTEB {ref.task} "
                     f"{ref.split} {ref.subset} {ref.score}")
            ranking = kept.get((b.split, b.metric))
            b = b.model_copy(update={"published_caveat": ref.caveat})
            boards.append(b.model_copy(update={"published": rows}) if ranking is None else
                          ranked_board(b, rows, ranking, names, published_only, spec_board.confidence))
        specs.append(spec_board.model_copy(update={"boards": boards}))
    return board.model_copy(update={"specs": specs})


def task_type_of(spec: Spec, metric: str) -> str | None:
    """MTEB's task type of the metric's protocol (its kind's prompt_task), which decides the mteb version flag."""
    kind = spec.protocols[spec.metrics[metric].protocol].kind
    return PROTOCOLS[kind].info.prompt_task if kind in PROTOCOLS else None


def published_rows(found: Published, task_type: str | None) -> list[PublishedRow]:
    """One row per model, with its comparability flags; not yet ranked."""
    rows = []
    for v in found.values:
        flags = flags_of(v, task_type)
        rows.append(PublishedRow(model=v.model, revision=v.revision, score=v.value,
                                 mteb=f"{v.task} · {v.split} · {v.subset} · {v.score}", mteb_version=v.mteb_version,
                                 file=str(v.file), dataset_revision=v.dataset_revision,
                                 flags=[f.code for f in flags], flag_reasons=[f.reason for f in flags],
                                 meta=v.meta))
    return rows


def ranked_board(b: Board, rows: list[PublishedRow], ranking: Ranking, names: list[str],
                 published_only: str, confidence: float) -> Board:
    """The board with the published points ranked with our entries (`board._beside`): a rank for each
    ranked published row, a rank and rank interval among them for each of ours; published rows by rank (rows
    left out last), then model name."""
    ranked = [i for i, r in enumerate(rows) if published_only == "all" or not r.flags]
    beside = rank_beside(np.array([rows[i].score for i in ranked]), ranking.observed, ranking.scores,
                         direction=b.direction, confidence=confidence)
    rank_of = dict(zip(ranked, (int(r) for r in beside.published_rank), strict=True))
    rows = [r.model_copy(update={"rank": rank_of.get(i)}) for i, r in enumerate(rows)]
    rows.sort(key=lambda r: (r.rank is None, r.rank or 0, r.model))
    position = {name: m for m, name in enumerate(names)}
    ours: list[BoardRow] = []
    for row in b.rows:
        m = position[row.model]
        ours.append(row.model_copy(update={"published_rank": int(beside.rank[m]),
                                           "published_rank_low": int(beside.rank_low[m]),
                                           "published_rank_high": int(beside.rank_high[m])}))
    return b.model_copy(update={"published": rows, "rows": ours, "published_only": published_only})


def published_notes(board: str, found: Published) -> list[str]:
    """What was read for one board: the counts, each file set aside and why, each revision chosen among several
    (each row's revision and file are in leaderboard.json; `external` is the revision of an `external/` folder)."""
    converted = sum(v.layout != "1.11 and later" for v in found.values)
    external = sum(v.revision == "external" for v in found.values)
    lines = [f"{board}: published: {found.n_files} files, {len(found.values)} models listed ({converted} "
             f"converted from the layout before 1.11, {external} from external/ folders), "
             f"{len(found.set_aside)} set aside"]
    lines += [f"{board}: published, set aside: {reason}" for reason in found.set_aside]
    lines += [f"{board}: published {v.model}: {v.chosen}" for v in found.values
              if " revisions (" in v.chosen]
    return lines


__all__ = ["published_notes", "with_published"]
