"""The contracts of the four kinds of things a registry holds, as typed classes: a protocol kind, a metric, a file
format (reader) and a model adapter. Each entry is checked when it registers (`check`), so a wrong entry is one
line naming its provider, not an AttributeError in the middle of a run."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from specrun.core.corpus import SharedCorpus
from specrun.core.types import (
    INTERVAL_METHODS,
    NO_SUPPORT,
    ROLES,
    Embed,
    FieldText,
    Item,
    Outputs,
    Role,
    Strict,
    Support,
)

Rows = list[dict[str, Any]]
DIRECTIONS = ("higher", "lower")
TEXT_FIELD_KINDS = ("text", "texts", "corpus")  # field kinds whose values are embedded (each has a role)


class NoOptions(Strict):  # the options of a protocol kind that takes none (no docstring: it would enter the schema)
    pass


@dataclass(frozen=True)
class KindExample:
    """A tiny, self-contained case of a protocol kind (items and options) that the per-kind grid test runs through
    evaluation with the hashing adapter: a kind is tested by being registered."""

    items: Sequence[Item]
    options: Mapping[str, Any] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()  # registered metrics to estimate on its outputs (default: every one it feeds)
    support: Support = field(default_factory=dict)  # the splits its options name (a fit split), by name


class ProtocolKind(ABC):
    """A kind of evaluation: which item fields it reads, which texts it embeds, how embeddings become per-unit
    outputs. A protocol never knows which benchmark it serves."""

    item_fields: ClassVar[Mapping[str, str]]  # field -> a kind registered in FIELD_KINDS
    outputs: ClassVar[tuple[str, ...]]  # the per-unit arrays its metrics read
    unit: ClassVar[str]  # what the bootstrap resamples (pairs, queries, ...)
    Options: ClassVar[type[BaseModel]] = NoOptions  # the spec's `options`, typed in the schema
    plot: ClassVar[tuple[str, str] | None] = None  # the outputs drawn against each other in a report
    hub_task: ClassVar[str] = "feature-extraction"  # the hub's task type
    hub_task_id: ClassVar[str | None] = None  # and subtask
    caption: ClassVar[str] = ""  # the report's caption for its plot
    split_options: ClassVar[tuple[str, ...]] = ()  # options whose value names a split it reads (fit_split, ...)
    roles: ClassVar[Mapping[str, Role]] = {}  # text field -> its role where it is not symmetric (the spec may
    # override it per field): queries and the documents they search for are embedded through the model's two paths
    prompt_task: ClassVar[str] = ""  # MTEB's task type (STS, Retrieval, ...): a model's prompts keyed by it apply

    def text_fields(self) -> tuple[str, ...]:
        """The item fields whose texts are embedded."""
        return tuple(name for name, kind in self.item_fields.items() if kind in TEXT_FIELD_KINDS)

    def role_of(self, field: str, overrides: Mapping[str, Role] | None = None) -> Role:
        """A text field's role: the spec's override, else the kind's declaration, else symmetric."""
        return (overrides or {}).get(field) or self.roles.get(field, "symmetric")

    def support_splits(self, options: Any) -> tuple[str, ...]:
        """The splits besides the evaluated one that `run` reads (the values of `split_options` that are set)."""
        named = (getattr(options, key, None) for key in self.split_options)
        return tuple(dict.fromkeys(name for name in named if name))

    def validate_items(self, items: Sequence[Item], options: Any, origin: str) -> None:  # noqa: B027
        """Refuse items the kind cannot score (DataError naming `origin`); default: nothing to check."""

    @abstractmethod
    def texts(self, items: Sequence[Item], options: Any, support: Support = NO_SUPPORT) -> Iterable[FieldText]:
        """Every (field, text) `run` will embed, the support splits' included (the encoder embeds each unique text
        of a view once); `run` asks `embed(texts, field)` for the same fields."""

    def corpora(self, items: Sequence[Item], options: Any) -> Iterable[tuple[str, SharedCorpus]]:
        """Every (field, corpus) `run` will embed a slice at a time (`embed(corpus.slice(start, stop), field)`):
        its documents are embedded from their digests and offsets, never listed as texts; default: none."""
        return ()

    @abstractmethod
    def run(self, items: Sequence[Item], embed: Embed, options: Any, support: Support = NO_SUPPORT) -> Outputs:
        """Per-unit outputs, aligned, in unit order; `support` holds the items of `support_splits(options)`."""

    def example(self) -> KindExample | None:
        """A tiny case for the per-kind grid test (None: the kind cannot run without a real model)."""
        return None


@dataclass(frozen=True)
class MetricEntry:
    """A metric and its metadata: what it reads, which way is better, what the hub calls it. `statistic` is
    count-weighted: statistic(*inputs, weights) with weights (..., units) -> (...), weights = 1 for the plain
    value, a resample's unit counts for the bootstrap."""

    inputs: tuple[str, ...]  # output arrays of a protocol; a protocol kind that produces them all can feed it
    statistic: Callable[..., np.ndarray]
    must_vary: tuple[str, ...] = ()  # inputs whose constancy makes the metric undefined (correlations)
    count: Callable[..., int] | None = None  # units the value is computed on, when not all of them
    direction: str = "higher"  # which way is better, the default of a spec's `direction`
    hub_id: str = ""  # the hub's metric type (pearsonr, spearmanr, accuracy, map, ...); "" = the metric's name
    per_run: bool = False  # the first input may be (units, runs), the others (units,); statistic returns
    # (..., runs): one value per run
    interval: str = "percentile"  # the interval method `uncertainty.interval: auto` gives it: the one whose
    # coverage bench/coverage.py measured closest to its confidence for this family (BENCHMARKS.md)


