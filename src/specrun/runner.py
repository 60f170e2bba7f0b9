"""The flow, one direction: spec -> plan -> data -> cached encoder -> evaluate -> results -> reports -> write.

Each spec is resolved once into a plan; its data is loaded and checked; the union of every spec's texts is
embedded once (through the cache); each plan is evaluated, assembled into results, rendered into its report and
plots; files are written only once every spec of the invocation has succeeded, each spec's set as one unit.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from specrun.core.contracts import Rerank
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import SpecError, SpecrunError, UsageError
from specrun.core.mapping import ChunkMap
from specrun.core.options import RunOptions
from specrun.core.registry import ADAPTERS
from specrun.core.types import View
from specrun.core.workspace import Workspace, warn_stderr
from specrun.data import SplitData, limit_hint, load_splits, resolve_data_dir
from specrun.encoders.adapters import describe
from specrun.encoders.cached import CachedEncoder
from specrun.encoders.derived import DerivedCache
from specrun.encoders.devices import check_devices
from specrun.encoders.executors import check_executor
from specrun.encoders.metadata import files_metadata
from specrun.encoders.models import ModelRef, declared_similarity, resolve_model
from specrun.encoders.precision import check_precision, quantised
from specrun.encoders.ray_map import chunks_on
from specrun.encoders.reranker import PairScorer, check_reranks, open_reranker
from specrun.encoders.vectors import CorpusVectors, Embeddings, Encoding, ViewedEmbeddings, shaped, truncated_view
from specrun.evaluation import ProtocolRun, evaluate
from specrun.outputs import OutputSet, RunFolders, SetKind, preflight_output_root, write_output_sets
from specrun.outputs.folders import output_folder
from specrun.plan import Plan, choose, make_plan
from specrun.prompt_sets import summary_sets, variants_of
from specrun.reports import render_card
from specrun.reports.plots import plot_files
from specrun.results import (
    ModelMeta,
    ModelProvenance,
    RerankerProvenance,
    Results,
    TextCounts,
    build_results,
    package_versions,
    results_json,
)
from specrun.results.identity import identity_notes
from specrun.spec import LoadedSpec, load_spec, subset_specs
from specrun.subset_means import SubsetRun, subset_means, subsets_json, subsets_markdown

__all__ = ["RunOptions", "RunOutput", "run"]

NAME_BYTES = 255  # the longest file name most filesystems take
DERIVED_VERSIONS = ("specrun", "numpy", "scipy", "matplotlib")  # the libraries an estimate or a plot depends on
# what a spec's run and a subsets' mean write in their folders (and nothing else there is replaced)
RUN_FILES = SetKind("a spec's run", ("results.json", "report.md", "predictions.jsonl", "scatter-*.png"))
SUBSET_MEAN_FILES = SetKind("the mean over subsets", ("subsets.json", "subsets.md"))


@dataclass(frozen=True)
class RunOutput:
    results: Results
    results_path: Path
    report_path: Path
    report: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    has_card: bool = True  # False: the spec has no `card`, so the report has no card sections

    def file_set(self) -> OutputSet:
        """The folder and every file of it, written as one unit."""
        return self.results_path.parent, {**self.files, self.report_path.name: self.report,
                                          self.results_path.name: results_json(self.results)}, RUN_FILES


@dataclass(frozen=True)
class Loaded:
    """One plan with its data: the splits' items and every text its protocols ask for, with its view
    (duplicates included)."""

    plan: Plan
    splits: dict[str, SplitData]
    texts: list[tuple[View, str]]
    corpora: list[tuple[View, SharedCorpus]] = field(default_factory=list)  # embedded from digests, not listed


def run(paths: Sequence[str | LoadedSpec], options: RunOptions, console: Console) -> list[RunOutput]:
    workspace = Workspace.resolve(options.cache_dir, options.no_cache)
    try:  # --executor ray: the corpus search's chunks on Ray actors too, started at its first chunk (ray_map)
        with chunks_on(options.executor, options.ray_address, options.ray_timeout) as mapper:
            return _run(paths, options, console, workspace, mapper)
    finally:
        workspace.close()  # --no-cache: this run's scratch (downloads, vectors) goes with it


def _run(paths: Sequence[str | LoadedSpec], options: RunOptions, console: Console, workspace: Workspace,
         mapper: ChunkMap | None) -> list[RunOutput]:
    started = time.perf_counter()
    plans = [choose(make_plan(loaded), options.splits, options.limit)
             for loaded in load_specs(paths, options.subsets)]
    prompt_set, variants = variants_of(options)
    for name, opts in variants.items():
        with SpecrunError.named(f"{options.prompt_set}, variant {name}") if options.prompt_set else nullcontext():
            check_prompts_reach(opts, plans)
    check_reranks(plans, options.encoder)
    preflight(options, workspace)  # outputs, cache and devices fail here, before any work
    data_dir = resolve_data_dir(options.data_dir)
    loaded = [load_data(plan, data_dir, workspace) for plan in plans]
    timings = {"data": time.perf_counter() - started}
    model = resolve_model(options.model, options.model_revision, memo_dir=workspace.memo)
    folders = RunFolders.of(options, variants, [plan.id for plan in plans], model.slug,
                            prompt_set.stem if prompt_set else None)
    check_precision(options.encoder.precision)
    reranker = open_reranker(options.encoder, workspace, options.device)
    encoder = CachedEncoder(model, options, workspace, console)
    similarity = model_similarity(plans, model, encoder.settings.adapter)
    viewed = embed_all(encoder, loaded, variants, options)
    timings.update(next(iter(viewed.values())).timings)
    described = {**(files_metadata(model) if ADAPTERS[encoder.settings.adapter].needs_model else {"sources": {}}),
                 **(encoder.peak_memory or {})}
    versions = package_versions()
    derived = derived_cache(workspace, versions)
    counter = TextCounter()
    outputs: list[RunOutput] = []
    evaluated: dict[str, dict[str, tuple[Results, list[ProtocolRun]]]] = {}  # spec id -> variant -> its runs
    for name in variants:
        for item in loaded:
            output, runs = evaluate_one(item, viewed[name], model, options, folders.by_variant[name][item.plan.id],
                                        Context(counter, derived, versions, timings, started, mapper,
                                                similarity, described, reranker))
            outputs.append(output)
            evaluated.setdefault(item.plan.id, {})[name] = (output.results, runs)
    sets = [output.file_set() for output in outputs]
    if prompt_set is not None:
        sets += summary_sets(prompt_set, evaluated, folders.by_variant, folders.summaries)
    means = subset_mean_sets(loaded, evaluated, variants, folders, model.slug)
    write_output_sets([*sets, *means])
    for folder, _, _ in means:  # stderr, as the prompt-set table: standard output lists results.json files only
        console.print(f"subset means: {folder / 'subsets.md'}", markup=False, highlight=False, soft_wrap=True)
    for summary in folders.summaries.values():  # stderr: standard output lists results.json files only
        console.print(f"prompt set: {summary / 'prompt-set.md'}", markup=False, highlight=False, soft_wrap=True)
    return outputs


def model_similarity(plans: Sequence[Plan], model: ModelRef, adapter: str) -> str:
    """What `similarity: model` means for this model (its similarity_fn_name, read from its folder), checked
    against every protocol that asks for it before anything is encoded; cosine when no protocol asks."""
    if not any(protocol.similarity == "model" for plan in plans for protocol in plan.protocols):
        return "cosine"
    function = declared_similarity(model, ADAPTERS[adapter].needs_model)
    for plan in plans:
        for protocol in plan.protocols:
            with SpecrunError.named(plan.id):
                protocol.similarity_of(function)
    return function


def check_prompts_reach(options: RunOptions, plans: Sequence[Plan]) -> None:
    """A prompt flag that reaches no text of the specs would change nothing but the folder's name and a
    leaderboard row with the same scores: refused, naming what the specs embed."""
    views = [protocol.view(field) for plan in plans for protocol in plan.protocols
             for field in protocol.entry.info.text_fields]
    roles = sorted({view.role for view in views})
    settings = options.encoder
    unreached = [(flag, what) for flag, value, reached, what in (
        ("--query-prompt", settings.query_prompt, "query" in roles, "queries"),
        ("--document-prompt", settings.document_prompt, "document" in roles, "documents"),
        ("--instruction-template", settings.instruction_template, any(v.instruction for v in views),
         "instructed texts (no protocol has an `instruction`)")) if value is not None and not reached]
    if unreached:
        flag, what = unreached[0]
        ids = ", ".join(plan.id for plan in plans)
        raise UsageError(f"{flag} reaches no text: {ids} embed(s) no {what} (their texts are {', '.join(roles)}); "
                         "leave it out (or use --prompt, for every text)")


def preflight(options: RunOptions, workspace: Workspace) -> None:
    """What can fail before any work: the output root, the cache, the executor and the devices."""
    preflight_output_root(Path(options.output))
    workspace.check()
    check_executor(options.executor, options.device)
    if options.executor == "local":  # Ray's actors see the cluster's devices, not this machine's
        check_devices(options.device)


def embed_all(encoder: CachedEncoder, loaded: Sequence[Loaded], variants: dict[str, RunOptions],
              options: RunOptions) -> dict[str, ViewedEmbeddings]:
    """Every view's unique texts and corpora of every spec, embedded once per variant (a variant's prompt named
    wrongly is one line naming the file and variant)."""
    wanted: dict[View, list[str]] = {}
    wanted_corpora: dict[View, list[SharedCorpus]] = {}
    for item in loaded:
        for view, text in item.texts:
            wanted.setdefault(view, []).append(text)
        for view, corpus in item.corpora:
            wanted_corpora.setdefault(view, []).append(corpus)
    resolved = {}
    for name, opts in variants.items():
        with SpecrunError.named(f"{options.prompt_set}, variant {name}") if options.prompt_set else nullcontext():
            resolved[name] = encoder.variant(opts.encoder)
    return encoder.embeddings_of_variants({view: list(dict.fromkeys(texts)) for view, texts in wanted.items()},
                                          resolved, wanted_corpora)


def derived_cache(workspace: Workspace, versions: dict[str, str]) -> DerivedCache | None:
    """The cache of estimates and plots, keyed by the libraries they depend on (none with --no-cache)."""
    if workspace.derived is None:
        return None
    return DerivedCache(workspace.derived, {name: versions.get(name, "") for name in DERIVED_VERSIONS},
                        workspace.warn, workspace.writer)


@dataclass
class TextCounter:
    """What each spec encoded: a text the model encoded in this run counts for the first spec that needed it, and
    a corpus (by encoding and digest) likewise, so a run's counts add up to what the model did."""

    texts: set[tuple[Encoding, str]] = field(default_factory=set)
    corpora: set[tuple[Encoding, str]] = field(default_factory=set)

    def count(self, item: Loaded, unique: set[tuple[Encoding, str]], sent: set[tuple[Encoding, str]],
              corpora: dict[tuple[Encoding, str], CorpusVectors]) -> TextCounts:
        encoded = (unique & sent) - self.texts
        self.texts |= encoded
        corpora_encoded = sum(vectors.encoded for key, vectors in corpora.items() if key not in self.corpora)
        self.corpora |= set(corpora)
        return TextCounts(total=len(item.texts) + sum(len(corpus) for _, corpus in item.corpora),
                          unique=len(unique) + sum(vectors.unique for vectors in corpora.values()),
                          encoded=len(encoded) + corpora_encoded)


