"""Published rows on the boards (`leaderboard --published DIR`): for every board whose metric's spec names an
`mteb` counterpart on that split, every model of DIR with that score. The rule: they are listed beside the ranked
rows, not ranked. A published number has no interval and no per-unit predictions, so it has no rank interval and
no paired difference to the best; it gets no rank, is never the best, and takes no part in Borda or the mean."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from specrun.core.errors import SpecrunError
from specrun.leaderboard.model import Leaderboard, PublishedRow
from specrun.published import PublishedDir
from specrun.results.verify import Verified, find_spec


def with_published(board: Leaderboard, runs: Sequence[Verified], published: PublishedDir,
                   note: Callable[[str], None]) -> Leaderboard:
    """The leaderboard with each board's published rows; a spec that cannot be found is a note, not an error."""
    first = {}
    for run in runs:
        first.setdefault(run.results.spec_id, run)
    specs = []
    for spec_board in board.specs:
        run = first[spec_board.spec_id]
        try:
            spec = find_spec(run.results, run.path).spec
        except SpecrunError as exc:
            note(f"{spec_board.spec_id}: no published rows ({exc.one_line()})")
            specs.append(spec_board)
            continue
        boards = []
        for b in spec_board.boards:
            ref = spec.metrics[b.metric].mteb if b.metric in spec.metrics else None
            if ref is None or spec.mteb_split(b.metric) != b.split:
                boards.append(b)
                continue
            rows = [PublishedRow(model=v.model, revision=v.revision, score=v.value,
                                 mteb=f"{v.task} · {v.split} · {v.subset} · {v.score}", mteb_version=v.mteb_version,
                                 file=str(v.file)) for v in published.every_model(ref)]
            if not rows:
                note(f"{spec_board.spec_id} {b.split} {b.metric}: no model in {published.root} has MTEB {ref.task} "
                     f"{ref.split} {ref.subset} {ref.score}")
            boards.append(b.model_copy(update={"published": rows}))
        specs.append(spec_board.model_copy(update={"boards": boards}))
    return board.model_copy(update={"specs": specs})


__all__ = ["with_published"]
