"""Count-weighted statistics: every metric is written as metric(*arrays, weights), where a bootstrap resample is
the data with unit j taken weights[j] times and the plain value is weights = 1. Turning resampled indices into
counts lets one sort of the data serve all resamples (a resample's ranks follow from the counts), which keeps 1000
resamples of Spearman over 10,000 pairs well under a second; scipy's own spearmanr cannot do this (it reads a 2-D
input as many variables)."""

from __future__ import annotations

import numpy as np


def unit_counts(index: np.ndarray, n: int) -> np.ndarray:
    """(..., m) unit indices among n units -> (..., n) float multiplicities of each unit: a resample's (m = n) or a
    jackknife sample's (m = n - 1)."""
    flat = index.reshape(-1, index.shape[-1])
    offsets = (np.arange(flat.shape[0]) * n)[:, None]
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * n).reshape(flat.shape[0], n)
    return counts.reshape(*index.shape[:-1], n).astype(np.float64)


def sorted_ranks(ordered: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties share the mean) of values sorted ascending, unit j counted weights[..., j] times."""
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    if len(starts) == len(ordered):  # no ties: a unit's copies take ranks below+1 .. below+w, mean cum - (w-1)/2
        ranks = np.cumsum(weights, axis=-1)
        ranks -= 0.5 * weights
        ranks += 0.5
        return ranks
    group_weight = np.add.reduceat(weights, starts, axis=-1)
    rank_of_group = np.cumsum(group_weight, axis=-1) - (group_weight - 1) / 2
    return np.repeat(rank_of_group, np.diff(np.r_[starts, len(ordered)]), axis=-1)


def weighted_pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pearson r of x and y with each unit counted weights[..., j] times (x, y broadcast against weights). Both
    are centred on their plain mean first: r is shift-free, and the one-pass sums below lose digits to an offset
    (gold of 1e5 + s moved r in the 7th digit; 1e6 + s read as constant)."""
    x = np.asarray(x, dtype=np.float64) - np.mean(x, axis=-1, keepdims=True)
    y = np.asarray(y, dtype=np.float64) - np.mean(y, axis=-1, keepdims=True)
    x, y = np.broadcast_to(x, weights.shape), np.broadcast_to(y, weights.shape)
    total = weights.sum(axis=-1)
    wx, wy = weights * x, weights * y
    sum_x, sum_y = wx.sum(axis=-1), wy.sum(axis=-1)
    # sums of products in one pass each; in float64 the cancellation below costs ~1e-16 relative for ranks < 2^24
    raw_xx, raw_yy = np.einsum("...i,...i->...", wx, x), np.einsum("...i,...i->...", wy, y)
    sxy = np.einsum("...i,...i->...", wx, y) - sum_x * sum_y / total
    sxx, syy = raw_xx - sum_x * sum_x / total, raw_yy - sum_y * sum_y / total
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sxy / np.sqrt(sxx * syy)
    # a constant input leaves only rounding in sxx or syy: undefined, not a number near 0
    return np.where((sxx <= 1e-12 * raw_xx) | (syy <= 1e-12 * raw_yy), np.nan, r)


def mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return (weights * values).sum(axis=-1) / weights.sum(axis=-1)
