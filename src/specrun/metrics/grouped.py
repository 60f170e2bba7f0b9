"""Metrics over groups of a protocol's units (InstructIR's robustness@10: the mean over query groups of the lowest
nDCG@10 among a group's queries, MTEB's `robustness_at_10` in mteb/_evaluators/retrieval_metrics.py). The group of
each unit is an output (`query_group`, a code per unit); a group's value is fixed by all its units, and the
resampled unit of the statistic is the group: only each group's first unit carries the group's value and weight,
so a bootstrap's unit counts weigh the groups (each group's count a draw of about Poisson(1), the Poisson
bootstrap over groups) and the value is their weighted mean."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS


def _first_and_lowest(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's group's lowest value, and a mask of each group's first unit (in unit order)."""
    codes, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
    lowest = np.full(len(codes), np.inf)
    np.minimum.at(lowest, inverse, values)
    leader = np.zeros(len(values), dtype=bool)
    leader[first] = True
    return lowest[inverse], leader


def group_lowest_mean(values: np.ndarray, groups: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted mean over groups of each group's lowest value (weights (..., units): a group's weight is its
    first unit's)."""
    lowest, leader = _first_and_lowest(values, groups)
    kept = np.asarray(weights) * leader
    with np.errstate(invalid="ignore", divide="ignore"):
        return (kept * lowest).sum(axis=-1) / kept.sum(axis=-1)


def n_groups(values: np.ndarray, groups: np.ndarray) -> int:
    return len(np.unique(groups))


METRICS.register("robustness_at_10", MetricEntry(("ndcg_cut_10", "query_group"), group_lowest_mean,
                                                 count=n_groups, hub_id="robustness_at_10"))
