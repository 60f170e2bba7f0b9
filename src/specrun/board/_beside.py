"""Our runs ranked among published points (MTEB's result files): a published number is a fixed point, with no
interval and no resamples; our rows keep theirs. Notation: P published values p_1..p_P (signed: higher is
better), our M entries with observed T_m and plausible resampled T_bm (the board's joint bootstrap, read by the
metric's interval method, `ranking.rank_scores`), b = 1..B.

    rank of a row (observed)   = 1 + #{published p > its value} + #{our m : T_m > its value}
                                 ties take the best (minimum) rank, "1224", as MTEB's leaderboard ranks
                                 (polars `rank(method="min", descending=True)` on a task's scores)
    rank_bm of our m           = 1 + #{p > T_bm} + #{m' : T_bm' > T_bm}   (published points fixed)
    our rank interval          = [floor Q_alpha(rank_.m), ceil Q_(1-alpha)(rank_.m)], as `ranking.rank_interval`
    a published row            has its observed rank only: with no resamples it has no interval

Suite boards use the same reading for an aggregate (MTEB's Mean(Task), Mean(TaskType)) and for Borda: per member,
points = #rows below + half the rows tied (`ranking.borda_points`, MTEB's n - average rank) over the published
models with every member and our runs, summed over members; per resample b our members' b-th values against the
fixed published ones."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specrun.board._ranking import borda_points, min_ranks, rank_interval


@dataclass(frozen=True)
class Beside:
    """Ranks in the table of published points and our entries (arrays: published, then ours in input order)."""

    published_rank: np.ndarray  # (P,)
    rank: np.ndarray  # (M,) our observed ranks
    rank_low: np.ndarray  # (M,)
    rank_high: np.ndarray  # (M,)


def _strictly_above(sorted_points: np.ndarray, values: np.ndarray) -> np.ndarray:
    """How many of the (ascending) points are strictly greater than each value."""
    return len(sorted_points) - np.searchsorted(sorted_points, values, side="right")


def rank_beside(published: np.ndarray, observed: np.ndarray, scores: np.ndarray, *, direction: str,
                confidence: float) -> Beside:
    """(P,) published values, (M,) our observed and (B, M) plausible resampled values -> ranks (module docstring)."""
    sign = 1.0 if direction == "higher" else -1.0
    points = np.sort(sign * np.asarray(published, dtype=float))
    ours = sign * np.asarray(observed, dtype=float)
    resampled = sign * np.asarray(scores, dtype=float)
    published_rank = 1 + _strictly_above(np.sort(ours), sign * np.asarray(published, dtype=float)) + \
        _strictly_above(points, sign * np.asarray(published, dtype=float))
    rank = min_ranks(ours) + _strictly_above(points, ours)
    ranks = min_ranks(resampled) + _strictly_above(points, resampled)
    low, high = rank_interval(ranks, confidence)
    return Beside(published_rank=published_rank, rank=rank, rank_low=low, rank_high=high)


@dataclass(frozen=True)
class BordaBeside:
    points: np.ndarray  # (P + M,) published then ours
    rank: np.ndarray  # (P + M,)
    rank_low: np.ndarray  # (M,) ours
    rank_high: np.ndarray  # (M,)


def borda_beside(published: np.ndarray, observed: np.ndarray, resampled: np.ndarray, *, direction: str,
                 confidence: float) -> BordaBeside:
    """MTEB's Borda over published models and our runs: (K, P) published member values, (K, M) our observed and
    (K, B, M) our resampled member values; per resample the published values stay fixed."""
    sign = 1.0 if direction == "higher" else -1.0
    fixed = sign * np.asarray(published, dtype=float)
    table = np.concatenate([fixed, sign * np.asarray(observed, dtype=float)], axis=1)  # (K, P + M)
    points = borda_points(table).sum(axis=0)
    k, b, m = resampled.shape
    per_b = np.concatenate([np.broadcast_to(fixed[:, None, :], (k, b, fixed.shape[1])), sign * resampled], axis=2)
    points_b = np.zeros((b, fixed.shape[1] + m))
    for member in range(k):  # one member at a time: (B, P + M) points
        points_b += borda_points(per_b[member])
    ranks_b = 1 + np.sum(points_b[:, None, :] > points_b[:, fixed.shape[1]:, None], axis=-1)  # (B, M): ours
    low, high = rank_interval(ranks_b, confidence)
    return BordaBeside(points=points, rank=min_ranks(points), rank_low=low, rank_high=high)


__all__ = ["Beside", "BordaBeside", "borda_beside", "rank_beside"]