@dataclass(frozen=True)
class ReadLayout:
    """What a reader is given besides the path: the source's format and its options (a dict, already validated by
    the reader's own options model; a reader that wants them typed validates them again with that model)."""

    format: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReaderEntry:
    """A file format: `read(path, layout, source_split) -> rows` (one dict per row, column -> value), `layout` a
    `ReadLayout`."""

    name: str
    read: Callable[[Path, Any, str], Rows]
    folder: bool = False  # the source split is a folder (query folders, BEIR), not one file
    options: type[BaseModel] | None = None  # model of `options` in the spec, for a plugin's own settings
    description: str = ""
    provider: str = "specrun"  # the distribution that registered it
    files_read: Callable[[Mapping[str, Any], str], list[str]] | None = None  # folder formats: the files inside
    # the folder it reads for (options, source split), so the spec check can demand a sha256 pin for each


@dataclass(frozen=True)
class AdapterEntry:
    """A model adapter: `factory(model, settings, devices)` builds an object with `info`,
    `encode_group(texts, batch_size, role, prompt)` (role: the model's query, document or plain path; prompt: the
    text put before each, already resolved) and `close()`; its metadata says what the adapter needs, so no stage
    tests an adapter's name."""

    name: str
    factory: Callable[..., Any]
    needs_model: bool = True  # False: no model is read (nothing in the model folder can stop it, no GPU)
    dtypes: tuple[str, ...] = ("float32",)  # what the model may compute in (--dtype)
    description: str = ""
    provider: str = "specrun"


def _problems_of_protocol(entry: Any, field_kinds: Container[str]) -> list[str]:
    if not isinstance(entry, ProtocolKind):
        return ["is not a specrun.core.contracts.ProtocolKind"]
    problems = []
    fields = getattr(entry, "item_fields", None)
    if not isinstance(fields, Mapping) or not fields:
        problems.append("item_fields must map each field to a field kind")
    else:
        unknown = sorted(kind for kind in fields.values() if kind not in field_kinds)
        if unknown:
            problems.append(f"item_fields name unknown field kinds {unknown} (register them in FIELD_KINDS first)")
    outputs = getattr(entry, "outputs", None)
    if not isinstance(outputs, tuple) or not outputs or not all(isinstance(o, str) for o in outputs):
        problems.append("outputs must be a non-empty tuple of names")
    if not isinstance(getattr(entry, "unit", None), str) or not entry.unit:
        problems.append("unit must name what the bootstrap resamples")
    if not (isinstance(entry.Options, type) and issubclass(entry.Options, BaseModel)):
        problems.append("Options must be a pydantic model")
    if entry.plot is not None and (len(entry.plot) != 2 or not set(entry.plot) <= set(outputs or ())):
        problems.append("plot must be two of its outputs, or None")
    for method in ("texts", "run"):
        if "support" not in inspect.signature(getattr(entry, method)).parameters:
            problems.append(f"{method} must take `support` (the items of the splits its options name)")
    if isinstance(fields, Mapping):
        text_fields = [name for name, kind in fields.items() if kind in TEXT_FIELD_KINDS]
        bad_roles = {name: role for name, role in dict(getattr(entry, "roles", {})).items()
                     if name not in text_fields or role not in ROLES}
        if bad_roles:
            problems.append(f"roles {bad_roles} must map text fields ({', '.join(text_fields)}) to one of {ROLES}")
    unknown_options = [key for key in entry.split_options if key not in getattr(entry.Options, "model_fields", {})]
    if unknown_options:
        problems.append(f"split_options {unknown_options} are not options of the kind")
    return problems


def _problems_of_metric(entry: Any, field_kinds: Container[str]) -> list[str]:
    if not isinstance(entry, MetricEntry):
        return ["is not a specrun.core.contracts.MetricEntry"]
    problems = []
    if not entry.inputs or not all(isinstance(name, str) for name in entry.inputs):
        problems.append("inputs must be a non-empty tuple of output names")
    if not callable(entry.statistic):
        problems.append("statistic must be callable")
    if not set(entry.must_vary) <= set(entry.inputs):
        problems.append("must_vary must be among its inputs")
    if entry.direction not in DIRECTIONS:
        problems.append(f"direction must be one of {DIRECTIONS}")
    if entry.interval not in INTERVAL_METHODS:
        problems.append(f"interval must be one of {INTERVAL_METHODS}")
    return problems


def _problems_of_reader(entry: Any, field_kinds: Container[str]) -> list[str]:
    if not isinstance(entry, ReaderEntry):
        return ["is not a specrun.core.contracts.ReaderEntry"]
    problems = []
    if not callable(entry.read):
        problems.append("read must be callable")
    if entry.options is not None and not (isinstance(entry.options, type) and issubclass(entry.options, BaseModel)):
        problems.append("options must be a pydantic model or None")
    return problems


def _problems_of_adapter(entry: Any, field_kinds: Container[str]) -> list[str]:
    if not isinstance(entry, AdapterEntry):
        return ["is not a specrun.core.contracts.AdapterEntry"]
    problems = []
    if not callable(entry.factory):
        problems.append("factory must be callable")
    if not entry.dtypes or "float32" not in entry.dtypes:
        problems.append("dtypes must include float32")
    return problems


# what each registry checks an entry for; `field_kinds` are the field kinds registered so far
CHECKS: dict[str, Callable[[Any, Container[str]], list[str]]] = {
    "protocol kind": _problems_of_protocol,
    "metric": _problems_of_metric,
    "format": _problems_of_reader,
    "adapter": _problems_of_adapter,
    "field kind": lambda entry, _: [] if callable(entry) else ["is not a converter (a callable)"],
}
