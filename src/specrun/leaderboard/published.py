"""Published rows on the boards (`leaderboard --published DIR`): for every board whose metric's spec names an
`mteb` counterpart on that split, every model of DIR with that score. The rule: they are listed beside the ranked
rows, not ranked. A published number has no interval and no per-unit predictions, so it has no rank interval and
no paired difference to the best; it gets no rank, is never the best, and takes no part in Borda or the mean.
The repository is read as it is: a file that cannot give the value is set aside with a reason naming it (a note,
never an error of the board), and where a model holds the task in several revisions one is taken by the rule of
`specrun.mteb.results.index.choose`, said in a note."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from specrun.core.errors import SpecrunError
from specrun.leaderboard.model import Leaderboard, PublishedRow
from specrun.mteb.results import PublishedDir
from specrun.mteb.results.lookup import Published
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
            ref = spec.mteb_ref(b.metric, b.split) if b.metric in spec.metrics else None
            if ref is None:
                boards.append(b)
                continue
            found = published.every_model(ref)
            rows = [PublishedRow(model=v.model, revision=v.revision, score=v.value,
                                 mteb=f"{v.task} · {v.split} · {v.subset} · {v.score}", mteb_version=v.mteb_version,
                                 file=str(v.file)) for v in found.values]
            for line in published_notes(f"{spec_board.spec_id} {b.split} {b.metric}", found):
                note(line)
            if not rows:
                note(f"{spec_board.spec_id} {b.split} {b.metric}: no model in {published.root} has MTEB {ref.task} "
                     f"{ref.split} {ref.subset} {ref.score}")
            boards.append(b.model_copy(update={"published": rows}))
        specs.append(spec_board.model_copy(update={"boards": boards}))
    return board.model_copy(update={"specs": specs})


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
