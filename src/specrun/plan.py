"""Plan stage: each spec resolved once into an immutable plan, which every later stage reads instead of the YAML.

The spec stage has already validated keys, types, references and each protocol's typed options; the plan binds
names to registry entries (protocol kinds, metrics, readers), resolves each source split to its file, pins and
the key paths its errors name, and lists what will run, so the runner reads as the flow:
plan -> data -> cached encoder -> evaluate -> results -> reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from specrun.core import registry
from specrun.core.contracts import MetricEntry, ProtocolKind, ReaderEntry, ReadLayout
from specrun.core.errors import ProtocolError, SpecError
from specrun.core.registry import did_you_mean
from specrun.core.types import Role, View
from specrun.spec import FileRef, GitSource, HubDataset, LoadedSpec, Spec, Uncertainty
from specrun.spec.sample import RowSteps, Sample
from specrun.yamlsafe import KeyPath


@dataclass(frozen=True)
class PlannedMetric:
    id: str  # the spec's metric id, e.g. spearman_zero_shot
    metric: str  # the registered metric
    entry: MetricEntry  # its registry entry (inputs, statistic, direction, hub id)
    protocol: str  # the spec's protocol name it reads
    label: str
    direction: str
    interval: str = "percentile"  # the interval method: the spec's for this metric, else uncertainty.interval;
    # auto resolved to the metric's own (MetricEntry.interval)
    range: tuple[float, float] | None = None  # the spec's: the values the metric can take; intervals stay inside


@dataclass(frozen=True)
class PlannedProtocol:
    name: str  # the spec's protocol name, e.g. zero_shot
    kind: str
    entry: ProtocolKind[Any]  # the registered protocol (its info: fields, outputs, unit; its run)
    options: BaseModel  # its typed options, an instance of entry.Options (the spec model typed them)
    metrics: tuple[PlannedMetric, ...]
    support: tuple[str, ...] = ()  # the splits it fits on besides the evaluated one (loaded, never scored)
    roles: dict[str, Role] = field(default_factory=dict)  # every text field -> its role (the spec's or the kind's)
    instruction: str | None = None  # the spec's task instruction
    similarity: str = "cosine"  # as the spec asks (`model`: the model's own, resolved when the run knows it)

    def similarity_of(self, model_similarity: str) -> str:
        """The function this protocol compares vectors by: the spec's, or with `model` the model's own (already
        read by the run), refused in one line when the kind does not compare by it."""
        function = model_similarity if self.similarity == "model" else self.similarity
        if function not in self.entry.info.similarities:
            named = f"{function} (the model's similarity_fn_name)" if self.similarity == "model" else function
            raise ProtocolError(f"protocol {self.name}: kind {self.kind} compares vectors by "
                                f"{', '.join(self.entry.info.similarities)} only, not {named}")
        return function

    def view(self, text_field: str) -> View:
        """How the texts of a field are embedded: its role, the kind's task type, the instruction where it applies
        (queries and symmetric texts; a document is never instructed, as MTEB's instruct wrapper does)."""
        if text_field not in self.roles:
            raise ProtocolError(f"protocol kind {self.kind} embeds field {text_field!r}, which is not one of its "
                                f"text fields ({', '.join(self.roles)})")
        role = self.roles[text_field]
        return View(role=role, task=self.entry.info.prompt_task,
                    instruction=self.instruction if role != "document" else None)


@dataclass(frozen=True)
class PlannedFile:
    """One source split's file: where it lies and its pins, with the spec's key paths for error messages."""

    source_split: str
    ref: FileRef
    key: KeyPath  # the key naming its path in the mirror
    pins: KeyPath  # the key holding its sha256 pins


@dataclass(frozen=True)
class PlannedSource:
    """A source resolved: its declaration, the reader of its format (None: a hub dataset read by `datasets`) and
    each source split's file."""

    name: str
    declared: HubDataset | GitSource
    reader: ReaderEntry | None
    layout: ReadLayout | None  # what the reader is given: the format and its options (shared keys merged in)
    files: dict[str, PlannedFile]

    @property
    def read_by_datasets(self) -> bool:
        return isinstance(self.declared, HubDataset) and self.declared.mirror is None


@dataclass(frozen=True)
class PlannedSplit:
    name: str
    source: PlannedSource
    source_splits: tuple[str, ...]
    selection: str | int  # "all" or a count drawn with the seed
    ids: str  # running | per_file: how row numbers go on across source splits
    where: dict[str, Any] | None
    fingerprint: str | None
    evaluate: bool
    explode: tuple[str, ...] = ()  # columns whose lists become one row per element
    explode_row: str | None = None  # a column the new rows get: the number of the row they came from
    sample: Sample | None = None  # a seeded stratified sample of the rows, as MTEB's stratified_subsampling
    steps: RowSteps | None = None  # split_text, drop_rare (spec.sample.RowSteps)


@dataclass(frozen=True)
class Plan:
    """One spec, resolved: what is read (sources, files, readers), which protocols run on it and which metrics
    each feeds. The data stage, results and reports read this, never the YAML again."""

    loaded: LoadedSpec
    sources: dict[str, PlannedSource]
    all_splits: tuple[PlannedSplit, ...]  # every split, in spec order
    protocols: tuple[PlannedProtocol, ...]
    fields: dict[str, str]  # the item fields (and their kinds) the protocols need
    metric_ids: tuple[str, ...]  # every metric, in the spec's order
    seed: int
    uncertainty: Uncertainty
    chosen: tuple[str, ...] | None = None  # --splits: the evaluated splits scored (None: all the spec evaluates)
    limit: int | None = None  # --limit: the first N items of each split read (a smoke run)

    @property
    def resamples(self) -> int:
        return self.uncertainty.resamples

    @property
    def confidence(self) -> float:
        return self.uncertainty.confidence

    @property
    def splits(self) -> tuple[PlannedSplit, ...]:
        """The evaluated splits, in spec order."""
        return tuple(split for split in self.all_splits if split.evaluate)

    @property
    def support_splits(self) -> tuple[PlannedSplit, ...]:
        """The splits a protocol fits on and that are not evaluated: loaded and checked, never scored."""
        named = {name for protocol in self.protocols for name in protocol.support}
        return tuple(split for split in self.all_splits if split.name in named and not split.evaluate)

    def split(self, name: str) -> PlannedSplit:
        return next(split for split in self.all_splits if split.name == name)

    @property
    def spec(self) -> Spec:
        return self.loaded.spec

    @property
    def id(self) -> str:
        return self.loaded.spec.id

    def error(self, key: KeyPath, message: str) -> SpecError:
        """An error at a key of the spec: file, line, key path and message."""
        return self.loaded.error(key, message)


def _planned_source(name: str, source: HubDataset | GitSource) -> PlannedSource:
    reader = None if isinstance(source, HubDataset) and source.mirror is None else \
        registry.READERS[source.layout.format]
    layout = None if reader is None else ReadLayout(format=source.layout.format,
                                                    options=dict(source.layout.options))
    files = {split: PlannedFile(source_split=split, ref=source.file_for(split),
                                key=("sources", name, *source.mirror_key(split)),
                                pins=("sources", name, "files", split))
             for split in source.split_names}
    return PlannedSource(name=name, declared=source, reader=reader, layout=layout, files=files)


def interval_method(spec: Spec, metric_id: str) -> str:
    """A metric's interval method: the one its spec entry names, else uncertainty.interval; `auto` is the metric's
    own declared method."""
    named = spec.metrics[metric_id].interval or spec.uncertainty.interval
    return registry.METRICS[spec.metrics[metric_id].metric].interval if named == "auto" else named


def make_plan(loaded: LoadedSpec) -> Plan:
    spec = loaded.spec
    protocols = []
    fields: dict[str, str] = {}
    for name, protocol in spec.protocols.items():
        entry = registry.PROTOCOLS[protocol.kind]
        fields.update(entry.info.item_fields)
        metrics = tuple(PlannedMetric(id=metric_id, metric=m.metric, entry=registry.METRICS[m.metric], protocol=name,
                                      label=m.label, direction=m.direction,
                                      interval=interval_method(spec, metric_id), range=tuple(m.range))
                        for metric_id, m in spec.metrics.items() if m.protocol == name)
        options = protocol.options  # typed and checked by the spec model itself (a union discriminated by kind)
        if protocol.similarity != "model" and protocol.similarity not in entry.info.similarities:
            raise loaded.error(("protocols", name, "similarity"), f"protocol kind {protocol.kind} compares vectors by "
                               f"{', '.join(entry.info.similarities)} only, not {protocol.similarity}")
        protocols.append(PlannedProtocol(name=name, kind=protocol.kind, entry=entry, options=options,
                                         metrics=metrics, support=entry.support_splits(options),
                                         roles={text_field: entry.info.role_of(text_field, protocol.roles)
                                                for text_field in entry.info.text_fields},
                                         instruction=protocol.instruction, similarity=protocol.similarity))
    sources = {name: _planned_source(name, source) for name, source in spec.sources.items()}
    splits = tuple(PlannedSplit(name=name, source=sources[split.source],
                                source_splits=tuple(split.source_split_names),
                                selection=spec.subset.splits.get(name, "all"), ids=split.ids,
                                where=split.where, fingerprint=split.fingerprint, evaluate=split.evaluate,
                                explode=tuple(split.explode or ()), explode_row=split.explode_row,
                                sample=split.sample, steps=split)
                   for name, split in spec.splits.items())
    return Plan(loaded=loaded, sources=sources, all_splits=splits, protocols=tuple(protocols), fields=fields,
                metric_ids=tuple(spec.metrics), seed=spec.subset.seed, uncertainty=spec.uncertainty)


def choose(plan: Plan, splits: Sequence[str] | None, limit: int | None) -> Plan:
    """The plan as run: only the evaluated splits --splits names are scored (one the spec does not evaluate is one
    line naming those it does); the others stay loaded where a protocol fits on them. --limit is carried for the
    data stage (the first N items of each split read) and the results, which record both."""
    if splits is None:
        return replace(plan, limit=limit)
    evaluated = [split.name for split in plan.splits]
    for name in splits:
        if name not in evaluated:
            raise SpecError(f"--splits: {plan.id} evaluates no split {name!r}{did_you_mean(name, evaluated)}; its "
                            f"evaluated splits: {', '.join(evaluated)}", file=plan.loaded.display)
    chosen = tuple(name for name in evaluated if name in splits)  # in the spec's order
    kept = tuple(split if split.name in chosen or not split.evaluate else replace(split, evaluate=False)
                 for split in plan.all_splits)
    return replace(plan, all_splits=kept, chosen=chosen, limit=limit)
