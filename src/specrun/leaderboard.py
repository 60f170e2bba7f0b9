"""Leaderboard of many runs (models x specs) with honest ranks: a rank is an estimate, so each gets an interval.

Every run is read through `verify.load_verified` (as `specrun compare` reads it). Runs of one spec must have
evaluated the same items (fingerprint, subset, unit ids) with the same bootstrap settings, or nothing is ranked.

Per spec, every (split, metric) of the spec is a *board*. Notation: models m = 1..M on the board, n units, B
resamples, confidence c, alpha = (1 - c) / 2, seed = `provenance.uncertainty.seed`.

    idx_b  ~ uniform {0..n-1}^n, drawn by the one resampling driver (metrics.resampling): rng = default_rng(seed),
             rng.integers(0, n, (250, n)) per batch of 250 resamples (so resample b is compare's resample b)
    w_b    = unit_counts(idx_b)                        how often each unit is in resample b
    S_bm   = statistic(model m's arrays, weights=w_b)  the metric, count-weighted; one w_b for all models
    P_bm   = S_bm read by the metric's interval method (metrics.intervals.plausible; the runs' scores name it):
             percentile and bca S_bm itself; basic 2 S_m - S_bm; centred S_bm + S_m - median_b(S_bm), S_m the
             observed value
    T_bm   = P_bm if the metric's direction is higher, else -P_bm
    rank_bm = 1 + #{m' : T_bm' > T_bm}                 ties take the best (minimum) rank: "1224" ranking
    rank interval of m = [floor(Q_alpha(rank_.m)), ceil(Q_(1-alpha)(rank_.m))]
             Q: numpy's linear (type 7) percentile over b = 1..B; floor/ceil keep the ends whole ranks
    better(A, B) = compare's "P(A better)" on the same resamples: the share of b in which the plausible paired
             difference A - B is on A's side of 0 (percentile, bca and basic: T_bA > T_bB; centred: the raw
             difference moved by its own observed value minus its own median)
    best   = the model with the best observed score (ties: the first label in sort order)
    D_bm   = signed S_b,best - S_bm, its interval by the metric's method (percentile: [Q_alpha(D_.m),
             Q_(1-alpha)(D_.m)]), as compare gives the interval of best - m
    m is *not separable from the best* when that interval's lower end is <= 0, i.e. the paired interval of
    best - m contains 0 (or lies below it); the best itself is in the set.

Across specs, each spec contributes its *headline* board: the spec's first metric on its `test` split when that
is scored, else on its last scored split. With K specs, A_s the models absent from spec s, and resample b of
spec s the resample above (b = 1..B, B = the smallest resample count of the specs; confidence the highest):

    Borda_bsm = #{m' : m' below m on s} + 1/2 #{m' != m : m' tied with m on s}
             where a model absent from s is below every model present and tied with the other absent ones
             (so a present model gains |A_s| points for the absent models; an absent one (|A_s| - 1) / 2)
    Borda_bm = sum_s k_bs Borda_bsm,  k_bs = 1 (or, with resample_specs, how often spec s is drawn when K specs
             are drawn with replacement from default_rng(the specs' seeds in spec order), per b)
    Mean_bm  = (1/K) sum_s k_bs S_bsm, only for models present on every spec and only when every headline
             metric has the same direction (else the mean is not shown)
    overall ranks: min ranks of Borda_bm (higher is better) and of Mean_bm (in that direction), intervals
             by the same floor/ceil percentile rule. The observed values use w = 1 and k = 1.

A resample in which a metric is undefined (NaN) makes the board undefined: refused, as compare refuses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jinja2
import numpy as np
from pydantic import Field, create_model
from rich.console import Console

from specrun.core.errors import SpecrunError, printable
from specrun.core.files import write_atomic
from specrun.core.markdown import md_text
from specrun.core.settings import PROMPT_FLAGS
from specrun.core.types import Strict
from specrun.metrics import METRICS, intervals
from specrun.metrics.estimate import n_runs
from specrun.metrics.resampling import draws, mean_over_runs, percentile_interval
from specrun.results import (
    IDENTITY_FIELDS,
    ModelProvenance,
    Results,
    confidence_percent,
    describe_setting,
    run_identity,
    run_labels,
)
from specrun.verify import Verified, load_verified

LEADERBOARD_FORMAT = "specrun.leaderboard/1"
RANK_CELLS = 1 << 22  # (resamples x models x models) booleans held at once when ranking


# ---------------------------------------------------------------------------------------------------- the model


# One model configuration: a name plus what makes its vectors differ (adapter, prompt, ...): the identity fields
# of results.py, typed as in the model provenance, so a new setting reaches the leaderboard without an edit here.
ModelEntry = create_model("ModelEntry", __base__=Strict, label=(str, ...), name=(str, ...), **{
    name: (ModelProvenance.model_fields[name].annotation, ...) for name in IDENTITY_FIELDS},
    prompt_variants=(list[str], Field(default_factory=list, description=(
        "With --prompt-variants worst|mean: the prompt variants this row stands for (their prompt fields above "
        "are left at their defaults)."))))


class BoardRow(Strict):
    model: str
    results: str
    variant_results: list[str] = Field(default_factory=list, description=(
        "With --prompt-variants worst|mean: every variant's results.json the row's score reduces (results: the "
        "first)."))
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


class Board(Strict):
    """One (split, metric) of a spec: its models ranked, with rank intervals and the pairwise shares."""

    split: str
    metric: str
    metric_label: str
    direction: Literal["higher", "lower"]
    headline: bool
    n_units: int
    best: str
    not_separable: list[str]
    rows: list[BoardRow]
    better: list[list[float]]  # better[i][j]: share of resamples where rows[i] beats rows[j]


class SpecBoard(Strict):
    spec_id: str
    title: str
    resamples: int
    confidence: float
    seed: int
    unit: dict[str, str]
    boards: list[Board]


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
    format: Literal["specrun.leaderboard/1"] = LEADERBOARD_FORMAT
    title: str
    models: list[ModelEntry]
    specs: list[SpecBoard]
    overall: Overall


# ---------------------------------------------------------------------------------------------------- the numbers


def resampled_scores(statistic: Callable[..., np.ndarray], models: Sequence[Sequence[np.ndarray]], *,
                     resamples: int, seed: int, n_runs: int = 0) -> np.ndarray:
    """(resamples, models) statistic of every model on the same resampled units (and, for a metric of several
    runs, the same drawn runs): one count matrix per batch, shared by all models, so memory stays at
    BOOTSTRAP_BATCH x units whatever the number of models."""
    n_units = len(models[0][0])
    out = np.empty((resamples, len(models)))
    start = 0
    for weights, run_weights in draws(n_units, n_runs, resamples, seed):  # the driver compare and estimates use
        with np.errstate(all="ignore"):
            for m, data in enumerate(models):
                values = statistic(*data, weights=weights)
                out[start:start + len(weights), m] = values if not n_runs else mean_over_runs(values, run_weights)
        start += len(weights)
    return out


def min_ranks(signed: np.ndarray) -> np.ndarray:
    """(..., models) higher-is-better values -> 1 + the number of models strictly better (ties share the best)."""
    return 1 + np.sum(signed[..., None, :] > signed[..., :, None], axis=-1)


def _chunks(resamples: int, models: int) -> range:
    return range(0, resamples, max(1, RANK_CELLS // max(1, models * models)))


def rank_interval(ranks: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Per column, [floor of the alpha percentile, ceil of the 1 - alpha percentile] of the resampled ranks."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ranks, [alpha, 1 - alpha], axis=0)
    return np.floor(low + 1e-9).astype(int), np.ceil(high - 1e-9).astype(int)


@dataclass(frozen=True)
class Ranking:
    """What the joint bootstrap says about one board (arrays in the models' input order)."""

    observed: np.ndarray  # (M,) statistic with weights 1
    rank: np.ndarray  # (M,) observed min rank
    rank_low: np.ndarray
    rank_high: np.ndarray
    best: int
    diff: np.ndarray  # (M,) signed best - m, observed
    diff_low: np.ndarray
    diff_high: np.ndarray
    separable: np.ndarray  # (M,) bool: diff_low > 0
    better: np.ndarray  # (M, M) share of resamples where i beats j
    scores: np.ndarray  # (B, M) resampled statistics, for the across-spec level


def rank_board(statistic: Callable[..., np.ndarray], models: Sequence[Sequence[np.ndarray]], *,
               direction: str, resamples: int, confidence: float, seed: int, what: str = "board",
               n_runs: int = 0, method: str = "percentile") -> Ranking:
    """The joint paired bootstrap of one board (see the module docstring for every definition); with n_runs the
    statistic gives one value per run, and each resample draws the runs too; `method` is the metric's interval
    method."""
    observed, scores = board_scores(statistic, models, resamples=resamples, seed=seed, what=what, n_runs=n_runs)
    return rank_scores(observed, scores, direction=direction, confidence=confidence, method=method,
                       paired=PairedStatistic(statistic, models) if method == "bca" else None)


@dataclass(frozen=True)
class PairedStatistic:
    """Model i minus model j as a statistic of unit weights (every run once): what bca's jackknife calls."""

    statistic: Callable[..., np.ndarray]
    models: Sequence[Sequence[np.ndarray]]

    @property
    def n_units(self) -> int:
        return len(self.models[0][0])

    def of(self, i: int, j: int, sign: float = 1.0) -> Callable[[np.ndarray], np.ndarray]:
        def difference(weights: np.ndarray) -> np.ndarray:
            values = (self.statistic(*self.models[i], weights=weights)
                      - self.statistic(*self.models[j], weights=weights))
            return sign * (mean_over_runs(values, None) if np.ndim(values) > np.ndim(weights) - 1 else values)
        return difference


def board_scores(statistic: Callable[..., np.ndarray], models: Sequence[Sequence[np.ndarray]], *,
                 resamples: int, seed: int, what: str = "board", n_runs: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(M,) observed and (B, M) resampled statistics of every model on the same resamples."""
    n_units = len(models[0][0])
    with np.errstate(all="ignore"):
        observed = np.array([float(np.mean(statistic(*data, weights=np.ones(n_units)))) for data in models])
    scores = resampled_scores(statistic, models, resamples=resamples, seed=seed, n_runs=n_runs)
    if not (np.all(np.isfinite(scores)) and np.all(np.isfinite(observed))):
        raise SpecrunError(f"{what}: some resamples are degenerate for some model; ranks are undefined")
    return observed, scores


def combined(values: np.ndarray, groups: Sequence[Sequence[int]], how: str, direction: str) -> np.ndarray:
    """(..., M) -> (..., E): each entry's variants reduced to their worst (in the metric's direction) or mean,
    per resample: the worst variant may differ from one resample to the next, as it may on other items."""
    worst = np.min if direction == "higher" else np.max
    reduce = worst if how == "worst" else np.mean
    return np.stack([reduce(values[..., list(group)], axis=-1) for group in groups], axis=-1)


def rank_scores(observed: np.ndarray, scores: np.ndarray, *, direction: str, confidence: float,
                method: str = "percentile", paired: PairedStatistic | None = None) -> Ranking:
    """Ranks, rank intervals, differences to the best and pairwise shares from (M,) observed and (B, M)
    resampled statistics, read by the metric's interval method: ranks from each model's plausible scores, the
    difference to the best and the pairwise shares from the plausible paired differences, as `compare` reads
    them (the percentile method reads the resamples as they are)."""
    resamples = len(scores)
    sign = 1.0 if direction == "higher" else -1.0
    count = len(observed)
    plausible = intervals.plausible(method, observed, scores)
    ranks = np.empty((resamples, count))
    better = np.zeros((count, count))
    chunks = _chunks(resamples, count)
    for start in chunks:
        signed = sign * plausible[start:start + chunks.step]
        pairwise = signed[:, :, None] > signed[:, None, :]  # [b, i, j]: i beats j
        better += pairwise.sum(axis=0)
        ranks[start:start + len(signed)] = 1 + pairwise.sum(axis=1)
    better /= resamples
    low, high = rank_interval(ranks, confidence)
    best = int(np.argmax(sign * observed))  # argmax keeps the first of tied models
    diffs = sign * (scores[:, [best]] - scores)  # signed best - m, per resample
    diff = sign * (observed[best] - observed)
    alpha = (1 - confidence) / 2
    if method == "percentile":
        diff_low, diff_high = np.quantile(diffs, [alpha, 1 - alpha], axis=0)
    else:
        if method != "basic":  # a paired share reads its own plausible differences (basic's are the models')
            better = pairwise_shares(sign * observed, sign * scores, method)
        bounds = [(0.0, 0.0) if m == best else intervals.interval(
            method, float(diff[m]), diffs[:, m], confidence, n_units=0 if paired is None else paired.n_units,
            statistic=None if paired is None else paired.of(best, m, sign)) for m in range(count)]
        diff_low, diff_high = (np.array(side) for side in zip(*bounds, strict=True))
    diff_low[best] = diff_high[best] = 0.0
    return Ranking(observed=observed, rank=min_ranks(sign * observed), rank_low=low, rank_high=high, best=best,
                   diff=diff, diff_low=diff_low, diff_high=diff_high,
                   separable=diff_low > 0, better=better, scores=plausible)


def pairwise_shares(signed_observed: np.ndarray, signed_scores: np.ndarray, method: str) -> np.ndarray:
    """(M, M) share of the plausible paired differences i - j above 0 (compare's P(A better)), one row at a
    time: a paired difference's plausible values are its own (centred: moved by its own median)."""
    count = len(signed_observed)
    out = np.zeros((count, count))
    for i in range(count):
        differences = signed_scores[:, [i]] - signed_scores
        out[i] = np.mean(intervals.plausible(method, signed_observed[i] - signed_observed, differences) > 0, axis=0)
    np.fill_diagonal(out, 0.0)
    return out


@dataclass(frozen=True)
class OverallRanking:
    borda: np.ndarray  # (M,) observed
    borda_rank: np.ndarray
    borda_low: np.ndarray
    borda_high: np.ndarray
    mean: np.ndarray | None  # (M,) NaN for models missing a spec; None when directions differ
    mean_rank: np.ndarray | None  # 0 where undefined
    mean_low: np.ndarray | None
    mean_high: np.ndarray | None


def borda_points(signed: np.ndarray) -> np.ndarray:
    """(..., M) higher-is-better values, -inf for absent models -> Borda points on that spec (module docstring)."""
    out = np.zeros(signed.shape)
    models = signed.shape[-1]
    flat, points = signed.reshape(-1, models), out.reshape(-1, models)
    chunks = _chunks(len(flat), models)
    for start in chunks:
        block = flat[start:start + chunks.step]
        below = (block[:, :, None] > block[:, None, :]).sum(axis=2)
        tied = (block[:, :, None] == block[:, None, :]).sum(axis=2) - 1  # minus itself
        points[start:start + len(block)] = below + 0.5 * tied
    return out


def rank_overall(observed: Sequence[np.ndarray], scores: Sequence[np.ndarray], directions: Sequence[str], *,
                 confidence: float, resample_specs: bool = False, seeds: Sequence[int] = ()) -> OverallRanking:
    """Borda and mean across specs with rank intervals from the two-level bootstrap (module docstring).
    observed[s]: (M,) headline statistic of every model on spec s, NaN where the model is absent;
    scores[s]: (B_s, M) the same per resample of spec s (resample b is the same units for every model)."""
    specs = len(observed)
    resamples = min(len(s) for s in scores)
    signs = np.array([1.0 if d == "higher" else -1.0 for d in directions])
    stacked = np.stack([s[:resamples] for s in scores])  # (K, B, M)
    present = np.stack([np.isfinite(o) for o in observed])  # (K, M)
    observed_stack = np.stack(observed)
    if resample_specs:
        rng = np.random.default_rng(list(seeds))
        weights = np.stack([np.bincount(rng.integers(0, specs, specs), minlength=specs)
                            for _ in range(resamples)]).astype(float)  # (B, K)
    else:
        weights = np.ones((resamples, specs))

    def signed(values: np.ndarray) -> np.ndarray:
        return np.where(present[:, None, :] if values.ndim == 3 else present,
                        signs.reshape((-1,) + (1,) * (values.ndim - 1)) * values, -np.inf)

    borda_observed = borda_points(signed(observed_stack)).sum(axis=0)
    borda_b = np.einsum("kbm,bk->bm", borda_points(signed(stacked)), weights)
    borda_low, borda_high = rank_interval(min_ranks(borda_b), confidence)
    mean = mean_rank = mean_low = mean_high = None
    if len(set(directions)) == 1:
        sign = signs[0]
        complete = present.all(axis=0)
        mean = np.where(complete, observed_stack.mean(axis=0), np.nan)
        mean_b = np.einsum("kbm,bk->bm", np.where(present[:, None, :], stacked, 0.0), weights) / specs
        rank_of = np.where(complete, sign * mean, -np.inf)
        mean_rank = np.where(complete, min_ranks(rank_of), 0)
        low, high = rank_interval(min_ranks(np.where(complete, sign * mean_b, -np.inf)), confidence)
        mean_low, mean_high = np.where(complete, low, 0), np.where(complete, high, 0)
    return OverallRanking(borda=borda_observed, borda_rank=min_ranks(borda_observed), borda_low=borda_low,
                          borda_high=borda_high, mean=mean, mean_rank=mean_rank, mean_low=mean_low,
                          mean_high=mean_high)


# ---------------------------------------------------------------------------------------------------- the runs


def find_results(paths: Sequence[Path]) -> list[Path]:
    """results.json files named, or found at any depth below the folders named; each once."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.rglob("results.json") if p.is_file())
            if not inside:
                raise SpecrunError("no results.json below this folder", file=str(path))
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise SpecrunError("no such results file or folder", file=str(path))
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def _items(results: Results) -> dict[str, tuple[str, str, int]]:
    return {split: (d.fingerprint, d.selection, d.n_selected) for split, d in results.provenance.data.items()}


def check_same_items(first: Verified, other: Verified) -> None:
    """Runs of one spec ranked together must have scored the same items the same way; else one line naming both."""
    a, b = first.results, other.results
    prefix = f"{a.spec_id}: {other.path} and {first.path}"
    if a.provenance.spec_sha256 != b.provenance.spec_sha256:
        raise SpecrunError(f"{prefix} used different versions of the spec (sha256 {b.provenance.spec_sha256[:12]} "
                           f"vs {a.provenance.spec_sha256[:12]}): a protocol option, metric or item may differ, so "
                           "a difference need not be the model's; refusing to rank them together")
    items_a, items_b = _items(a), _items(b)
    if set(items_a) != set(items_b):
        raise SpecrunError(f"{prefix} evaluated different splits ({', '.join(sorted(items_b))} vs "
                           f"{', '.join(sorted(items_a))}); refusing to rank them together")
    for split, item in items_a.items():
        if items_b[split] != item:
            raise SpecrunError(f"{prefix} evaluated different items (split {split}: fingerprint {items_b[split][0]}"
                               f", {items_b[split][1]} vs {item[0]}, {item[1]}); refusing to rank them together")
    ua, ub = a.provenance.uncertainty, b.provenance.uncertainty
    if (ua.resamples, ua.confidence, ua.seed) != (ub.resamples, ub.confidence, ub.seed):
        raise SpecrunError(f"{prefix} used different bootstrap settings (resamples, confidence, seed "
                           f"{ub.resamples}, {ub.confidence}, {ub.seed} vs {ua.resamples}, {ua.confidence}, "
                           f"{ua.seed}); refusing to rank them together")
    if a.metrics != b.metrics or {s: sorted(m) for s, m in a.scores.items()} != {
            s: sorted(m) for s, m in b.scores.items()}:
        raise SpecrunError(f"{prefix} score different metrics or splits; refusing to rank them together")
    for key, (ids, _arrays) in first.units.items():
        other_ids = other.units.get(key, ([], {}))[0]
        if other_ids != ids:
            where = next((i for i, (x, y) in enumerate(zip(ids, other_ids, strict=False)) if x != y),
                         min(len(ids), len(other_ids)))
            raise SpecrunError(f"{prefix} evaluated different units (split {key[0]}, unit {where + 1}: "
                               f"{other_ids[where] if where < len(other_ids) else 'none'} vs "
                               f"{ids[where] if where < len(ids) else 'none'}); refusing to rank them together")


def headline(results: Results) -> tuple[str, str]:
    """The (split, metric id) a spec contributes across specs: its first metric, on `test` if scored, else on
    its last scored split."""
    split = "test" if "test" in results.scores else list(results.scores)[-1]
    return split, next(m for m in results.metrics if m in results.scores[split])


# ---------------------------------------------------------------------------------------------------- building


VARIANT_MODES = ("each", "worst", "mean")


def entry_identity(results: Results, prompt_variants: str) -> tuple[Any, ...]:
    """A run's row: its identity, or with --prompt-variants worst|mean its identity less the prompts (every
    prompt variant of one model configuration is one row)."""
    ident = run_identity(results)
    if prompt_variants == "each":
        return ident
    defaults = {name: ModelProvenance.model_fields[name].default for name in PROMPT_FLAGS}
    return (ident[0], *(defaults.get(name, value) for name, value in zip(IDENTITY_FIELDS, ident[1:], strict=True)))


def _rows(order: np.ndarray, ranking: Ranking, groups: Sequence[Sequence[Verified]], names: Sequence[str],
          split: str, metric_id: str, confidence: float) -> list[BoardRow]:
    rows = []
    for m in order:
        runs = groups[m]
        score = runs[0].results.scores[split][metric_id]
        if len(runs) > 1:  # the entry's statistic is its variants' worst or mean: its own interval
            low, high = percentile_interval(ranking.scores[:, m], confidence)
            score = score.model_copy(update={"value": float(ranking.observed[m]), "ci_low": low, "ci_high": high})
        rows.append(BoardRow(model=names[m], results=str(runs[0].path),
                             variant_results=[str(run.path) for run in runs] if len(runs) > 1 else [],
                             score=score.value,
                             ci_low=score.ci_low, ci_high=score.ci_high, n=score.n, rank=int(ranking.rank[m]),
                             rank_low=int(ranking.rank_low[m]), rank_high=int(ranking.rank_high[m]),
                             diff_to_best=float(ranking.diff[m]), diff_low=float(ranking.diff_low[m]),
                             diff_high=float(ranking.diff_high[m]), separable_from_best=bool(ranking.separable[m])))
    return rows


def board_method(runs: Sequence[Verified], split: str, metric_id: str, combined_variants: bool) -> str:
    """The interval method every run's score of this board names (they agree: one spec, one version)."""
    methods = {run.results.scores[split][metric_id].interval for run in runs}
    if len(methods) > 1:
        raise SpecrunError(f"{runs[0].results.spec_id} {split} {metric_id}: the runs' intervals were read by "
                           f"different methods ({', '.join(sorted(methods))}); refusing to rank them")
    method = methods.pop()
    if method == "bca" and combined_variants:
        raise SpecrunError(f"{runs[0].results.spec_id} {split} {metric_id}: a bca interval of prompt variants "
                           "reduced to their worst or mean is not computed (it has no jackknife); use "
                           "--prompt-variants each, or another interval method in the spec")
    return method


def spec_board(groups: Sequence[Sequence[Verified]], names: Sequence[str],
               prompt_variants: str = "each") -> tuple[SpecBoard, Ranking]:
    """Every board of one spec (an entry: one run, or a model's prompt variants reduced to their worst or mean);
    returns the headline board's ranking too, for the across-spec level."""
    runs = [run for group in groups for run in group]
    positions, start = [], 0
    for group in groups:
        positions.append(list(range(start, start + len(group))))
        start += len(group)
    first = runs[0].results
    u = first.provenance.uncertainty
    head = headline(first)
    boards, head_ranking = [], None
    for split, scores in first.scores.items():
        for metric_id in first.metrics:
            if metric_id not in scores:
                continue
            info = first.metrics[metric_id]
            metric = METRICS[info.metric]
            key = (split, info.protocol)
            models = [[np.asarray(run.units[key][1][name], dtype=np.float64) for name in metric.inputs]
                      for run in runs]
            runs_held = {n_runs(metric, data) for data in models}
            if len(runs_held) > 1:
                raise SpecrunError(f"{first.spec_id} {split} {metric_id}: the runs hold different numbers of fits "
                                   f"or random runs ({sorted(runs_held)}); refusing to rank them")
            method = board_method(runs, split, metric_id, combined_variants=prompt_variants != "each")
            observed, resampled = board_scores(metric.statistic, models, resamples=u.resamples, seed=u.seed,
                                               what=f"{first.spec_id} {split} {metric_id}", n_runs=runs_held.pop())
            if prompt_variants != "each":
                observed = combined(observed, positions, prompt_variants, info.direction)
                resampled = combined(resampled, positions, prompt_variants, info.direction)
            ranking = rank_scores(observed, resampled, direction=info.direction, confidence=u.confidence,
                                  method=method,
                                  paired=PairedStatistic(metric.statistic, models) if method == "bca" else None)
            order = np.array(sorted(range(len(groups)), key=lambda m: (ranking.rank[m], names[m])))
            better = [[float(ranking.better[i, j]) for j in order] for i in order]
            boards.append(Board(split=split, metric=metric_id, metric_label=info.label, direction=info.direction,
                                headline=(split, metric_id) == head, n_units=len(runs[0].units[key][0]),
                                best=names[ranking.best], better=better,
                                not_separable=[names[m] for m in order if not ranking.separable[m]],
                                rows=_rows(order, ranking, groups, names, split, metric_id, u.confidence)))
            if (split, metric_id) == head:
                head_ranking = ranking
    boards.sort(key=lambda board: not board.headline)
    assert head_ranking is not None
    return SpecBoard(spec_id=first.spec_id, title=first.title, resamples=u.resamples, confidence=u.confidence,
                     seed=u.seed, unit=dict(u.unit), boards=boards), head_ranking


def compute(runs: Sequence[Verified], *, title: str = "specrun leaderboard", resample_specs: bool = False,
            progress: Callable[[str], None] | None = None, prompt_variants: str = "each") -> Leaderboard:
    """The whole leaderboard from verified runs (any specs, any models): checks, labels, boards, overall. With
    prompt_variants worst|mean, a model's prompt variants (runs that differ in their prompts only) are one row,
    scored by their worst or mean variant in every resample."""
    if prompt_variants not in VARIANT_MODES:
        raise SpecrunError(f"--prompt-variants {prompt_variants}: expected one of {', '.join(VARIANT_MODES)}")
    by_spec: dict[str, list[Verified]] = {}
    for run in runs:
        by_spec.setdefault(run.results.spec_id, []).append(run)
    idents = list(dict.fromkeys(entry_identity(run.results, prompt_variants) for run in runs))
    names = run_labels(idents)
    variants_of: dict[tuple[Any, ...], list[str]] = {ident: [] for ident in idents}
    full_labels = dict(zip(dict.fromkeys(run_identity(run.results) for run in runs),
                           run_labels(list(dict.fromkeys(run_identity(run.results) for run in runs))), strict=True))
    for run in runs:
        label = full_labels[run_identity(run.results)]
        if label not in variants_of[entry_identity(run.results, prompt_variants)]:
            variants_of[entry_identity(run.results, prompt_variants)].append(label)
    if prompt_variants != "each":
        names = [f"{name} ({prompt_variants} of {len(variants_of[ident])} prompt variants)"
                 if len(variants_of[ident]) > 1 else name for name, ident in zip(names, idents, strict=True)]
    label_of = dict(zip(idents, names, strict=True))
    entries_of: dict[str, dict[tuple[Any, ...], list[Verified]]] = {}
    for spec_id in sorted(by_spec):  # every check before any board is computed (and any progress printed)
        group = by_spec[spec_id]
        seen: dict[tuple[Any, ...], Verified] = {}
        for run in group:
            check_same_items(group[0], run)
            ident = run_identity(run.results)
            if ident in seen:
                raise SpecrunError(f"{spec_id}: {run.path} and {seen[ident].path} are runs of the same model "
                                   f"configuration ({full_labels[ident]}); pass one of them")
            seen[ident] = run
        entries: dict[tuple[Any, ...], list[Verified]] = {}
        for run in group:
            entries.setdefault(entry_identity(run.results, prompt_variants), []).append(run)
        for ident, members in entries.items():  # a row is the worst (mean) of the same variants on every spec
            here = [full_labels[run_identity(run.results)] for run in members]
            if sorted(here) != sorted(variants_of[ident]):
                missing = sorted(set(variants_of[ident]) - set(here))
                raise SpecrunError(f"{spec_id}: --prompt-variants {prompt_variants} ranks {names[idents.index(ident)]}"
                                   f" by the same variants on every spec, but this spec lacks {'; '.join(missing)}; "
                                   "run them on it, or pass the runs of the variants it has")
        entries_of[spec_id] = entries
    spec_boards, observed, scores, directions, seeds = [], [], [], [], []
    for spec_id, entries in entries_of.items():
        ordered = sorted(entries, key=lambda ident: label_of[ident])  # ties for best: first label
        board, ranking = spec_board([entries[ident] for ident in ordered], [label_of[ident] for ident in ordered],
                                    prompt_variants)
        spec_boards.append(board)
        column = {idents.index(ident): m for m, ident in enumerate(ordered)}
        full_observed = np.full(len(idents), np.nan)
        full_scores = np.full((len(ranking.scores), len(idents)), np.nan)
        for global_m, m in column.items():
            full_observed[global_m] = ranking.observed[m]
            full_scores[:, global_m] = ranking.scores[:, m]
        observed.append(full_observed)
        scores.append(full_scores)
        directions.append(board.boards[0].direction)
        seeds.append(board.seed)
        if progress is not None:
            head = board.boards[0]
            progress(f"{spec_id}: {len(ordered)} model(s) on {head.split} {head.metric}; best {head.best}, "
                     f"not separable from it: {len(head.not_separable)}")
    confidence = max(b.confidence for b in spec_boards)
    overall = rank_overall(observed, scores, directions, confidence=confidence, resample_specs=resample_specs,
                           seeds=seeds)
    present = np.stack([np.isfinite(o) for o in observed]).sum(axis=0)
    rows = []
    for m in sorted(range(len(idents)), key=lambda m: (overall.borda_rank[m], names[m])):
        has_mean = overall.mean is not None and bool(np.isfinite(overall.mean[m]))
        rows.append(OverallRow(
            model=names[m], specs=int(present[m]), borda=float(overall.borda[m]),
            borda_rank=int(overall.borda_rank[m]), borda_rank_low=int(overall.borda_low[m]),
            borda_rank_high=int(overall.borda_high[m]),
            mean=float(overall.mean[m]) if has_mean else None,  # type: ignore[index]
            mean_rank=int(overall.mean_rank[m]) if has_mean else None,  # type: ignore[index]
            mean_rank_low=int(overall.mean_low[m]) if has_mean else None,  # type: ignore[index]
            mean_rank_high=int(overall.mean_high[m]) if has_mean else None))  # type: ignore[index]
    models = [ModelEntry(label=label, name=ident[0], prompt_variants=variants_of[ident] if prompt_variants != "each"
                         else [], **dict(zip(IDENTITY_FIELDS, ident[1:], strict=True)))
              for ident, label in zip(idents, names, strict=True)]
    return Leaderboard(title=title, models=models, specs=spec_boards, overall=Overall(
        specs=[b.spec_id for b in spec_boards], resamples=min(len(s) for s in scores), confidence=confidence,
        resample_specs=resample_specs, mean_direction=directions[0] if len(set(directions)) == 1 else None,
        rows=rows, prompt_variants=prompt_variants))


# ---------------------------------------------------------------------------------------------------- rendering

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


def _md(text: str) -> str:
    """Text from results files (labels, titles) made inert in a GFM table cell: control characters shown as
    escapes, then the one Markdown escaper."""
    return md_text(printable(str(text)))


def _ci(low: float, high: float) -> str:
    return f"[{low:.4f}, {high:.4f}]"


def _ranks(rank: int | None, low: int | None, high: int | None) -> str:
    if rank is None:
        return "—"
    return f"{rank} ({low}–{high})" if low != high else f"{rank} ({low})"


def _separable(row: BoardRow, best: str) -> str:
    return "best" if row.model == best else "yes" if row.separable_from_best else "no"


def render_markdown(board: Leaderboard) -> str:
    """CommonMark with GFM tables: the overall table, then every spec's boards."""
    o = board.overall
    percent = confidence_percent(o.confidence)
    lines = [f"# {_md(board.title)}", "", HOW_TO_READ.format(percent=percent, resamples=o.resamples), "",
             f"## Across benchmarks ({len(o.specs)}: {', '.join(_md(s) for s in o.specs)})", "",
             f"Rank intervals: {percent}, {o.resamples} joint resamples"
             + (", benchmarks resampled too" if o.resample_specs else "") + ".", "",
             "| Borda rank (interval) | model | Borda points | benchmarks | mean score | mean rank (interval) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in o.rows:
        mean = "—" if r.mean is None else f"{r.mean:.4f}"
        lines.append(f"| {_ranks(r.borda_rank, r.borda_rank_low, r.borda_rank_high)} | {_md(r.model)} | "
                     f"{r.borda:g} | {r.specs} | {mean} | {_ranks(r.mean_rank, r.mean_rank_low, r.mean_rank_high)} |")
    for spec in board.specs:
        sp = confidence_percent(spec.confidence)
        lines += ["", f"## {_md(spec.title)} (`{spec.spec_id}`)", "",
                  f"{spec.resamples} joint paired resamples of the {', '.join(sorted(set(spec.unit.values())))}, "
                  f"seed {spec.seed}, {sp} intervals."]
        for b in spec.boards:
            lines += ["", f"### {b.split} · {_md(b.metric_label)} (`{b.metric}`, {b.direction} is better"
                          + (", headline" if b.headline else "") + f", {b.n_units} units)", "",
                      f"Best: {_md(b.best)}. Not separable from the best: "
                      f"{', '.join(_md(m) for m in b.not_separable)}.", "",
                      f"| rank (interval) | model | score | {sp} CI | best − model | {sp} CI | separable from best |",
                      "| --- | --- | --- | --- | --- | --- | --- |"]
            for r in b.rows:
                lines.append(f"| {_ranks(r.rank, r.rank_low, r.rank_high)} | {_md(r.model)} | {r.score:.4f} | "
                             f"{_ci(r.ci_low, r.ci_high)} | {r.diff_to_best:+.4f} | "
                             f"[{r.diff_low:+.4f}, {r.diff_high:+.4f}] | {_separable(r, b.best)} |")
            if b.headline and 1 < len(b.rows) <= 12:
                lines += ["", "Share of resamples in which the row's model beats the column's:", "",
                          "| better than → | " + " | ".join(str(j + 1) for j in range(len(b.rows))) + " |",
                          "| --- |" + " --- |" * len(b.rows)]
                for i, r in enumerate(b.rows):
                    cells = ["—" if i == j else f"{b.better[i][j]:.2f}" for j in range(len(b.rows))]
                    lines.append(f"| {i + 1}. {_md(r.model)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
            axis = _axis([v for r in b.rows for v in (r.ci_low, r.ci_high, r.score)])
            boards.append({"board": b, "x": scale(axis, 1.0), "axis": axis, "models": len(b.rows)})
        specs.append({"spec": spec, "boards": boards, "percent": confidence_percent(spec.confidence)})
    configs = {m.label: ", ".join(describe_setting(field, getattr(m, field)) for field in IDENTITY_FIELDS)
               for m in board.models}
    return _ENV.get_template("leaderboard.html.j2").render(
        board=board, specs=specs, percent=percent, fmt=fmt, separable=_separable, configs=configs, short=_short,
        how_to_read=HOW_TO_READ.format(percent=percent, resamples=board.overall.resamples))


def build_leaderboard(paths: list[Path], output: Path, *, title: str | None = None,
                      console: Console | None = None, resample_specs: bool = False,
                      prompt_variants: str = "each") -> list[Path]:
    """`specrun leaderboard`: verify every run, rank, and write leaderboard.md, .json and .html into `output`
    (each atomically, and only once everything is computed)."""
    if output.exists() and not output.is_dir():
        raise SpecrunError("the leaderboard output must be a folder", file=str(output))
    runs = [load_verified(path) for path in find_results(paths)]
    board = compute(runs, title=title or "specrun leaderboard", resample_specs=resample_specs,
                    prompt_variants=prompt_variants,
                    progress=(lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))
                    if console is not None else None)
    board = Leaderboard.model_validate_json(board.model_dump_json())  # what is written is what validates
    files = {"leaderboard.md": render_markdown(board), "leaderboard.json": board.model_dump_json(indent=2) + "\n",
             "leaderboard.html": render_html(board)}
    written = []
    for name, text in files.items():
        write_atomic(output / name, text)
        written.append(output / name)
    return written


__all__ = ["Leaderboard", "build_leaderboard", "compute", "rank_board", "rank_overall",
           "resampled_scores"]
