"""The contracts of the four kinds of things a registry holds, as typed classes: a protocol kind, a metric, a file
format (reader) and a model adapter. Each entry is checked when it registers (`check`), so a wrong entry is one
line naming its provider, not an AttributeError in the middle of a run."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from specrun.core.corpus import CorpusSlice, SharedCorpus
from specrun.core.errors import ProtocolError
from specrun.core.mapping import ChunkMap
from specrun.core.options import Execution
from specrun.core.types import (
    INTERVAL_METHODS,
    NO_SUPPORT,
    ROLES,
    SIMILARITIES,
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


class KindOptions(Strict):  # a kind's options: strict types, as the rest of the spec (`true` is not the count 1)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class NoOptions(KindOptions):  # the options of a kind that takes none (no docstring: it would enter the schema)
    pass


OptionsT = TypeVar("OptionsT", bound=BaseModel)  # a protocol kind's options model


@dataclass(frozen=True)
class KindExample:
    """A tiny, self-contained case of a protocol kind (items and options) that the per-kind grid test runs through
    evaluation with the hashing adapter: a kind is tested by being registered."""

    items: Sequence[Item]
    options: Mapping[str, Any] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()  # registered metrics to estimate on its outputs (default: every one it feeds)
    support: Support = field(default_factory=dict)  # the splits its options name (a fit split), by name


@dataclass(frozen=True)
class KindInfo:
    """What the other stages read about a protocol kind, declared once beside its code: the schema, the data
    stage, the encoder's views, the reports and the hub maps read this, never the kind's methods."""

    item_fields: Mapping[str, str]  # field -> a kind registered in FIELD_KINDS
    outputs: tuple[str, ...]  # the per-unit arrays its metrics read
    unit: str  # what the bootstrap resamples (pairs, queries, ...)
    prompt_task: str = ""  # MTEB's task type (STS, Retrieval, ...): a model's prompts keyed by it apply
    roles: Mapping[str, Role] = field(default_factory=dict)  # text field -> its role where it is not symmetric
    # (the spec may override it per field): queries and the documents they search are embedded through two paths
    split_options: tuple[str, ...] = ()  # options whose value names a split it reads (fit_split, ...)
    plot: tuple[str, str] | None = None  # the outputs drawn against each other in a report
    caption: str = ""  # the report's caption for its plot
    hub_task: str = "feature-extraction"  # the hub's task type
    hub_task_id: str | None = None  # and subtask
    gold: Mapping[str, str] = field(default_factory=dict)  # output -> the item field it copies (verify re-reads it)
    similarities: tuple[str, ...] = ("cosine",)  # the functions its `run` compares vectors by (search.similarity:
    # cosine, dot, euclidean, manhattan); a spec's `similarity:` outside them is refused when the plan is made
    reranks: bool = False  # whether its `run` applies a RunContext's `rerank` (two-stage ranking); a --reranker
    # run of a spec with a kind that does not is refused before anything is encoded
    every_item_a_unit: bool = True  # each item scored is one unit, its id the item's: verify holds a run's units to
    # the items it records (False where units are a sample, every other item or groups of items)

    @property
    def text_fields(self) -> tuple[str, ...]:
        """The item fields whose texts are embedded (a corpus' included: it is embedded a slice at a time)."""
        return tuple(name for name, kind in self.item_fields.items() if kind in TEXT_FIELD_KINDS)

    def role_of(self, field: str, overrides: Mapping[str, Role] | None = None) -> Role:
        """A text field's role: the spec's override, else the kind's declaration, else symmetric."""
        return (overrides or {}).get(field) or self.roles.get(field, "symmetric")


PairScore = Callable[[Sequence[str], Sequence[str]], np.ndarray]  # (queries, documents), aligned -> a score each


@dataclass(frozen=True)
class Rerank:
    """The second stage of a two-stage ranking: a cross-encoder's score of (query, document) pairs, higher is more
    relevant, and how many of a query's first-stage documents it rescores."""

    score: PairScore
    top_k: int


@dataclass(frozen=True)
class RunContext:
    """What a kind's `run` is handed besides its items and options: the way to embed, the support splits' items,
    how to map chunks of work (a later stage's executor) and the run's execution options, so a kind never reaches
    for them elsewhere. A run-wide option a kind reads is a field of `Execution`: it reaches every kind here with
    no stage in between changed."""

    embed: Embed  # texts of one field -> vectors; only what `texts` / `corpora` announced
    support: Support = field(default_factory=lambda: NO_SUPPORT)  # the items of `support_splits(options)`, by split
    chunk_map: ChunkMap | None = None  # None: map in this process (core.mapping)
    similarity: str = "cosine"  # the function to compare vectors by, resolved (a spec's `model`: the model's own),
    # always one of the kind's `info.similarities`
    rerank: Rerank | None = None  # --reranker: the first stage's top k rescored (only for a kind that `reranks`)
    execution: Execution = field(default_factory=Execution)  # where and how the run computes (changes no number)


class ProtocolKind(ABC, Generic[OptionsT]):
    """A kind of evaluation: which item fields it reads (`info`), which texts it embeds, how embeddings become
    per-unit outputs (`run`). A protocol never knows which benchmark it serves."""

    info: ClassVar[KindInfo]
    Options: type[OptionsT]  # the spec's `options`, typed in the schema (NoOptions: none); `run` gets an instance

    def support_splits(self, options: OptionsT) -> tuple[str, ...]:
        """The splits besides the evaluated one that `run` reads (the values of `split_options` that are set)."""
        named = (getattr(options, key) for key in self.info.split_options)
        return tuple(dict.fromkeys(name for name in named if name))

    def validate_items(self, items: Sequence[Item], options: OptionsT, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        """The one place a kind refuses data it cannot score (a DataError; `file=origin` for a fault of the rows):
        called for each evaluated split on the items the run scores (the subset drawn, --limit applied), with
        the support splits' items, before anything is encoded; `texts` and `run` may then take the data as
        sound. Default: nothing to check."""

    def texts(self, items: Sequence[Item], options: OptionsT, support: Support = NO_SUPPORT) -> Iterable[FieldText]:
        """Every (field, text) `run` will embed, the support splits' included (the encoder embeds each unique text
        of a view once). Default: every text of the text and texts fields of the items and the support items;
        a kind that embeds anything else (a template filled in, a sample of a fit split) says so here."""
        fields = [(name, kind) for name, kind in self.info.item_fields.items() if kind in ("text", "texts")]
        for group in (items, *support.values()):
            for item in group:
                for name, kind in fields:
                    if kind == "text":
                        yield name, item.fields[name]
                    else:
                        yield from ((name, text) for text in item.fields[name])

    def corpora(self, items: Sequence[Item], options: OptionsT) -> Iterable[tuple[str, SharedCorpus]]:
        """Every (field, corpus) `run` will embed a slice at a time (`embed(corpus.slice(start, stop), field)`):
        its documents are embedded from their digests and offsets, never listed as texts; default: none."""
        return ()

    @abstractmethod
    def run(self, items: Sequence[Item], ctx: RunContext, options: OptionsT) -> Outputs:
        """Per-unit outputs, aligned, in unit order (`Outputs(self.info.unit, ...)`)."""

    def example(self) -> KindExample | None:
        """A tiny case for the per-kind grid test (None: the kind cannot run without a real model)."""
        return None


def announced_embed(kind: str, entry: ProtocolKind[Any], items: Sequence[Item], options: Any, support: Support,
                    embed: Embed) -> Embed:
    """`embed`, refusing any text `entry.texts` (or corpus `entry.corpora`) did not announce for its field: such a
    text was never embedded, and without this it is a bare KeyError deep in the encoder."""
    announced: dict[str, set[str]] = {}
    for text_field, text in entry.texts(items, options, support):
        announced.setdefault(text_field, set()).add(text)
    corpora = {(text_field, corpus.digest) for text_field, corpus in entry.corpora(items, options)}

    def checked(texts: Sequence[str], text_field: str) -> np.ndarray:
        if isinstance(texts, CorpusSlice):
            if (text_field, texts.corpus.digest) not in corpora:
                raise ProtocolError(f"protocol kind {kind} embedded a corpus of field {text_field!r} that "
                                    "corpora() did not announce")
        else:
            known = announced.get(text_field, set())
            missing = next((text for text in texts if text not in known), None)
            if missing is not None:
                raise ProtocolError(f"protocol kind {kind} embedded a text of field {text_field!r} that texts() "
                                    f"did not announce: {missing[:60]!r}")
        return embed(texts, text_field)

    return checked


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
    run_gold: bool = False  # per_run, and the others may be (units, runs) too: each run has its own gold (the
    # clustering kind's label paths, one level per run); a metric that reads one gold per unit leaves it False
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
    extensions: tuple[str, ...] = ()  # file-name endings it reads, lower case with the dot (".tsv"): how
    # `specrun new` tells a data file's format; a folder format has none


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


def _problems_of_info(info: KindInfo, field_kinds: Container[str]) -> list[str]:
    problems = []
    fields = info.item_fields
    if not isinstance(fields, Mapping) or not fields:
        return ["info.item_fields must map each field to a field kind"]
    unknown = sorted(kind for kind in fields.values() if kind not in field_kinds)
    if unknown:
        problems.append(f"info.item_fields name unknown field kinds {unknown} (register them in FIELD_KINDS first)")
    outputs = info.outputs
    if not isinstance(outputs, tuple) or not outputs or not all(isinstance(o, str) for o in outputs):
        problems.append("info.outputs must be a non-empty tuple of names")
    if not isinstance(info.unit, str) or not info.unit:
        problems.append("info.unit must name what the bootstrap resamples")
    if not info.similarities or not set(info.similarities) <= set(SIMILARITIES):
        problems.append(f"info.similarities must be a non-empty tuple of {', '.join(SIMILARITIES)}")
    if info.plot is not None and (len(info.plot) != 2 or not set(info.plot) <= set(outputs or ())):
        problems.append("info.plot must be two of its outputs, or None")
    bad_roles = {name: role for name, role in dict(info.roles).items()
                 if name not in info.text_fields or role not in ROLES}
    if bad_roles:
        problems.append(f"info.roles {bad_roles} must map text fields ({', '.join(info.text_fields)}) to one of "
                        f"{ROLES}")
    return problems


def _problems_of_protocol(entry: Any, field_kinds: Container[str]) -> list[str]:
    if not isinstance(entry, ProtocolKind):
        return ["is not a specrun.core.contracts.ProtocolKind"]
    try:
        info, options = entry.info, entry.Options
    except AttributeError as exc:
        return [f"declares no `{exc.name}` (a ProtocolKind declares `info = KindInfo(...)` and `Options`)"]
    if not isinstance(info, KindInfo):
        return ["info must be a specrun.core.contracts.KindInfo"]
    problems = _problems_of_info(info, field_kinds)
    if not (isinstance(options, type) and issubclass(options, BaseModel)):
        problems.append("Options must be a pydantic model (NoOptions for none)")
    else:
        unknown_options = [key for key in info.split_options if key not in options.model_fields]
        if unknown_options:
            problems.append(f"info.split_options {unknown_options} are not options of the kind")
    called = {"run": (entry.run, ("items", "ctx", "options")), "texts": (entry.texts, ("items", "options", "support")),
              "validate_items": (entry.validate_items, ("items", "options", "origin", "support"))}  # as called
    for method, (bound, expected) in called.items():
        if len(inspect.signature(bound).parameters) != len(expected):
            problems.append(f"{method} must take ({', '.join(expected)})")
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
    if entry.run_gold and not entry.per_run:
        problems.append("run_gold needs per_run (a run's own gold is a per-run input)")
    return problems


def _problems_of_reader(entry: Any, field_kinds: Container[str]) -> list[str]:
    if not isinstance(entry, ReaderEntry):
        return ["is not a specrun.core.contracts.ReaderEntry"]
    problems = []
    if not callable(entry.read):
        problems.append("read must be callable")
    if entry.options is not None and not (isinstance(entry.options, type) and issubclass(entry.options, BaseModel)):
        problems.append("options must be a pydantic model or None")
    if not isinstance(entry.extensions, tuple) or not all(
            isinstance(e, str) and e.startswith(".") and e == e.lower() and len(e) > 1 for e in entry.extensions):
        problems.append("extensions must be a tuple of lower-case file-name endings such as '.tsv'")
    elif entry.folder and entry.extensions:
        problems.append("a folder format reads no file by extension: extensions must be empty")
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
