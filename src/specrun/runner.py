"""The flow, one direction: spec -> data -> protocol -> encoder -> metrics -> results -> reports.

Everything is computed in memory first; files are written only once every spec of the invocation has
succeeded, each atomically, so a failed run leaves nothing half-written.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from specrun import __version__
from specrun.data import SplitData, load_split, resolve_data_dir
from specrun.encoders import describe, encode_texts, load_adapter, resolve_model
from specrun.errors import SpecError, SpecrunError
from specrun.metrics import estimate
from specrun.protocols import PROTOCOLS, Embed
from specrun.reports import render_card
from specrun.results import (
    ModelProvenance,
    Provenance,
    Results,
    Score,
    SplitProvenance,
    TextCounts,
    Uncertainty,
    package_versions,
    results_json,
    write_atomic,
)
from specrun.spec import LoadedSpec, load_spec


@dataclass
class RunOptions:
    model: str | None = None
    model_revision: str | None = None
    adapter: str = "auto"
    data_dir: str | None = None
    output: str = "results"
    device: str | None = None
    batch_size: int = 32
    max_length: int | None = None
    prompt: str | None = None
    prompt_name: str | None = None


@dataclass
class Prepared:
    """One spec with its data loaded: what the encoder and the protocols work from."""

    loaded: LoadedSpec
    splits: dict[str, SplitData]
    texts: list[str] = field(default_factory=list)  # every text its protocols ask for, duplicates included


@dataclass(frozen=True)
class RunOutput:
    results: Results
    results_path: Path
    report_path: Path
    report: str


def load_specs(paths: Sequence[str]) -> list[LoadedSpec]:
    loaded = [load_spec(path) for path in paths]
    seen: dict[str, str] = {}
    for item in loaded:
        if item.spec.id in seen:
            raise SpecError(f"spec id {item.spec.id!r} is also used by {seen[item.spec.id]}",
                            file=item.display, line=item.located.line_of(("id",)), key="id")
        seen[item.spec.id] = item.display
    return loaded


def prepare(loaded: LoadedSpec, data_dir: Path | None) -> Prepared:
    spec = loaded.spec
    splits = {name: load_split(loaded, name, data_dir) for name in spec.evaluated_splits}
    prepared = Prepared(loaded=loaded, splits=splits)
    for split in splits.values():
        for protocol in spec.protocols.values():
            kind = PROTOCOLS[protocol.kind]
            prepared.texts.extend(kind.texts(split.items, kind.Options.model_validate(protocol.options)))
    return prepared


def run(paths: Sequence[str], options: RunOptions, console: Console) -> list[RunOutput]:
    started = time.perf_counter()
    specs = load_specs(paths)
    data_dir = resolve_data_dir(options.data_dir)
    prepared = [prepare(loaded, data_dir) for loaded in specs]
    timings = {"data": time.perf_counter() - started}

    unique = list(dict.fromkeys(text for p in prepared for text in p.texts))
    clock = time.perf_counter()
    model = resolve_model(options.model, options.model_revision)
    adapter = load_adapter(model, options.adapter, options.device, options.max_length, options.prompt,
                           options.prompt_name)
    timings["model_load"] = time.perf_counter() - clock

    clock = time.perf_counter()
    with Progress(TextColumn("[bold]encoding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False, disable=console.quiet) as progress:
        task = progress.add_task("encode", total=len(unique))
        vectors = encode_texts(adapter, unique, options.batch_size,
                               progress=lambda n: progress.advance(task, n))
    timings["encode"] = time.perf_counter() - clock
    row_of = {text: row for row, text in enumerate(unique)}

    def embed(texts: Sequence[str]) -> np.ndarray:
        return vectors[[row_of[text] for text in texts]]

    model_info = ModelProvenance(**describe(model, adapter.info))
    outputs: list[RunOutput] = []
    already_encoded: set[str] = set()
    for item in prepared:
        results = _score(item, embed, model_info, already_encoded, dict(timings), started)
        report = render_card(item.loaded.spec, next(iter(item.splits.values())).items, results)
        folder = Path(options.output) / item.loaded.spec.id / model.slug
        outputs.append(RunOutput(results=results, results_path=folder / "results.json",
                                 report_path=folder / "report.md", report=report))
    for out in outputs:
        write_atomic(out.results_path, results_json(out.results))
        write_atomic(out.report_path, out.report)
    return outputs


def _score(item: Prepared, embed: Embed, model_info: ModelProvenance, already_encoded: set[str],
           timings: dict[str, float], started: float) -> Results:
    spec = item.loaded.spec
    clock = time.perf_counter()
    scores: dict[str, dict[str, Score]] = {}
    units: dict[str, str] = {}
    for split_name, split in item.splits.items():
        scores[split_name] = {}
        for protocol_name, protocol_spec in spec.protocols.items():
            protocol = PROTOCOLS[protocol_spec.kind]
            outputs = protocol.run(split.items, embed, protocol.Options.model_validate(protocol_spec.options))
            units[protocol_name] = outputs.unit
            for metric_name, metric in spec.metrics.items():
                if metric.protocol != protocol_name:
                    continue
                try:
                    result = estimate(metric.metric, outputs.arrays, resamples=spec.uncertainty.resamples,
                                      confidence=spec.uncertainty.confidence, seed=spec.subset.seed)
                except SpecrunError as exc:
                    raise type(exc)(f"{spec.id}, split {split_name}, {metric_name}: {exc.message}") from None
                scores[split_name][metric_name] = Score(**vars(result))
    timings["metrics"] = time.perf_counter() - clock
    timings["total"] = time.perf_counter() - started
    unique = set(item.texts)
    encoded = len(unique - already_encoded)
    already_encoded |= unique
    data = {
        name: SplitProvenance(
            source=split.source, origin=split.origin, path=spec.sources[split.source].path,
            revision=spec.sources[split.source].revision, licence=spec.sources[split.source].licence,
            fingerprint=split.fingerprint, n_source=split.n_source, n_selected=len(split.items),
            selection=str(spec.subset.splits[name]))
        for name, split in item.splits.items()
    }
    u = spec.uncertainty
    provenance = Provenance(
        spec_path=item.loaded.display, spec_sha256=item.loaded.sha256, specrun_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"), data=data, model=model_info,
        uncertainty=Uncertainty(method=u.method, interval=u.interval, resamples=u.resamples,
                                confidence=u.confidence, seed=spec.subset.seed, unit=units),
        packages=package_versions(), timings_s={k: round(v, 3) for k, v in timings.items()})
    return Results(spec_id=spec.id, title=spec.title, licence=spec.licence.data,
                   publication=spec.licence.publication, scores=scores,
                   texts=TextCounts(total=len(item.texts), unique=len(unique), encoded=encoded),
                   provenance=provenance)
