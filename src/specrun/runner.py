"""The flow, one direction: spec -> plan -> data -> cached encoder -> evaluate -> results -> reports -> write.

Each spec is resolved once into a plan; its data is loaded and checked; the union of every spec's texts is
embedded once (through the cache); each plan is evaluated, assembled into results, rendered into its report and
plots; files are written only once every spec of the invocation has succeeded, each spec's set as one unit.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console

from specrun.core.corpus import SharedCorpus
from specrun.core.errors import SpecError, SpecrunError
from specrun.core.files import folder_safe
from specrun.core.options import RunOptions
from specrun.core.types import View
from specrun.core.workspace import Workspace
from specrun.data import SplitData, load_split, resolve_data_dir
from specrun.encoders.adapters import describe
from specrun.encoders.cached import CachedEncoder, Encoding
from specrun.encoders.devices import check_devices
from specrun.encoders.executors import check_executor
from specrun.encoders.models import resolve_model
from specrun.encoders.precision import check_precision, quantised
from specrun.encoders.ray_map import chunks_on
from specrun.encoders.store import DerivedCache
from specrun.evaluation import ProtocolRun, evaluate
from specrun.outputs import preflight_output_folders, preflight_output_root, write_output_sets
from specrun.plan import Plan, make_plan
from specrun.prompt_sets import check_flags, load_prompt_set, spreads, summary_json, summary_markdown, variant_settings
from specrun.reports import render_card
from specrun.reports.plots import plot_files
from specrun.results import ModelProvenance, Results, TextCounts, build_results, package_versions, results_json
from specrun.spec import LoadedSpec, load_spec

__all__ = ["RunOptions", "RunOutput", "run"]

NAME_BYTES = 255  # the longest file name most filesystems take
DERIVED_VERSIONS = ("specrun", "numpy", "scipy", "matplotlib")  # the libraries an estimate or a plot depends on


@dataclass(frozen=True)
class RunOutput:
    results: Results
    results_path: Path
    report_path: Path
    report: str
    files: dict[str, str | bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Loaded:
    """One plan with its data: the splits' items and every text its protocols ask for, with its view
    (duplicates included)."""

    plan: Plan
    splits: dict[str, SplitData]
    texts: list[tuple[View, str]]
    corpora: list[tuple[View, SharedCorpus]] = field(default_factory=list)  # embedded from digests, not listed


def run(paths: Sequence[str], options: RunOptions, console: Console) -> list[RunOutput]:
    workspace = Workspace.resolve(options.cache_dir, options.no_cache)
    try:  # --executor ray: the corpus search's chunks on Ray actors too, started at its first chunk (ray_map)
        with chunks_on(options.executor, options.ray_address, options.ray_timeout):
            return _run(paths, options, console, workspace)
    finally:
        workspace.close()  # --no-cache: this run's scratch (downloads, vectors) goes with it


def _run(paths: Sequence[str], options: RunOptions, console: Console, workspace: Workspace) -> list[RunOutput]:
    started = time.perf_counter()
    plans = [make_plan(loaded) for loaded in load_specs(paths)]
    prompt_set = load_prompt_set(options.prompt_set) if options.prompt_set else None
    variants = {"": options}
    if prompt_set is not None:
        check_flags(options.encoder)
        if options.name:
            raise SpecrunError("--name with --prompt-set: each variant writes its own settings' folder; drop --name")
        variants = {name: replace(options, encoder=variant_settings(options.encoder, variant))
                    for name, variant in prompt_set.prompt_set.variants.items()}
    preflight_output_root(Path(options.output))  # outputs, cache and devices fail here, before any work
    workspace.check()
    check_executor(options.executor, options.device)
    if options.executor == "local":  # Ray's actors see the cluster's devices, not this machine's
        check_devices(options.device)
    data_dir = resolve_data_dir(options.data_dir)
    loaded = [load_data(plan, data_dir, workspace) for plan in plans]
    timings = {"data": time.perf_counter() - started}

    model = resolve_model(options.model, options.model_revision, memo_dir=workspace.memo)
    folders = {name: [output_folder(opts, plan, model.slug) for plan in plans] for name, opts in variants.items()}
    summaries = [] if prompt_set is None else [prompt_set_folder(options, plan, model.slug, prompt_set.stem)
                                               for plan in plans]
    check_distinct(folders)
    preflight_output_folders([folder for group in folders.values() for folder in group] + summaries)
    check_precision(options.encoder.precision)
    encoder = CachedEncoder(model, options, workspace, console)
    wanted: dict[View, list[str]] = {}
    wanted_corpora: dict[View, list[SharedCorpus]] = {}
    for item in loaded:
        for view, text in item.texts:
            wanted.setdefault(view, []).append(text)
        for view, corpus in item.corpora:
            wanted_corpora.setdefault(view, []).append(corpus)
    resolved = {}
    for name, opts in variants.items():  # a variant's prompt named wrongly is one line naming the file and variant
        with SpecrunError.named(f"{options.prompt_set}, variant {name}") if prompt_set else nullcontext():
            resolved[name] = encoder.variant(opts.encoder)
    viewed = encoder.embeddings_of_variants({view: list(dict.fromkeys(texts)) for view, texts in wanted.items()},
                                            resolved, wanted_corpora)
    timings.update(next(iter(viewed.values())).timings)

    versions = package_versions()
    derived = None if workspace.derived is None else DerivedCache(
        workspace.derived, {name: versions.get(name, "") for name in DERIVED_VERSIONS}, workspace.warn,
        workspace.writer)
    outputs: list[RunOutput] = []
    counted: set[tuple[Encoding, str]] = set()  # each encoded text counts for the first spec that needed it
    counted_corpora: set[tuple[Encoding, str]] = set()  # and each encoded corpus (by encoding and digest)
    evaluated: dict[str, dict[str, tuple[Results, list[ProtocolRun]]]] = {}  # spec id -> variant -> its runs
    for name, opts in variants.items():
        embeddings = viewed[name]
        sent = embeddings.encoded()
        described = describe(model, embeddings.info)
        for item in loaded:
            clock = time.perf_counter()
            unique = {(embeddings.encoding(view), text) for view, text in item.texts}
            corpora = {(embeddings.encoding(view), corpus.digest): embeddings.corpus_vectors(view, corpus)
                       for view, corpus in item.corpora}
            embed_view = quantised(embeddings.embed_view, options.encoder.precision, itertools.chain(
                (embeddings.by_encoding[encoding].embed(texts) for encoding, texts in texts_by_encoding(unique)),
                (chunk for vectors in corpora.values() for chunk in vectors.chunks())))
            runs = evaluate(item.plan, item.splits, embed_view, derived)
            plots, plot_names = plot_files(item.plan, runs, derived, model.name)
            encoded = (unique & sent) - counted
            counted |= encoded
            corpora_encoded = sum(vectors.encoded for key, vectors in corpora.items() if key not in counted_corpora)
            counted_corpora |= set(corpora)
            views = dict.fromkeys([*(view for view, _ in item.corpora), *(view for view, _ in item.texts)])
            model_provenance = ModelProvenance(**described, prompts=tuple(embeddings.prompts[v] for v in views))
            spec_timings = {**timings, "metrics": time.perf_counter() - clock,
                            "total": time.perf_counter() - started}
            results, predictions = build_results(
                item.plan, item.splits, runs, model_provenance,
                TextCounts(total=len(item.texts) + sum(len(corpus) for _, corpus in item.corpora),
                           unique=len(unique) + sum(vectors.unique for vectors in corpora.values()),
                           encoded=len(encoded) + corpora_encoded), plot_names, versions,
                spec_timings)
            report = render_card(item.plan.spec, next(iter(item.splits.values())).items, results)
            folder = output_folder(opts, item.plan, model.slug)
            outputs.append(RunOutput(results=results, results_path=folder / "results.json",
                                     report_path=folder / "report.md", report=report,
                                     files={**plots, "predictions.jsonl": predictions}))
            evaluated.setdefault(item.plan.id, {})[name] = (results, runs)
    sets = [(out.results_path.parent, {**out.files, out.report_path.name: out.report,
                                       out.results_path.name: results_json(out.results)}) for out in outputs]
    if prompt_set is not None:
        for plan, summary in zip(plans, summaries, strict=True):
            by_variant = evaluated[plan.id]
            names = {name: output_folder(variants[name], plan, model.slug).name for name in by_variant}
            rows = spreads(by_variant)
            first = next(iter(by_variant.values()))[0]
            sets.append((summary, {"prompt-set.md": summary_markdown(prompt_set, first, names, rows),
                                   "prompt-set.json": summary_json(prompt_set, plan.id, names, rows)}))
    write_output_sets(sets)
    for summary in summaries:  # stderr: standard output lists results.json files only
        console.print(f"prompt set: {summary / 'prompt-set.md'}", markup=False, highlight=False, soft_wrap=True)
    return outputs


def prompt_set_folder(options: RunOptions, plan: Plan, model_slug: str, stem: str) -> Path:
    """ROOT/<spec id>/<model>[+<setting>...]+prompt-set-<file stem>: the variants' table beside their folders."""
    parts = [*settings_parts(options), folder_safe(f"prompt-set-{stem}")[:40]]
    return Path(options.output) / plan.id / within_name_limit(model_slug + "".join(f"+{part}" for part in parts))


