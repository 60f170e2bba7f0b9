"""What the HTML page's filters read: each benchmark's languages, task types and domains, and each model's size
bucket. Task types come from the results alone (each metric's protocol kind); languages and domains from the spec,
found by the sha256 its runs record (`results.verify.find_spec`); a spec not found leaves them empty (unknown).
Published rows add open weights, release year and comparability flags, read from their model_meta.json."""

from __future__ import annotations

from collections.abc import Sequence

from specrun.board.leaderboard.model import Leaderboard, PublishedRow, SpecBoard
from specrun.core import registry
from specrun.core.errors import SpecrunError
from specrun.mteb.results.comparable import FLAGS
from specrun.results.verify import Verified, find_spec

UNKNOWN = "unknown"  # what a filter shows for a value nobody recorded
SIZE_BUCKETS = ((10**8, "<100M"), (10**9, "100M–1B"))  # upper bound (exclusive) -> name; above the last: ">1B"
SIZE_ORDER = (*(name for _, name in SIZE_BUCKETS), ">1B", UNKNOWN)
OPEN_WEIGHTS = ("yes", "no", UNKNOWN)
FLAG_LABELS = {"dataset_revision": "another dataset revision", "mteb_version": "an mteb version whose numbers differ",
               "external": "an external/ source"}  # comparable.FLAGS as the page's checkboxes name them


def size_bucket(n_parameters: int | None) -> str:
    """A model's size as the page filters it: <100M, 100M–1B, >1B, or unknown where no parameters are recorded."""
    if n_parameters is None:
        return UNKNOWN
    return next((name for limit, name in SIZE_BUCKETS if n_parameters < limit), ">1B")


def task_types(run: Verified) -> list[str]:
    """MTEB's task type of each protocol the run scored (its kind's prompt_task; the kind where it has none)."""
    kinds = (info.protocol_kind for info in run.results.metrics.values())
    return list(dict.fromkeys(
        (registry.PROTOCOLS[kind].info.prompt_task or kind) if kind in registry.PROTOCOLS else kind
        for kind in kinds))


def spec_facets(run: Verified) -> dict[str, list[str]]:
    """A benchmark's languages (metadata.languages, else the older `language` key), domains and task types."""
    facets: dict[str, list[str]] = {"languages": [], "domains": [], "task_types": task_types(run)}
    try:
        spec = find_spec(run.results, run.path).spec
    except (SpecrunError, OSError):  # not found, or no longer loadable: its languages and domains are unknown
        return facets
    meta = spec.metadata
    facets["languages"] = list((meta.languages if meta and meta.languages else None) or spec.language or [])
    facets["domains"] = list(meta.domains or []) if meta else []
    return facets


def with_facets(board: Leaderboard, runs: Sequence[Verified]) -> Leaderboard:
    """The board with every spec's filter values, read from its first run (one spec version per board); a mean
    over subsets has every value of its subsets (filtering by one subset's language keeps the mean in view)."""
    first: dict[str, Verified] = {}
    for run in runs:
        first.setdefault(run.results.spec_id, run)

    def facets_of(spec: SpecBoard) -> dict[str, list[str]] | None:
        if spec.spec_id in first:
            return spec_facets(first[spec.spec_id])
        if spec.kind != "subsets":
            return None
        each = [spec_facets(first[member]) for member in spec.members if member in first]
        return {name: list(dict.fromkeys(value for facets in each for value in facets[name])) for name in FACETS}

    return board.model_copy(update={"specs": [
        spec.model_copy(update=facets) if (facets := facets_of(spec)) is not None else spec
        for spec in board.specs]})


FACETS = ("languages", "task_types", "domains")  # a benchmark's filters; the model size filters rows


def shown_values(values: Sequence[str]) -> list[str]:
    """A benchmark's values of one filter as the page matches them: unknown where none is recorded."""
    return list(values) or [UNKNOWN]


def filter_options(board: Leaderboard) -> dict[str, list[tuple[str, int]]]:
    """Every filter's choices with how many benchmarks (model configurations, for size) have each; unknown last."""
    options: dict[str, list[tuple[str, int]]] = {}
    for facet in FACETS:
        counts: dict[str, int] = {}
        for spec in board.specs:
            for value in dict.fromkeys(shown_values(getattr(spec, facet))):
                counts[value] = counts.get(value, 0) + 1
        options[facet] = sorted(counts.items(), key=lambda item: (item[0] == UNKNOWN, item[0].lower()))
    published = published_models(board)
    sizes = [size_bucket(m.n_parameters) for m in board.models] + [published_facets(p)["size"]
                                                                   for p in published.values()]
    options["size"] = [(name, sizes.count(name)) for name in SIZE_ORDER if name in sizes]
    return options


def open_weights(row: PublishedRow) -> str:
    """yes, no, or unknown where the row has no model_meta.json or it states none."""
    stated = None if row.meta is None else row.meta.open_weights
    return UNKNOWN if stated is None else "yes" if stated else "no"


def published_facets(row: PublishedRow) -> dict[str, str]:
    """A published row's filter values as the page's data attributes hold them (flags joined by '|')."""
    meta = row.meta
    return {"size": size_bucket(None if meta is None else meta.n_parameters), "open": open_weights(row),
            "released": (meta.release_date if meta is not None else None) or "", "flags": "|".join(row.flags)}


def published_models(board: Leaderboard) -> dict[str, PublishedRow]:
    """Each published model of the board once (its first row: the boards of one spec read one revision)."""
    models: dict[str, PublishedRow] = {}
    for spec in board.specs:
        for b in spec.boards:
            for row in b.published:
                models.setdefault(row.model, row)
    return models


def published_options(board: Leaderboard) -> dict[str, list[tuple[str, int]]]:
    """The published filters' choices: open weights (models with each) and flags (rows with each, over every
    board); empty where no row is published."""
    opens = [open_weights(p) for p in published_models(board).values()]
    rows = [p for spec in board.specs for b in spec.boards for p in b.published]
    flags = [(code, sum(code in p.flags for p in rows)) for code in FLAGS]
    return {"open_weights": [(v, opens.count(v)) for v in OPEN_WEIGHTS if v in opens],
            "flags": [(code, count) for code, count in flags if count]}


def release_years(board: Leaderboard) -> tuple[int, int] | None:
    """The first and last release year the published models state (the range inputs' bounds); None if none."""
    years = [int(p.meta.release_date[:4]) for p in published_models(board).values()
             if p.meta is not None and p.meta.release_date]
    return (min(years), max(years)) if years else None
