"""Metrics of the corpus retrieval protocol: each is the mean over queries of one of its per-query trec_eval
measures (`protocols.ranking.trec_measures` defines them), registered as `<measure>_cut_<K>` so they never clash
with the candidate-list protocol's `map`, `mrr`, `ndcg_at_10`, `precision_at_K`, `recall_at_K`, whose definitions
differ (graded gains here; AP and RR cut at K; P@K over K even for short lists)."""

from __future__ import annotations

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS
from specrun.core.types import CORPUS_CUTOFFS, TREC_MEASURES, trec_output
from specrun.metrics.weighted import mean

HUB_NAMES = {"ndcg": "ndcg_at_{k}", "map": "map_at_{k}", "mrr": "mrr_at_{k}", "recall": "recall_at_{k}",
             "precision": "precision_at_{k}"}  # what MTEB calls them on the hub

for _measure in TREC_MEASURES:
    for _k in CORPUS_CUTOFFS:
        _name = trec_output(_measure, _k)
        METRICS.register(_name, MetricEntry((_name,), mean, hub_id=HUB_NAMES[_measure].format(k=_k)))