def check_distinct(folders: dict[str, list[Path]]) -> None:
    """Two prompt variants with the same settings would write one folder twice: refused, naming both."""
    seen: dict[Path, str] = {}
    for name, group in folders.items():
        for folder in group:
            if folder in seen:
                raise SpecrunError(f"prompt variants {seen[folder]!r} and {name!r} are the same settings (both "
                                   f"write {folder.name}); keep one")
            seen[folder] = name


def output_folder(options: RunOptions, plan: Plan, model_slug: str) -> Path:
    """ROOT/<spec id>/<model>[+<setting>...] (or --name): one folder per spec, model and chosen settings, written
    as one unit; a run of one model with other settings (a dtype, a prompt, the hashing adapter) never replaces
    its default run."""
    name = options.name or model_slug + "".join(f"+{part}" for part in settings_parts(options))
    return Path(options.output) / plan.id / within_name_limit(name)


def within_name_limit(name: str) -> str:
    """A filesystem's limit on a folder name: beyond it, a prefix told apart by a digest of the whole."""
    if len(name.encode("utf-8")) > NAME_BYTES:
        name = name[:NAME_BYTES - 13] + "~" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    return name


def settings_parts(options: RunOptions) -> list[str]:
    """The settings given away from their defaults that can change a vector, each `name-value` in folder-safe
    characters; a prompt (any text) as the first 8 hex digits of its sha256."""
    parts = [f"revision-{options.model_revision[:12]}"] if options.model_revision else []
    return [folder_safe(part)[:40] for part in parts + options.encoder.folder_parts()]