@dataclass(frozen=True)
class Context:
    """What every spec's evaluation shares: the text counter, the derived cache, versions, timings, the mapper."""

    counter: TextCounter
    derived: DerivedCache | None
    versions: dict[str, str]
    timings: dict[str, float]
    started: float
    chunk_map: ChunkMap | None = None  # the run's executor for the kinds' chunks (None: this process)
    similarity: str = "cosine"  # what a protocol's `similarity: model` means for this run's model
    model_meta: dict[str, Any] = field(default_factory=dict)  # what the model folder states, and the peak memory
    reranker: PairScorer | None = None  # --reranker: the second stage, shared by every spec (its pair counts too)


def evaluate_one(item: Loaded, embeddings: ViewedEmbeddings, model: ModelRef, options: RunOptions, folder: Path,
                 context: Context) -> tuple[RunOutput, list[ProtocolRun]]:
    """One spec with one variant's embeddings: evaluated, its plots, results and report, ready to be written."""
    clock = time.perf_counter()
    unique = {(embeddings.encoding(view), text) for view, text in item.texts}
    corpora = {(embeddings.encoding(view), corpus.digest): embeddings.corpus_vectors(view, corpus)
               for view, corpus in item.corpora}
    truncate_dim, normalize = options.encoder.truncate_dim, embeddings.info.normalize
    embed_view = quantised(truncated_view(embeddings.embed_view, truncate_dim, normalize), options.encoder.precision,
                           (shaped(block, truncate_dim, normalize) for block in itertools.chain(
                               (embeddings.by_encoding[encoding].embed(texts)
                                for encoding, texts in texts_by_encoding(unique)),
                               (chunk for vectors in corpora.values() for chunk in vectors.chunks()))))
    reranker = context.reranker
    asked, scored = (reranker.pairs, reranker.scored) if reranker else (0, 0)
    rerank = Rerank(reranker.score, options.encoder.rerank_top_k) if reranker else None
    with limit_hint(item.plan.limit):
        runs = evaluate(item.plan, item.splits, embed_view, context.derived, context.chunk_map, context.similarity,
                        rerank)
    plots, plot_names = plot_files(item.plan, runs, context.derived, model.name)
    texts = context.counter.count(item, unique, embeddings.encoded(), corpora)
    views = dict.fromkeys([*(view for view, _ in item.corpora), *(view for view, _ in item.texts)])
    prompts = tuple(embeddings.prompts[view] for view in views)
    reranked = None if reranker is None else RerankerProvenance(
        **{**reranker.record(), "pairs": reranker.pairs - asked, "scored": reranker.scored - scored})
    provenance = ModelProvenance(**describe(model, embeddings.info), prompts=prompts, reranker_model=reranked)
    meta = model_meta(context.model_meta, [embeddings.by_encoding[encoding] for encoding, _ in unique],
                      list(corpora.values()), truncate_dim)
    timings = {**context.timings, "metrics": time.perf_counter() - clock,
               "total": time.perf_counter() - context.started}
    results, predictions = build_results(item.plan, item.splits, runs, provenance, texts, plot_names,
                                         context.versions, timings, meta)
    report = render_card(item.plan.spec, next(iter(item.splits.values())).items, results)
    for note in identity_notes(item.plan.spec, results):  # the report says it too
        warn_stderr(f"{item.plan.id}: {note}")
    return RunOutput(results=results, results_path=folder / "results.json", report_path=folder / "report.md",
                     report=report, files={**plots, "predictions.jsonl": predictions},
                     has_card=item.plan.spec.card is not None), runs


