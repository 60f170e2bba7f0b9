"""Metrics of the instruction retrieval and paired reranking protocols: p-MRR (FollowIR's paired MRR change, as
MTEB's `calculate_pmrr` / `rank_score`; per query in `protocols.ranking.p_mrr`, per pair in
`protocols.paired_reranking`) and the trec measures of the original (`og_`) and changed (`changed_`) rankings, each
the mean over units of its per-unit value."""

from __future__ import annotations

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS
from specrun.core.types import CORPUS_CUTOFFS, TREC_MEASURES, trec_output
from specrun.metrics.trec import HUB_NAMES
from specrun.metrics.weighted import mean

INSTRUCTIONS = ("og", "changed")  # MTEB's names for the two runs (its `-og` / `-changed` query ids)


METRICS.register("p_mrr", MetricEntry(("p_mrr",), mean, hub_id="p-MRR"))
for _which in INSTRUCTIONS:
    for _measure in TREC_MEASURES:
        for _k in CORPUS_CUTOFFS:
            _name = f"{_which}_{trec_output(_measure, _k)}"
            METRICS.register(_name, MetricEntry((_name,), mean, hub_id=f"{_which}.{HUB_NAMES[_measure].format(k=_k)}"))
