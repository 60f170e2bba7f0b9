"""Means over queries of the candidate-list measures (`protocols.ranking.rank_measures`): MAP, MRR, P@K, R@K,
nDCG@10."""

from __future__ import annotations

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS
from specrun.core.types import RANK_CUTOFFS
from specrun.metrics.weighted import mean

METRICS.register("map", MetricEntry(("ap",), mean, hub_id="map"))
METRICS.register("mrr", MetricEntry(("rr",), mean, hub_id="mrr"))
for _kind in ("precision", "recall"):
    for _k in RANK_CUTOFFS:
        METRICS.register(f"{_kind}_at_{_k}", MetricEntry((f"{_kind}_at_{_k}",), mean, hub_id=f"{_kind}_at_{_k}"))
METRICS.register("ndcg_at_10", MetricEntry(("ndcg_at_10",), mean, hub_id="ndcg_at_10"))