def model_meta(described: dict[str, Any], embeddings: Sequence[Embeddings],
               corpora: Sequence[CorpusVectors], truncate_dim: int | None = None) -> ModelMeta:
    """The model's metadata for one spec: what its folder states and the run's peak memory (`described`), and the
    width of the vectors this spec scored (cached or not; --truncate-dim's when given)."""
    dim = truncate_dim or next((e.dim for e in (*embeddings, *corpora) if e.dim), None)
    sources = {**described.get("sources", {}), **({"embed_dim": "the vectors scored"} if dim else {}),
               **({"peak_memory_bytes": "this run's load and encode"} if "peak_memory_bytes" in described else {})}
    return ModelMeta(**{**described, "embed_dim": dim, "sources": sources})


def load_specs(paths: Sequence[str | LoadedSpec], subsets: Sequence[str] | None = None) -> list[LoadedSpec]:
    """Each spec, a spec with `subsets` as its subsets (those named, or all); ids unique across them. A spec
    handed in loaded (a suite's member, a subset already chosen) is run as it is."""
    files = [path if isinstance(path, LoadedSpec) else load_spec(path) for path in paths]
    if subsets and not any(item.spec.subsets for item in files):
        raise SpecError(f"--subsets: {', '.join(item.display for item in files)} declare(s) no subsets")
    loaded = [one for item in files for one in subset_specs(item, subsets if item.spec.subsets else None)]
    seen: dict[str, str] = {}
    for item in loaded:
        if item.spec.id in seen:
            raise SpecError(f"spec id {item.spec.id!r} is also used by {seen[item.spec.id]}",
                            file=item.display, line=item.located.line_of(("id",)), key="id")
        seen[item.spec.id] = item.display
    return loaded


