"""The flow, one direction: spec -> plan -> data -> encoder session -> evaluate -> results -> reports -> write.

Each spec is resolved once into a plan; its data is loaded and checked; the run's encoder session embeds the union
of every spec's texts once (through the cache) and hands each spec, per variant, its vectors; each plan is
evaluated, assembled into results, rendered into its report and plots; files are written only once every spec of
the invocation has succeeded, each spec's set as one unit.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from specrun.board.prompt_spread import summary_sets
from specrun.board.subsets import SubsetRun, subset_means, subsets_json, subsets_markdown
from specrun.core.derived import DerivedCache, derived_cache
from specrun.core.errors import SpecError, SpecrunError
from specrun.core.mapping import ChunkMap
from specrun.core.options import RunOptions
from specrun.core.workspace import Workspace, warn_stderr
from specrun.data import Loaded, limit_hint, load_data, resolve_data_dir
from specrun.encoders.devices import check_devices
from specrun.encoders.executors import check_executor
from specrun.encoders.models import resolve_model
from specrun.encoders.ray_map import chunks_on
from specrun.encoders.session import RunEncoder, SpecVectors, check_variants
from specrun.evaluation import ProtocolRun, evaluate
from specrun.outputs import OutputSet, RunFolders, SetKind, preflight_output_root, write_output_sets
from specrun.outputs.folders import output_folder
from specrun.plan import choose, make_plan
from specrun.prompt_sets import LoadedPromptSet, variants_of
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
    read_results,
    results_json,
)
from specrun.results.identity import identity_notes
from specrun.spec import LoadedSpec, load_spec, subset_specs

__all__ = ["RunOptions", "RunOutput", "run"]

NAME_BYTES = 255  # the longest file name most filesystems take
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
    settings = {name: opts.encoder for name, opts in variants.items()}
    check_variants(plans, settings, options.encoder, options.prompt_set)
    preflight(options, workspace)  # outputs, cache and devices fail here, before any work
    data_dir = resolve_data_dir(options.data_dir)
    loaded = [load_data(plan, data_dir, workspace) for plan in plans]
    timings = {"data": time.perf_counter() - started}
    model = resolve_model(options.model, options.model_revision, memo_dir=workspace.memo)
    folders = RunFolders.of(options, variants, [plan.id for plan in plans], model.slug,
                            prompt_set.stem if prompt_set else None)
    session = RunEncoder(model, options.encoder, options.execution, settings, plans, workspace, console,
                         prompt_set=options.prompt_set, chunk_map=mapper)
    timings.update(session.embed(loaded))
    versions = package_versions()
    context = Context(derived_cache(workspace, versions), versions, timings, started)
    outputs: list[RunOutput] = []
    evaluated: dict[str, dict[str, tuple[Results, list[ProtocolRun]]]] = {}  # spec id -> variant -> its runs
    for name in variants:
        for item in loaded:
            output, runs = evaluate_one(item, session.spec(name, item), folders.by_variant[name][item.plan.id],
                                        context)
            outputs.append(output)
            evaluated.setdefault(item.plan.id, {})[name] = (output.results, runs)
    write_all(outputs, evaluated, prompt_set, loaded, variants, folders, model.slug, console)
    return outputs


def write_all(outputs: Sequence[RunOutput], evaluated: dict[str, dict[str, tuple[Results, list[ProtocolRun]]]],
              prompt_set: LoadedPromptSet | None, loaded: Sequence[Loaded], variants: dict[str, RunOptions],
              folders: RunFolders, model_slug: str, console: Console) -> None:
    """Every spec's files, the prompt-set tables and the means over subsets, written as units once all ran."""
    replaced = _replaced(outputs)  # read before the swap, said after it: a write that fails replaced nothing
    sets = [output.file_set() for output in outputs]
    if prompt_set is not None:
        sets += summary_sets(prompt_set, evaluated, folders.by_variant, folders.summaries)
    means = subset_mean_sets(loaded, evaluated, variants, folders, model_slug)
    write_output_sets([*sets, *means])
    for note in replaced:
        print(f"specrun: note: {note}", file=sys.stderr)
    for folder, _, _ in means:  # stderr, as the prompt-set table: standard output lists results.json files only
        console.print(f"subset means: {folder / 'subsets.md'}", markup=False, highlight=False, soft_wrap=True)
    for summary in folders.summaries.values():  # stderr: standard output lists results.json files only
        console.print(f"prompt set: {summary / 'prompt-set.md'}", markup=False, highlight=False, soft_wrap=True)


def _replaced(outputs: Sequence[RunOutput]) -> list[str]:
    """A run replaces the results in its folder (<spec id>/<model>/); where those are another spec file's (other
    contents under the same id: an imported copy of a task beside a hand-written spec, an edited spec), stderr
    says whose they were, so a number never changes its spec unnoticed."""
    notes = []
    for output in outputs:
        if not output.results_path.is_file():
            continue
        try:
            before = read_results(output.results_path).provenance
        except SpecrunError:  # a damaged file: replaced whole, nothing to say of it
            continue
        now = output.results.provenance
        if before.spec_sha256 != now.spec_sha256:
            notes.append(f"{output.results_path} held the results of spec {before.spec_path} (sha256 "
                         f"{before.spec_sha256[:12]}); this run replaced them with those of {now.spec_path} (sha256 "
                         f"{now.spec_sha256[:12]})")
    return notes


def preflight(options: RunOptions, workspace: Workspace) -> None:
    """What can fail before any work: the output root, the cache, the executor and the devices."""
    preflight_output_root(Path(options.output))
    workspace.check()
    check_executor(options.executor, options.device)
    if options.executor == "local":  # Ray's actors see the cluster's devices, not this machine's
        check_devices(options.device)


@dataclass(frozen=True)
class Context:
    """What every spec's evaluation shares besides the encoder session: the derived cache, versions, timings."""

    derived: DerivedCache | None
    versions: dict[str, str]
    timings: dict[str, float]
    started: float


def evaluate_one(item: Loaded, vectors: SpecVectors, folder: Path,
                 context: Context) -> tuple[RunOutput, list[ProtocolRun]]:
    """One spec with one variant's vectors: evaluated, its plots, results and report, ready to be written."""
    clock = time.perf_counter()
    with limit_hint(item.plan.limit):
        runs = evaluate(item.plan, item.splits, vectors.scope, context.derived)
    plots, plot_names = plot_files(item.plan, runs, context.derived, vectors.model_name)
    texts = TextCounts(**vectors.counts())
    described, reranked = vectors.provenance()
    provenance = ModelProvenance(**described, reranker_model=None if reranked is None else RerankerProvenance(
        **reranked))
    timings = {**context.timings, "metrics": time.perf_counter() - clock,
               "total": time.perf_counter() - context.started}
    results, predictions = build_results(item.plan, item.splits, runs, provenance, texts, plot_names,
                                         context.versions, timings, ModelMeta(**vectors.meta()))
    report = render_card(item.plan.spec, next(iter(item.splits.values())).items, results)
    for note in identity_notes(item.plan.spec, results):  # the report says it too
        warn_stderr(f"{item.plan.id}: {note}")
    return RunOutput(results=results, results_path=folder / "results.json", report_path=folder / "report.md",
                     report=report, files={**plots, "predictions.jsonl": predictions},
                     has_card=item.plan.spec.card is not None), runs


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
