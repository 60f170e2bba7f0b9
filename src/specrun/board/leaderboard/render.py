"""The leaderboard as Markdown and as a self-contained HTML page (inline CSS, JS and SVG; works offline)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jinja2

from specrun.board.leaderboard.facets import (
    FACETS,
    FLAG_LABELS,
    filter_options,
    published_facets,
    published_options,
    release_years,
    shown_values,
    size_bucket,
)
from specrun.board.leaderboard.model import META_COLUMNS, Board, BoardRow, Leaderboard, PublishedRow, SpecBoard
from specrun.board.suites.published import published_section
from specrun.core.errors import printable
from specrun.core.markdown import md_text
from specrun.core.types import AGGREGATE_LABELS
from specrun.results import (
    IDENTITY_FIELDS,
    confidence_percent,
    describe_setting,
)

HOW_TO_READ = (
    "Each score comes with a {percent} interval: the range the score would likely fall in if the benchmark's "
    "items were drawn again (a bootstrap: the items are resampled with replacement {resamples} times). A rank is "
    "an estimate too: in every resample all models are scored on the same resampled items and ranked again "
    "(ties share the best rank); the rank interval holds the middle {percent} of those ranks. Models whose "
    "rank intervals overlap are not clearly ordered. \"Not separable from the best\" means the {percent} "
    "interval of the difference between the best model's score and this model's contains 0: on these items "
    "the data cannot tell the two apart. \"Better in\" is the share of resamples in which the row's model beats "
    "the column's. Across benchmarks, a model gets one Borda point per model it beats on a benchmark (half a "
    "point per tie; a model without a run on a benchmark counts as below every model that has one), summed over "
    "benchmarks; the mean is the plain average of the headline scores, shown only for models run on every "
    "benchmark."
)


PUBLISHED_RULE = (
    "Rows marked published are MTEB's published values (its result files), ranked with ours: a published number "
    "is a point with no interval and no per-unit predictions, so it has a rank but no rank interval, no paired "
    "difference to the best, is never the best and takes no part in Borda points or the mean. Each of our rows "
    "keeps its interval and gets a rank interval among the published points: its rank in every resample of its "
    "score against the fixed published values. Ties share the best rank, as MTEB's leaderboard ranks; rows of one "
    "rank are listed by model name. Comparability flags: another dataset revision than the task's, an mteb version "
    "whose numbers differ for the task type, an external/ source; with --published-only comparable, flagged rows "
    "are listed and not ranked.")


def published_label(row: PublishedRow) -> str:
    """The model, its revision (short) and the mteb version that wrote the file: what a reader checks it by."""
    version = f", mteb {row.mteb_version}" if row.mteb_version else ""
    return f"{row.model} (published, revision {row.revision[:12]}{version})"


def _md(text: str) -> str:
    """Text from results files (labels, titles) made inert in a GFM table cell: control characters shown as
    escapes, then the one Markdown escaper."""
    return md_text(printable(str(text)))


def headline_line(spec: SpecBoard) -> str:
    """`spec`: split metric (why that one): which score of each benchmark the across-benchmark level reads."""
    head = next((b for b in spec.boards if b.headline), spec.boards[0])
    why = f" ({spec.headline_choice})" if spec.headline_choice else ""
    return f"{spec.spec_id}: {head.split} {head.metric}{why}"


def _ci(low: float, high: float) -> str:
    return f"[{low:.4f}, {high:.4f}]"


def _ranks(rank: int | None, low: int | None, high: int | None) -> str:
    if rank is None:
        return "—"
    return f"{rank} ({low}–{high})" if low != high else f"{rank} ({low})"


def _separable(row: BoardRow, best: str) -> str:
    return "best" if row.model == best else "yes" if row.separable_from_best else "no"


def meta_text(name: str, value: int | None) -> str:
    """One metadata value as the tables show it (— where none is recorded)."""
    if value is None:
        return "—"
    if name == "n_parameters":
        return f"{value / 1e6:.1f}M" if value >= 10**6 else f"{value:,}"
    if name == "weights_bytes":
        return f"{value / 1e6:.1f} MB"
    return str(value)


def meta_cells(board: Leaderboard) -> dict[str, list[str]]:
    """Per model label, its metadata columns as shown (— where its results record none)."""
    return {m.label: [meta_text(name, getattr(m, name)) for name in META_COLUMNS] for m in board.models}


def published_title(row: PublishedRow) -> str:
    """A published row's tooltip: the file it was read from and what its model_meta.json states."""
    lines = [row.file]
    if row.meta is not None:
        stated = row.meta.model_dump(exclude={"file", "no_token_limit"}, exclude_none=True)
        lines += [f"{key}: {', '.join(value) if isinstance(value, list) else value}" for key, value in stated.items()]
        lines.append(f"from {row.meta.file}")
    return "\n".join(lines)