def subset_mean_sets(loaded: Sequence[Loaded], evaluated: dict[str, dict[str, tuple[Results, list[ProtocolRun]]]],
                     variants: dict[str, RunOptions], folders: RunFolders,
                     model_slug: str) -> list[OutputSet]:
    """For each spec of which two or more subsets ran: the mean over them, per variant, beside their folders."""
    groups: dict[str, list[Loaded]] = {}
    for item in loaded:
        if item.plan.loaded.parent is not None:
            groups.setdefault(item.plan.loaded.parent.id, []).append(item)
    sets: list[OutputSet] = []
    for parent_id, items in groups.items():
        if len(items) < 2:
            continue
        for name, opts in variants.items():
            runs = [SubsetRun(plan=item.plan, results=evaluated[item.plan.id][name][0],
                              runs=evaluated[item.plan.id][name][1], folder=folders.by_variant[name][item.plan.id])
                    for item in items]
            means = subset_means(runs, Path(opts.output))
            sets.append((output_folder(opts, parent_id, model_slug),
                         {"subsets.json": subsets_json(means), "subsets.md": subsets_markdown(means)},
                         SUBSET_MEAN_FILES))
    return sets


def load_data(plan: Plan, data_dir: Path | None, workspace: Workspace) -> Loaded:
    """The evaluated splits and the splits protocols fit on (checked alike), and every text the protocols ask for.
    With --limit, each split's first N items (fitted-on splits too: a smoke run is quick) once it is read and
    checked whole (pins, fingerprint, subset)."""
    splits = load_splits(plan, data_dir, workspace=workspace, limit=plan.limit)
    texts: list[tuple[View, str]] = []
    corpora: list[tuple[View, SharedCorpus]] = []
    for split in plan.splits:
        for protocol in plan.protocols:
            support = {name: splits[name].items for name in protocol.support}
            with SpecrunError.named(f"{plan.id}, split {split.name}, protocol {protocol.name}"), limit_hint(plan.limit):
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
