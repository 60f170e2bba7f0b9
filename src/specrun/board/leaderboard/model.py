"""leaderboard.json's model: models, boards (one per benchmark, split and metric) and the overall ranking; and
the one way a board is made from its ranking (`ranked_board`), whatever the benchmark is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, create_model

from specrun.core.types import Strict
from specrun.mteb.results.meta import PublishedModelMeta
from specrun.results import (
    IDENTITY_FIELDS,
    ModelProvenance,
)

if TYPE_CHECKING:
    from specrun.board._ranking import Ranking

LEADERBOARD_FORMAT = "specrun.leaderboard/2"
META_COLUMNS = ("n_parameters", "embed_dim", "max_tokens", "weights_bytes")  # the model metadata a board shows:
# what the model is, never the run's peak memory (it varies between runs of one configuration)


# One model configuration: a name plus what makes its vectors differ (adapter, prompt, ...): the identity fields
# of results/labels.py, typed as in the model provenance, so a new setting reaches the leaderboard without an edit here.
ModelEntry = create_model("ModelEntry", __base__=Strict, label=(str, ...), name=(str, ...), **{
    name: (ModelProvenance.model_fields[name].annotation, ...) for name in IDENTITY_FIELDS},
    prompt_variants=(list[str], Field(default_factory=list, description=(
        "With --prompt-variants worst|mean: the prompt variants this row stands for (their prompt fields above "
        "are left at their defaults)."))),
    **{name: (int | None, Field(None, description=f"The model's {name} (results' model_meta; none recorded: "
                                                    "absent)."))
       for name in META_COLUMNS})


class BoardRow(Strict):
    model: str
    results: str
    variant_results: list[str] = Field(default_factory=list, description=(
        "With --prompt-variants worst|mean: every variant's results.json the row's score reduces (results: the "
        "first); a mean over subsets: each subset's results.json."))
    score: float
    ci_low: float
    ci_high: float
    n: int
    rank: int
    rank_low: int
    rank_high: int
    diff_to_best: float
    diff_low: float
    diff_high: float
    separable_from_best: bool
    published_rank: int | None = Field(None, description=(
        "With --published: this row's rank among the ranked published points and our rows (board._beside)."))
    published_rank_low: int | None = Field(None, description=(
        "The rank interval among the published points, from our score's resamples against the fixed points."))
    published_rank_high: int | None = None


class PublishedRow(Strict):
    """A published number ranked with our rows (MTEB's result files): a point with no interval, so its rank has
    no interval and it has no paired difference to the best; it takes no part in the across-spec ranking."""

    model: str
    revision: str
    score: float
    mteb: str  # task · split · subset · score it was read from
    mteb_version: str | None
    file: str
    rank: int | None = Field(None, description=(
        "Its rank among the ranked published points and our rows (ties: the best rank); none: left out of the "
        "ranking by --published-only comparable (it has flags)."))
    interval: Literal["none: a published point"] = "none: a published point"
    dataset_revision: str = ""
    flags: list[str] = Field(default_factory=list, description=(
        "Why it may not be comparable: dataset_revision, mteb_version, external (mteb.results.comparable)."))
    flag_reasons: list[str] = Field(default_factory=list)
    meta: PublishedModelMeta | None = Field(None, description=(
        "The revision's model_meta.json as read (parameters, dimension, memory, max tokens, licence, open weights, "
        "release date, framework); none: the folder has none, or it was set aside (a note)."))


class Board(Strict):
    """One (split, metric) of a spec: its models ranked, with rank intervals and the pairwise shares."""

    split: str
    metric: str
    metric_label: str
    direction: Literal["higher", "lower"]
    headline: bool
    n_units: int
    best: str
    not_separable: list[str]  # the other models whose paired interval to the best reaches 0
    rows: list[BoardRow]
    better: list[list[float]]  # better[i][j]: share of resamples where rows[i] beats rows[j]
    published: list[PublishedRow] = Field(default_factory=list, description=(
        "With --published: every model's published value of this board's MTEB counterpart, ranked with our rows "
        "(by rank, then model name)."))
    published_only: Literal["all", "comparable"] = Field("all", description=(
        "Which published rows are ranked: all, or only those without flags (--published-only)."))
    published_caveat: str | None = Field(None, description=(
        "With --published: the spec's caveat on its MTEB counterpart (`metrics.NAME.mteb.caveat`: our data or "
        "protocol is not quite MTEB's), said beside the published rows as check-published says it."))


def ranked_board(ranking: Ranking, names: Sequence[str], row: Callable[[int], dict[str, Any]], **board: Any) -> Board:
    """A board from its ranking: the rows by rank then label, each `row(m)` (its score, interval, n and results)
    with its rank, rank interval and paired difference to the best; the best, the pairwise shares and who is not
    separable from the best. Every kind of benchmark (a spec, a subsets' mean, a suite) builds its boards here."""
    order = sorted(range(len(names)), key=lambda m: (ranking.rank[m], names[m]))
    rows = [BoardRow(model=names[m], rank=int(ranking.rank[m]), rank_low=int(ranking.rank_low[m]),
                     rank_high=int(ranking.rank_high[m]), diff_to_best=float(ranking.diff[m]),
                     diff_low=float(ranking.diff_low[m]), diff_high=float(ranking.diff_high[m]),
                     separable_from_best=bool(ranking.separable[m]), **row(m)) for m in order]
    return Board(best=names[ranking.best], better=[[float(ranking.better[i, j]) for j in order] for i in order],
                 not_separable=[names[m] for m in order if not ranking.separable[m] and m != ranking.best],
                 rows=rows, **board)


class BordaRow(Strict):
    """A model's Borda count over a suite's members (as MTEB ranks a benchmark), with its rank interval."""

    model: str
    points: float
    rank: int
    rank_low: int
    rank_high: int


class SpecBoard(Strict):
    """One benchmark on the leaderboard: a spec (a board per split and metric), a spec's subsets (the mean over
    them, as MTEB scores a task of several subsets) or a suite (a board per aggregate, its members' Borda count):
    MTEB ranks a benchmark of tasks as it ranks a task, and so does the board."""

    kind: Literal["spec", "suite", "subsets"] = "spec"
    spec_id: str
    title: str
    resamples: int
    confidence: float
    seed: int
    unit: dict[str, str]
    boards: list[Board]
    headline_choice: str = Field("", description=(
        "Why the headline board is the one the across-spec level reads: the spec's main metric (its `mteb.main`), "
        "or its first metric where it declares none or the spec is not found."))
    languages: list[str] = Field(default_factory=list, description=(
        "The spec's languages (metadata.languages, else its `language` key); empty: spec not found or none stated."))
    task_types: list[str] = Field(default_factory=list, description=(
        "MTEB's task type of each protocol scored (from the protocol kind)."))
    domains: list[str] = Field(default_factory=list, description=(
        "The spec's metadata.domains; empty: spec not found or none stated."))
    members: list[str] = Field(default_factory=list, description=(
        "A suite: its scored members (spec, split, metric), in suite order; a mean over subsets: the subsets' spec "
        "ids, in the spec's order."))
    part_of: str | None = Field(None, description=(
        "A subset's spec whose subsets are averaged on this board: the id of that mean, which the across-benchmark "
        "level reads in its place (the task counts once)."))
    borda: list[BordaRow] = Field(default_factory=list, description=(
        "A suite: MTEB's Borda count over its members, ranked, with rank intervals from the joint resamples."))
    suite_published: dict[str, Any] | None = Field(None, description=(
        "A suite with --published: its aggregates and Borda ranked beside MTEB's published models "
        "(board.suites.published)."))


class OverallRow(Strict):
    model: str
    specs: int
    mean: float | None
    mean_rank: int | None
    mean_rank_low: int | None
    mean_rank_high: int | None
    borda: float
    borda_rank: int
    borda_rank_low: int
    borda_rank_high: int


class Overall(Strict):
    specs: list[str]
    resamples: int
    confidence: float
    resample_specs: bool
    mean_direction: Literal["higher", "lower"] | None
    rows: list[OverallRow]
    prompt_variants: Literal["each", "worst", "mean"] = "each"  # how a model's prompt variants were ranked


class Leaderboard(Strict):
    format: Literal["specrun.leaderboard/2"] = LEADERBOARD_FORMAT
    title: str
    models: list[ModelEntry]
    specs: list[SpecBoard]
    overall: Overall
