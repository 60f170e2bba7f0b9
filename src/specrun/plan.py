"""Plan stage: each spec resolved once into an immutable plan, which every later stage reads instead of the YAML.

The spec stage has already validated keys, types, references and each protocol's typed options; the plan binds
names to registry entries (protocol kinds, metrics) and lists what will run, so the runner reads as the flow:
plan -> data -> cached encoder -> evaluate -> results -> reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specrun.core import registry
from specrun.spec import LoadedSpec, Spec


@dataclass(frozen=True)
class PlannedMetric:
    id: str  # the spec's metric id, e.g. spearman_zero_shot
    metric: str  # the registered metric
    entry: Any  # its registry entry (inputs, statistic, direction, hub id)
    protocol: str  # the spec's protocol name it reads
    label: str
    direction: str


@dataclass(frozen=True)
class PlannedProtocol:
    name: str  # the spec's protocol name, e.g. zero_shot
    kind: str
    entry: Any  # the registered protocol (fields, outputs, unit, run)
    options: Any  # its typed options
    metrics: tuple[PlannedMetric, ...]


@dataclass(frozen=True)
class PlannedSplit:
    name: str
    source: str
    source_splits: tuple[str, ...]
    selection: str | int  # "all" or a count drawn with the seed


@dataclass(frozen=True)
class Plan:
    """One spec, resolved: what is read, which protocols run on it and which metrics each feeds."""

    loaded: LoadedSpec
    splits: tuple[PlannedSplit, ...]  # evaluated splits only, in spec order
    protocols: tuple[PlannedProtocol, ...]
    seed: int
    resamples: int
    confidence: float

    @property
    def spec(self) -> Spec:
        return self.loaded.spec

    @property
    def id(self) -> str:
        return self.loaded.spec.id


def make_plan(loaded: LoadedSpec) -> Plan:
    spec = loaded.spec
    protocols = []
    for name, protocol in spec.protocols.items():
        entry = registry.PROTOCOLS[protocol.kind]
        metrics = tuple(PlannedMetric(id=metric_id, metric=m.metric, entry=registry.METRICS[m.metric], protocol=name,
                                      label=m.label, direction=m.direction)
                        for metric_id, m in spec.metrics.items() if m.protocol == name)
        protocols.append(PlannedProtocol(name=name, kind=protocol.kind, entry=entry,
                                         options=entry.Options.model_validate(protocol.options), metrics=metrics))
    splits = tuple(PlannedSplit(name=name, source=spec.splits[name].source,
                                source_splits=tuple(spec.splits[name].source_split_names),
                                selection=spec.subset.splits[name])
                   for name in spec.evaluated_splits)
    return Plan(loaded=loaded, splits=splits, protocols=tuple(protocols), seed=spec.subset.seed,
                resamples=spec.uncertainty.resamples, confidence=spec.uncertainty.confidence)
