"""The flow, one direction: spec -> data -> protocol -> encoder -> metrics -> results -> reports.

Everything is computed in memory first; files are written only once every spec of the invocation has
succeeded, each atomically, so a failed run leaves nothing half-written.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from specrun import __version__
from specrun.cache import CacheKey, CacheWriter, DerivedCache, EmbeddingCache, model_files_hash, open_cache_root
from specrun.data import SplitData, load_split, resolve_data_dir
from specrun.encoders import (
    EncoderInfo,
    ModelRef,
    check_devices,
    check_model,
    choose_adapter,
    describe,
    encode_texts,
    load_adapter,
    parse_devices,
    resolve_model,
    resolve_prompt,
)
from specrun.errors import SpecError, SpecrunError
from specrun.files import cache_root_origin
from specrun.metrics import METRICS, estimate
from specrun.outputs import preflight_output_root, write_output_sets
from specrun.plots import scatter_png
from specrun.protocols import PROTOCOLS, Embed
from specrun.reports import render_card
from specrun.results import (
    PREDICTIONS_FILE,
    MetricInfo,
    ModelProvenance,
    PredictionsRef,
    Provenance,
    Results,
    Score,
    SplitProvenance,
    TextCounts,
    Uncertainty,
    package_versions,
    predictions_jsonl,
    results_json,
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
    cache_dir: str | None = None
    no_cache: bool = False
    trust_remote_code: bool = False


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
    files: dict[str, str | bytes] = field(default_factory=dict)


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
    preflight_output_root(Path(options.output))
    writer = open_cache(options)  # an unusable cache or device stops the run here, before any work
    check_devices(options.device)
    data_dir = resolve_data_dir(options.data_dir)
    prepared = [prepare(loaded, data_dir) for loaded in specs]
    timings = {"data": time.perf_counter() - started}

    unique = list(dict.fromkeys(text for p in prepared for text in p.texts))
    model = resolve_model(options.model, options.model_revision, memo_dir=memo_dir(options))
    vectors, info, missing, timings_encode = embed_unique(unique, model, options, console, writer)
    timings.update(timings_encode)
    row_of = {text: row for row, text in enumerate(unique)}

    def embed(texts: Sequence[str]) -> np.ndarray:
        return vectors[[row_of[text] for text in texts]]

    model_info = ModelProvenance(**describe(model, info))
    versions = package_versions()
    derived = None if writer is None else DerivedCache(
        cache_base(options) / "derived",
        {name: versions.get(name, "") for name in ("specrun", "numpy", "scipy", "matplotlib")}, warn, writer)
    outputs: list[RunOutput] = []
    already_encoded: set[str] = set()
    for item in prepared:
        scored = _score(item, embed, model_info, missing, already_encoded, dict(timings), started, derived,
                        versions)
        report = render_card(item.loaded.spec, next(iter(item.splits.values())).items, scored.results)
        folder = Path(options.output) / item.loaded.spec.id / model.slug
        outputs.append(RunOutput(results=scored.results, results_path=folder / "results.json",
                                 report_path=folder / "report.md", report=report, files=scored.files))
    write_output_sets([(out.results_path.parent, {**out.files, out.report_path.name: out.report,
                                                  out.results_path.name: results_json(out.results)})
                       for out in outputs])
    return outputs


def warn(message: str) -> None:
    print(f"specrun: warning: {message}", file=sys.stderr)


def cache_base(options: RunOptions) -> Path:
    """The cache root: --cache-dir, else $SPECRUN_CACHE_DIR, else $XDG_CACHE_HOME/specrun, else ~/.cache/specrun."""
    return Path(options.cache_dir) if options.cache_dir else cache_root_origin()[0]


def open_cache(options: RunOptions) -> CacheWriter | None:
    """None with --no-cache; otherwise the run's one cache writer, once the cache folder has proved usable
    (else one line naming it, exit 2)."""
    if options.no_cache:
        return None
    root, origin = (Path(options.cache_dir), "--cache-dir") if options.cache_dir else cache_root_origin()
    open_cache_root(root, origin)
    return CacheWriter(warn)


def memo_dir(options: RunOptions) -> Path | None:
    """Where file hashes are remembered between runs: inside the run's cache, none with --no-cache."""
    return None if options.no_cache else cache_base(options) / "file-hashes"