def table_rows(b: Board) -> list[tuple[str, BoardRow | PublishedRow]]:
    """A board's one table: ("ours", row) and ("published", row) in rank order with the published points (rows
    left unranked last; one rank: by model name); without published rows, ours as ranked among themselves."""
    if not b.published:
        return [("ours", r) for r in b.rows]
    cells: list[tuple[tuple[bool, int, str], tuple[str, BoardRow | PublishedRow]]] = [
        ((r.published_rank is None, r.published_rank or 0, r.model), ("ours", r)) for r in b.rows]
    cells += [((p.rank is None, p.rank or 0, p.model), ("published", p)) for p in b.published]
    cells.sort(key=lambda cell: cell[0])
    return [row for _, row in cells]


META_HEADERS = ("parameters", "dimension", "max tokens", "weights")  # META_COLUMNS as the tables head them


def render_markdown(board: Leaderboard) -> str:
    """CommonMark with GFM tables: the overall table (with each model's metadata), then every spec's boards."""
    o = board.overall
    metas = meta_cells(board)
    percent = confidence_percent(o.confidence)
    lines = [f"# {_md(board.title)}", "", HOW_TO_READ.format(percent=percent, resamples=o.resamples), "",
             f"## Across benchmarks ({len(o.specs)}: {', '.join(_md(s) for s in o.specs)})", "",
             f"Rank intervals: {percent}, {o.resamples} joint resamples"
             + (", benchmarks resampled too" if o.resample_specs else "") + ".", "",
             "Each benchmark's headline score (what Borda points and the mean read): "
             + "; ".join(headline_line(spec) for spec in board.specs if spec.part_of is None) + ".", "",
             "| Borda rank (interval) | model | Borda points | benchmarks | mean score | mean rank (interval) | "
             + " | ".join(META_HEADERS) + " |",
             "| --- | --- | --- | --- | --- | --- |" + " ---: |" * len(META_HEADERS)]
    for r in o.rows:
        mean = "—" if r.mean is None else f"{r.mean:.4f}"
        lines.append(f"| {_ranks(r.borda_rank, r.borda_rank_low, r.borda_rank_high)} | {_md(r.model)} | "
                     f"{r.borda:g} | {r.specs} | {mean} | {_ranks(r.mean_rank, r.mean_rank_low, r.mean_rank_high)} | "
                     + " | ".join(metas.get(r.model, ["—"] * len(META_HEADERS))) + " |")
    for spec in board.specs:
        sp = confidence_percent(spec.confidence)
        lines += ["", f"## {_md(spec.title)} (`{spec.spec_id}`)", "",
                  f"{spec.resamples} joint paired resamples of the {', '.join(sorted(set(spec.unit.values())))}, "
                  f"seed {spec.seed}, {sp} intervals."]
        lines += [line for line in ["", kind_line(spec)] if kind_line(spec)]
        for b in spec.boards:
            units = {"suite": "members", "subsets": "subsets"}.get(spec.kind, "units")
            lines += ["", f"### {b.split} · {_md(b.metric_label)} (`{b.metric}`, {b.direction} is better"
                          + (", headline" if b.headline else "") + f", {b.n_units} {units})", "",
                      f"Best: {_md(b.best)}. Not separable from the best: "
                      f"{', '.join(_md(m) for m in b.not_separable) or 'none'}.", "",
                      f"| rank (interval) | model | score | {sp} CI | best − model | {sp} CI | separable from best |",
                      "| --- | --- | --- | --- | --- | --- | --- |"]
            for r in b.rows:
                lines.append(f"| {_ranks(r.rank, r.rank_low, r.rank_high)} | {_md(r.model)} | {r.score:.4f} | "
                             f"{_ci(r.ci_low, r.ci_high)} | {r.diff_to_best:+.4f} | "
                             f"[{r.diff_low:+.4f}, {r.diff_high:+.4f}] | {_separable(r, b.best)} |")
            if b.published:
                lines += published_table(b, sp)
            if b.headline and 1 < len(b.rows) <= 12:
                lines += ["", "Share of resamples in which the row's model beats the column's:", "",
                          "| better than → | " + " | ".join(str(j + 1) for j in range(len(b.rows))) + " |",
                          "| --- |" + " --- |" * len(b.rows)]
                for i, r in enumerate(b.rows):
                    cells = ["—" if i == j else f"{b.better[i][j]:.2f}" for j in range(len(b.rows))]
                    lines.append(f"| {i + 1}. {_md(r.model)} | " + " | ".join(cells) + " |")
        lines += suite_tail(spec, sp)
    return "\n".join(lines) + "\n"


def kind_line(spec: SpecBoard, text: Callable[[str], str] = _md) -> str:
    """What a benchmark other than one spec is, and a subset's spec counted through its subsets' mean (`text`:
    how a value from the results is made inert: Markdown-escaped, or as it is for the page's autoescape)."""
    if spec.kind == "suite":
        return (f"A suite of {len(spec.members)} members: {'; '.join(text(m) for m in spec.members)}. "
                f"Headline: {text(spec.headline_choice)}.")
    if spec.kind == "subsets":
        return (f"The mean over {len(spec.members)} subsets ({', '.join(text(m) for m in spec.members)}), as MTEB "
                "scores a task of several subsets: each subset resampled over its own units on its own seed; "
                "the task counts once across benchmarks.")
    if spec.part_of is not None:
        return f"Counted across benchmarks through the mean over the subsets of {text(spec.part_of)}."
    return ""