def load_specs(paths: Sequence[str]) -> list[LoadedSpec]:
    loaded = [load_spec(path) for path in paths]
    seen: dict[str, str] = {}
    for item in loaded:
        if item.spec.id in seen:
            raise SpecError(f"spec id {item.spec.id!r} is also used by {seen[item.spec.id]}",
                            file=item.display, line=item.located.line_of(("id",)), key="id")
        seen[item.spec.id] = item.display
    return loaded


def load_data(plan: Plan, data_dir: Path | None, workspace: Workspace) -> Loaded:
    """The evaluated splits and the splits protocols fit on (checked alike), and every text the protocols ask for."""
    splits = {split.name: load_split(plan, split.name, data_dir, workspace=workspace)
              for split in (*plan.splits, *plan.support_splits)}
    texts: list[tuple[View, str]] = []
    corpora: list[tuple[View, SharedCorpus]] = []
    for split in plan.splits:
        for protocol in plan.protocols:
            support = {name: splits[name].items for name in protocol.support}
            # a kind checks its splits against each other here, before anything is encoded
            with SpecrunError.named(f"{plan.id}, split {split.name}, protocol {protocol.name}"):
                items = splits[split.name].items
                texts.extend((protocol.view(text_field), text) for text_field, text in
                             protocol.entry.texts(items, protocol.options, support))
                corpora.extend((protocol.view(text_field), corpus) for text_field, corpus in
                               protocol.entry.corpora(items, protocol.options))
    return Loaded(plan=plan, splits=splits, texts=texts, corpora=corpora)


def texts_by_encoding(pairs: set[tuple[Encoding, str]], block: int = 16_384) -> Iterator[tuple[Encoding, list[str]]]:
    """A spec's unique texts, per encoding, in blocks (in a fixed order): what a quantisation calibrates on."""
    grouped: dict[Encoding, list[str]] = {}
    for encoding, text in pairs:
        grouped.setdefault(encoding, []).append(text)
    for encoding in sorted(grouped):
        texts = sorted(grouped[encoding])
        for start in range(0, len(texts), block):
            yield encoding, texts[start:start + block]