def embed_unique(unique: list[str], model: ModelRef, options: RunOptions, console: Console,
                 writer: CacheWriter | None = None) -> tuple[np.ndarray, EncoderInfo, set[str], dict[str, float]]:
    """Vectors of the unique texts, from the cache where it has them; the model is loaded (and torch imported)
    only when some are missing, or when the cache's record of the adapter settings is damaged. Newly encoded
    groups are cached as soon as each is done, so a killed run keeps what it finished."""
    timings: dict[str, float] = {}
    adapter_name = choose_adapter(model, options.adapter)
    check_model(model, adapter_name, options.max_length, options.trust_remote_code)
    prompt = resolve_prompt(model, adapter_name, options.prompt, options.prompt_name)
    cache = None
    if not options.no_cache:
        writer = writer or CacheWriter(warn)
        key = CacheKey(model=model.weights_sha256 or f"{model.name}@{model.revision}",
                       model_files=model_files_hash(Path(model.path), memo_dir(options)), adapter=adapter_name,
                       prompt=prompt, max_length=options.max_length, dtype="float32",
                       trust_remote_code=options.trust_remote_code)
        cache = EmbeddingCache(cache_base(options) / "embeddings", key, warn=warn, writer=writer)
    clock = time.perf_counter()
    cached = cache.lookup(unique) if cache else {}
    timings["cache_read"] = time.perf_counter() - clock
    missing = [text for text in unique if text not in cached]
    info = stored_info(cache) if cache and not missing else None
    if info is None:
        clock = time.perf_counter()
        adapter = load_adapter(model, adapter_name, parse_devices(options.device), options.max_length, prompt,
                               options.prompt_name, trust_remote_code=options.trust_remote_code)
        info = adapter.info
        timings["model_load"] = time.perf_counter() - clock
        if cache:
            cache.save_info(asdict(info))
        clock = time.perf_counter()
        try:
            with Progress(TextColumn("[bold]encoding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=console, transient=False, disable=console.quiet) as progress:
                task = progress.add_task("encode", total=len(missing))

                def done(indices: list[int], group: np.ndarray) -> None:
                    if cache:
                        cache.store([missing[i] for i in indices], group)
                    progress.advance(task, len(indices))

                new = encode_texts(adapter, missing, options.batch_size, on_group=done)
        finally:
            adapter.close()
        timings["encode"] = time.perf_counter() - clock
        cached.update(zip(missing, new, strict=True))
    vectors = np.stack([cached[text] for text in unique]) if unique else np.empty((0, 0), dtype=np.float32)
    return vectors, info, set(missing), timings


def stored_info(cache: EmbeddingCache) -> EncoderInfo | None:
    """The adapter settings cached with the vectors; None (the model is loaded) when absent or damaged."""
    stored = cache.load_info()
    if stored is None:
        return None
    try:
        info = EncoderInfo(**stored)
    except TypeError:
        cache.drop_info("unexpected fields")
        return None
    if info.adapter != cache.key.adapter or info.prompt != cache.key.prompt or (
            cache.key.max_length is not None and info.max_length != cache.key.max_length) or (
            info.trust_remote_code != cache.key.trust_remote_code):
        cache.drop_info("does not match its key")
        return None
    return info


@dataclass(frozen=True)
class Scored:
    results: Results
    files: dict[str, str | bytes]  # file name beside results.json -> content (predictions, plots)


def cached_estimate(derived: DerivedCache | None, name: str, arrays: dict[str, np.ndarray], *, resamples: int,
                    confidence: float, seed: int) -> Score:
    """metrics.estimate, through the derived cache when there is one."""
    if derived is None:
        return Score(**vars(estimate(name, arrays, resamples=resamples, confidence=confidence, seed=seed)))
    key = derived.key("estimate", name, resamples, confidence, seed,
                      arrays=[arrays[k] for k in METRICS[name].inputs])
    stored = derived.get(key, "estimate")
    if stored is not None:
        try:
            return Score.model_validate_json(stored)
        except ValueError:  # pydantic's ValidationError is a ValueError
            derived.discard(key, "estimate", "not a score")
    score = Score(**vars(estimate(name, arrays, resamples=resamples, confidence=confidence, seed=seed)))
    derived.put(key, score.model_dump_json().encode())
    return score


def cached_scatter(derived: DerivedCache | None, prediction: np.ndarray, gold: np.ndarray, title: str) -> bytes | None:
    """plots.scatter_png, through the derived cache; None when matplotlib is not installed."""
    if derived is None or not derived.versions.get("matplotlib"):
        return scatter_png(prediction, gold, title)
    key = derived.key("scatter", title, arrays=[prediction, gold])
    stored = derived.get(key, "plot")
    if stored is not None:
        if stored.startswith(b"\x89PNG\r\n\x1a\n"):
            return stored
        derived.discard(key, "plot", "not a PNG")
    png = scatter_png(prediction, gold, title)
    if png is not None:
        derived.put(key, png)
    return png


def _score(item: Prepared, embed: Embed, model_info: ModelProvenance, missing: set[str],
           already_encoded: set[str], timings: dict[str, float], started: float,
           derived: DerivedCache | None, versions: dict[str, str]) -> Scored:
    spec = item.loaded.spec
    clock = time.perf_counter()
    scores: dict[str, dict[str, Score]] = {}
    units: dict[str, str] = {}
    rows: list[dict[str, object]] = []
    files: dict[str, str | bytes] = {}
    plots: dict[str, str] = {}
    for split_name, split in item.splits.items():
        scores[split_name] = {}
        for protocol_name, protocol_spec in spec.protocols.items():
            protocol = PROTOCOLS[protocol_spec.kind]
            outputs = protocol.run(split.items, embed, protocol.Options.model_validate(protocol_spec.options))
            units[protocol_name] = outputs.unit
            for index, unit_id in enumerate(outputs.ids):
                rows.append({"split": split_name, "protocol": protocol_name, "id": unit_id,
                             **{name: float(values[index]) for name, values in outputs.arrays.items()}})
            if {"prediction", "gold"} <= set(outputs.arrays):
                png = cached_scatter(derived, outputs.arrays["prediction"], outputs.arrays["gold"],
                                     f"{spec.id} {split_name}, {protocol_name}: {model_info.name}")
                if png is not None:
                    name = f"scatter-{split_name}-{protocol_name}.png"
                    files[name] = png
                    plots[f"{split_name}/{protocol_name}"] = name
            for metric_name, metric in spec.metrics.items():
                if metric.protocol != protocol_name:
                    continue
                try:
                    scores[split_name][metric_name] = cached_estimate(
                        derived, metric.metric, outputs.arrays, resamples=spec.uncertainty.resamples,
                        confidence=spec.uncertainty.confidence, seed=spec.subset.seed)
                except SpecrunError as exc:
                    raise type(exc)(f"{spec.id}, split {split_name}, {metric_name}: {exc.message}") from None
    predictions = predictions_jsonl(rows)
    files[PREDICTIONS_FILE] = predictions
    timings["metrics"] = time.perf_counter() - clock
    timings["total"] = time.perf_counter() - started
    unique = set(item.texts)
    encoded_here = (unique & missing) - already_encoded  # each encoded text counts for the first spec needing it
    already_encoded |= encoded_here
    encoded = len(encoded_here)
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
        packages=versions, timings_s={k: round(v, 3) for k, v in timings.items()})
    metrics = {name: MetricInfo(metric=m.metric, protocol=m.protocol, protocol_kind=spec.protocols[m.protocol].kind,
                                label=m.label, direction=m.direction) for name, m in spec.metrics.items()}
    results = Results(spec_id=spec.id, title=spec.title, licence=spec.licence.data,
                      publication=spec.licence.publication, scores=scores, metrics=metrics,
                      texts=TextCounts(total=len(item.texts), unique=len(unique), encoded=encoded),
                      predictions=PredictionsRef(file=PREDICTIONS_FILE, sha256=hashlib.sha256(
                          predictions.encode("utf-8")).hexdigest(), rows=len(rows)),
                      plots=plots, provenance=provenance)
    return Scored(results=results, files=files)