def suite_tail(spec: SpecBoard, percent: str) -> list[str]:
    """A suite's Borda count over its members, and its published section (none for a spec)."""
    if not spec.borda:
        return []
    lines = ["", "### Borda count over members (as MTEB ranks)", "", f"| rank ({percent} interval) | model | points |",
             "| --- | --- | --- |"]
    lines += [f"| {_ranks(r.rank, r.rank_low, r.rank_high)} | {_md(r.model)} | {r.points:g} |" for r in spec.borda]
    lines += ["", "Borda: per member, points = models − rank (ties: average rank), summed over members, ranked with "
                  "ties at the best rank; rank intervals from the same joint resamples."]
    if spec.suite_published is not None:
        lines += ["", *published_section(spec.suite_published, percent)]
    return lines


def published_table(b: Board, sp: str) -> list[str]:
    """Our rows and the published ones in one ranked table (board._beside), flags per published row."""
    ranked = sum(p.rank is not None for p in b.published)
    lines = []
    for _, row in table_rows(b):
        if isinstance(row, BoardRow):
            rank = _ranks(row.published_rank, row.published_rank_low, row.published_rank_high)
            lines.append(f"| {rank} | {_md(row.model)} (ours) | {row.score:.4f} | {_ci(row.ci_low, row.ci_high)} | "
                         "ours |")
        else:
            rank = "not ranked (flagged)" if row.rank is None else f"{row.rank} (a point: no interval)"
            flags = "; ".join(_md(reason) for reason in row.flag_reasons) or "comparable"
            lines.append(f"| {rank} | {_md(published_label(row))} | {row.score:.4f} | — | {flags} |")
    return ["", f"#### Ranked with MTEB's published results ({len(b.published)} published, {ranked} ranked: "
                f"{b.published_only})", "", f"| rank (interval) | model | score | {sp} CI | comparability |",
            "| --- | --- | --- | --- | --- |", *lines, "", PUBLISHED_RULE,
            *(["", f"Caveat: {_md(b.published_caveat)}."] if b.published_caveat else [])]


_ENV = jinja2.Environment(loader=jinja2.PackageLoader("specrun", "templates"), autoescape=True,
                          trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)


def _axis(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    pad = (high - low) * 0.05 or 0.05
    return low - pad, high + pad


def _short(label: str, width: int = 44) -> str:
    """A label cut in the middle: the name's start and the distinguishing end both stay visible."""
    return label if len(label) <= width else label[:width // 2 - 2] + "…" + label[-(width - width // 2 + 1):]


def render_html(board: Leaderboard) -> str:
    """One self-contained page: inline CSS, JS and SVG; nothing fetched."""
    percent = confidence_percent(board.overall.confidence)

    def scale(axis: tuple[float, float], width: float) -> Callable[[float], float]:
        return lambda v: round((v - axis[0]) / (axis[1] - axis[0]) * width, 2)

    def fmt(value: float | None, digits: int = 4) -> str:
        return "—" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"

    specs = []
    for spec in board.specs:
        boards = []
        for b in spec.boards:
            axis = _axis([v for r in b.rows for v in (r.ci_low, r.ci_high, r.score)] + [r.score for r in b.published])
            boards.append({"board": b, "x": scale(axis, 1.0), "axis": axis, "models": len(b.rows),
                           "table": table_rows(b),
                           "ranked": len(b.rows) + sum(p.rank is not None for p in b.published)})
        specs.append({"spec": spec, "boards": boards, "percent": confidence_percent(spec.confidence)})
    configs = {m.label: ", ".join(describe_setting(field, getattr(m, field)) for field in IDENTITY_FIELDS)
               for m in board.models}
    return _ENV.get_template("leaderboard.html.j2").render(
        board=board, specs=specs, percent=percent, fmt=fmt, separable=_separable, configs=configs, short=_short,
        metas=meta_cells(board), meta_headers=META_HEADERS,
        meta_values={m.label: [getattr(m, name) for name in META_COLUMNS] for m in board.models},
        published_label=published_label, published_rule=PUBLISHED_RULE,
        headlines=[headline_line(spec) for spec in board.specs if spec.part_of is None],
        kind_line=lambda spec: kind_line(spec, str),
        options=filter_options(board),
        facets={spec.spec_id: {facet: shown_values(getattr(spec, facet)) for facet in FACETS} for spec in board.specs},
        sizes={m.label: size_bucket(m.n_parameters) for m in board.models},
        published_options=published_options(board), years=release_years(board), flag_labels=FLAG_LABELS,
        has_published=any(b.published for spec in board.specs for b in spec.boards),  # the published rows' filters
        aggregate_labels=AGGREGATE_LABELS,
        published_facets=published_facets, published_title=published_title, meta_text=meta_text,
        how_to_read=HOW_TO_READ.format(percent=percent, resamples=board.overall.resamples))
