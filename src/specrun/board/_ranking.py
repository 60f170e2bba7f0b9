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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from specrun.core.errors import CompareError
from specrun.metrics import intervals
from specrun.metrics.resampling import draws, mean_over_runs

RANK_CELLS = 1 << 22  # (resamples x models x models) booleans held at once when ranking


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
    return 1 + np.sum(intervals.beats(signed[..., None, :], signed[..., :, None]), axis=-1)


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
        raise CompareError(f"{what}: some resamples are degenerate for some model; ranks are undefined")
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
        pairwise = intervals.beats(signed[:, :, None], signed[:, None, :])  # [b, i, j]: i beats j
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
        scale = np.maximum(np.abs(signed_scores[:, [i]]), np.abs(signed_scores))
        out[i] = np.mean(intervals.ahead(intervals.plausible(method, signed_observed[i] - signed_observed,
                                                             differences), scale), axis=0)
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
        above = intervals.beats(block[:, :, None], block[:, None, :])  # [b, i, j]: i above j beyond rounding
        below = above.sum(axis=2)
        tied = (~above & ~above.transpose(0, 2, 1)).sum(axis=2) - 1  # minus itself
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
