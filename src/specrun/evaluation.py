"""Evaluation: each planned protocol runs on each split with the embeddings, and each of its metrics gets its
estimate and bootstrap interval (through the derived cache, keyed by the exact inputs and library versions)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from specrun.core.contracts import RunContext, announced_embed
from specrun.core.derived import DerivedCache
from specrun.core.errors import SpecrunError
from specrun.core.types import Embed, Item, Outputs, Score, Support, View
from specrun.data import SplitData
from specrun.encoders.session import Scope
from specrun.metrics import estimate
from specrun.plan import Plan, PlannedMetric, PlannedProtocol


@dataclass(frozen=True)
class ProtocolRun:
    """One protocol on one split: its per-unit outputs and the score of each metric it feeds."""

    split: str
    protocol: str
    kind: str
    outputs: Outputs
    scores: dict[str, Score]  # metric id -> score
    similarity: str = "cosine"  # the function its vectors were compared by, resolved


def evaluate(plan: Plan, splits: dict[str, SplitData], scope: Scope,
             derived: DerivedCache | None = None) -> list[ProtocolRun]:
    """Every protocol on every evaluated split; `splits` holds the support splits (fit splits) too. A protocol
    asks for a field's texts; the scope's `embed_view` gives them as that field's view (role, task, instruction)
    is embedded; the rest of the scope reaches each protocol's `run` as its `RunContext` (`run_context`)."""
    runs = []
    for split in plan.splits:
        items = splits[split.name].items
        for protocol in plan.protocols:
            support = {name: splits[name].items for name in protocol.support}
            with SpecrunError.named(f"{plan.id}, split {split.name}, protocol {protocol.name}"):
                context = run_context(protocol, items, support, scope)
                outputs = protocol.entry.run(items, context, protocol.options)
            scores = {}
            for metric in protocol.metrics:
                try:
                    scores[metric.id] = cached_estimate(derived, metric, outputs.arrays, plan)
                except SpecrunError as exc:
                    raise exc.prefixed(f"{plan.id}, split {split.name}, {metric.id}") from None
            runs.append(ProtocolRun(split=split.name, protocol=protocol.name, kind=protocol.kind, outputs=outputs,
                                    scores=scores, similarity=context.similarity))
    return runs


def field_embed(protocol: PlannedProtocol, embed_view: Callable[[View, Sequence[str]], np.ndarray]) -> Embed:
    """Texts of one of a protocol's fields, embedded in that field's view."""
    return lambda texts, text_field: embed_view(protocol.view(text_field), texts)


def run_context(protocol: PlannedProtocol, items: Sequence[Item], support: Support, scope: Scope) -> RunContext:
    """What a protocol's `run` is handed: an `Embed` of only the texts its `texts` announced, its support splits,
    and the scope as this protocol takes it: the run's chunk mapper and execution options, the similarity resolved
    for it, the rerank only where its kind reranks."""
    embed = announced_embed(protocol.kind, protocol.entry, items, protocol.options, support,
                            field_embed(protocol, scope.embed_view))
    return RunContext(embed=embed, support=support, chunk_map=scope.chunk_map,
                      similarity=protocol.similarity_of(scope.similarity),
                      rerank=scope.rerank if protocol.entry.info.reranks else None, execution=scope.execution)


def cached_estimate(derived: DerivedCache | None, metric: PlannedMetric, arrays: dict[str, np.ndarray],
                    plan: Plan) -> Score:
    """metrics.estimate by the metric's interval method, through the derived cache when there is one (a damaged
    entry is reported, recomputed)."""
    settings = {"resamples": plan.resamples, "confidence": plan.confidence, "seed": plan.seed,
                "interval": metric.interval, "bounds": metric.range}
    if derived is None:
        return estimate(metric.metric, arrays, **settings)
    key = derived.key("estimate", metric.metric, plan.resamples, plan.confidence, plan.seed, metric.interval,
                      *(() if metric.range is None else ("range", *metric.range)),
                      arrays=[arrays[k] for k in metric.entry.inputs])
    stored = derived.get(key, "estimate")
    if stored is not None:
        try:
            return Score.model_validate_json(stored)
        except ValueError:  # pydantic's ValidationError is a ValueError
            derived.discard(key, "estimate", "not a score")
    score = estimate(metric.metric, arrays, **settings)
    derived.put(key, score.model_dump_json().encode())
    return score
