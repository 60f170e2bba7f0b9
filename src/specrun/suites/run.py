"""Running a suite: every member's spec through the one runner (one model load, one cache, each spec once), a
member already run with the same spec, model and settings read back verified instead, then the aggregates with
intervals over joint resamples. Members whose data is missing are named; only optional ones may be, and then
every aggregate says it is partial."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from specrun import __version__
from specrun.core.errors import MissingDataError, OfflineError, OutputError, SpecrunError, SuiteError
from specrun.core.options import RunOptions
from specrun.core.workspace import Workspace
from specrun.data import load_splits, resolve_data_dir
from specrun.encoders.models import ModelRef, resolve_model
from specrun.metrics.aggregate import MemberUnits, aggregate_interval, aggregate_method, joint_draws
from specrun.outputs import SetKind, write_output_sets
from specrun.outputs.folders import output_folder, suite_folder
from specrun.plan import make_plan
from specrun.published import PublishedDir
from specrun.results import configuration
from specrun.results.verify import Verified, verified_with_spec
from specrun.runner import run
from specrun.suites.aggregate import units_key
from specrun.suites.model import LoadedSuite, ResolvedMember, load_suite
from specrun.suites.published import MemberPublished, members_published, published_markdown
from specrun.suites.results import (
    AggregateScore,
    MemberScore,
    SuiteProvenance,
    SuiteResults,
    read_suite_results,
    suite_json,
    suite_markdown,
)


@dataclass(frozen=True)
class SuiteOutput:
    results: SuiteResults
    path: Path  # suite.json
    published: list[MemberPublished] | None = None  # with --published: each member's published value


SUITE_FILES = SetKind("a suite's run", ("suite.json", "suite.md"))

def request_sha256(member: ResolvedMember, model: ModelRef, options: RunOptions) -> str:
    """What a member's numbers depend on beyond its data (pinned by its spec): the spec's bytes, the weights, every
    setting that changes a vector, the device and specrun's version; and --limit, so that a smoke run's member is
    never reused by a full suite run (a limit of None is left out: the requests of earlier full runs stay)."""
    request = {"spec_sha256": member.loaded.sha256, "subset": member.loaded.subset, "model": model.name,
               "revision": model.revision, "weights_sha256": model.weights_sha256,
               "settings": options.encoder.model_dump(mode="json"), "device": options.device, "specrun": __version__,
               **({"limit": options.limit} if options.limit is not None else {})}
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()


def run_suite(path: str, options: RunOptions, console: Console,
              published: PublishedDir | None = None) -> SuiteOutput:
    if options.prompt_set is not None:
        raise SuiteError("--prompt-set is not supported for a suite; run the prompt set on each spec", file=path)
    if options.splits is not None:
        raise SuiteError("--splits chooses a spec's splits; a suite's members name theirs (`split`)", file=path)
    if options.name is not None:
        raise SuiteError("--name names one run's folder; a suite writes one folder per member, named by the model "
                         "and settings", file=path)
    loaded = load_suite(path)
    workspace = Workspace.resolve(options.cache_dir, options.no_cache)
    try:
        model = resolve_model(options.model, options.model_revision, memo_dir=workspace.memo)
        folder = suite_folder(options, loaded.suite.id, model.slug)
        requests = {m.index: request_sha256(m, model, options) for m in loaded.members}
        reused = _reusable(loaded, folder / "suite.json", requests, options, model, console)
        missing = _missing_data(loaded, set(reused), options, workspace)
    finally:
        workspace.close()
    pending = list({m.spec_id: m.loaded for m in loaded.members
                    if m.index not in reused and m.index not in missing}.values())
    count = len(loaded.members)
    for m in loaded.members:
        state = ("reused (same spec, model and settings)" if m.index in reused else
                 f"missing: {missing[m.index]}" if m.index in missing else "to run")
        _say(console, f"suite {loaded.suite.id}: member {m.index + 1}/{count} {m.label}: {state}")
    outputs = {out.results.spec_id: out for out in run(pending, options, console)} if pending else {}
    members, draws, changed = [], [], []
    for m in loaded.members:
        if m.index in missing:
            members.append(_missing_score(m, requests[m.index], missing[m.index]))
            continue
        results_path = output_folder(options, m.spec_id, model.slug) / "results.json"
        verified = reused.get(m.index) or verified_with_spec(results_path, str(m.loaded.path))[0]
        changed = changed or configuration(verified.results)
        score, drawn = _member_score(loaded, m, verified, options, requests[m.index],
                                     reused=m.index in reused,
                                     encoded=outputs[m.spec_id].results.texts.encoded
                                     if m.spec_id in outputs and _first_of_spec(loaded, m) else 0)
        members.append(score)
        draws.append(drawn)
    results = _suite_results(loaded, members, draws, model, folder.name, options.limit)
    beside = members_published(loaded, published, model.name, model.revision) if published is not None else None
    report = suite_markdown(results) + (published_markdown(results, beside, changed) if beside is not None else "")
    _write_suite(folder, {"suite.json": suite_json(results), "suite.md": report}, len(outputs))
    return SuiteOutput(results=results, path=folder / "suite.json", published=beside)


def _write_suite(folder: Path, files: dict[str, str | bytes], ran: int) -> None:
    """The suite's own set, after its members' runs were written: a failure says so, never "nothing was
    written"."""
    try:
        write_output_sets([(folder, files, SUITE_FILES)])
    except OutputError as exc:
        said = exc.message.replace("nothing was written", "the suite's files were not written")
        said += "" if said != exc.message else "; the suite's files were not written"
        said += f"; the {ran} member run(s) of this call were written whole" if ran else ""
        raise OutputError(said, file=exc.file, line=exc.line, key=exc.key) from None


def _first_of_spec(loaded: LoadedSuite, member: ResolvedMember) -> bool:
    """A spec scored by several members counts its encoded texts once, for its first member."""
    return next(m for m in loaded.members if m.spec_id == member.spec_id).index == member.index


def _reusable(loaded: LoadedSuite, suite_path: Path, requests: dict[int, str], options: RunOptions,
              model: ModelRef, console: Console) -> dict[int, Verified]:
    """Members an earlier suite.json records with the same request whose results.json (where this run would
    write it) is still the one it recorded and verifies against its spec; anything else is run again."""
    if not suite_path.exists():
        return {}
    earlier = read_suite_results(suite_path)
    if isinstance(earlier, str):
        _say(console, f"specrun: warning: {earlier}; every member is run again")
        return {}
    recorded = {(e.spec_id, e.split, e.metric): e for e in earlier.members if e.status == "scored"}
    reused = {}
    for m in loaded.members:
        entry = recorded.get((m.spec_id, m.split, m.member.metric))
        results_path = output_folder(options, m.spec_id, model.slug) / "results.json"
        if entry is None or entry.request_sha256 != requests[m.index] or entry.results != _relative(
                results_path, options):
            continue
        try:
            if hashlib.sha256(results_path.read_bytes()).hexdigest() != entry.results_sha256:
                continue
            reused[m.index] = verified_with_spec(results_path, str(m.loaded.path))[0]
        except (OSError, SpecrunError) as exc:
            reason = exc.one_line() if isinstance(exc, SpecrunError) else str(exc)
            _say(console, f"specrun: warning: member {m.index + 1} {m.label}: not reused ({reason}); run again")
    return reused


def _say(console: Console, line: str) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def _relative(results_path: Path, options: RunOptions) -> str:
    return results_path.relative_to(Path(options.output)).as_posix()


def _missing_data(loaded: LoadedSuite, reused: set[int], options: RunOptions,
                  workspace: Workspace) -> dict[int, str]:
    """Every member to run has its data read and checked first, so that a required member's missing file is one
    line before anything is said or encoded; an optional member's missing data is returned with why."""
    data_dir = resolve_data_dir(options.data_dir)
    missing: dict[int, str] = {}
    checked: dict[str, str | None] = {}  # spec id -> why its data is missing (None: it is here)
    for m in loaded.members:
        if m.index in reused:
            continue
        if m.spec_id not in checked:
            plan = make_plan(m.loaded)
            try:
                load_splits(plan, data_dir, workspace=workspace)
                checked[m.spec_id] = None
            except (MissingDataError, OfflineError) as exc:  # a wrong sha256 or a bad row is still an error
                if not m.member.optional:
                    raise
                checked[m.spec_id] = exc.one_line()
        if checked[m.spec_id] is not None:
            missing[m.index] = str(checked[m.spec_id])
    return missing


def _missing_score(m: ResolvedMember, request: str, reason: str) -> MemberScore:
    return MemberScore(index=m.index, spec=m.member.spec, spec_id=m.spec_id, spec_sha256=m.loaded.sha256,
                       split=m.split, metric=m.member.metric, task_type=m.task_type, weight=m.member.weight,
                       optional=m.member.optional, status="missing", reason=reason, request_sha256=request)


def _member_score(loaded: LoadedSuite, m: ResolvedMember, verified: Verified, options: RunOptions, request: str,
                  *, reused: bool, encoded: int) -> tuple[MemberScore, MemberUnits]:
    """The member's score from its results read back verified (names, numbers, predictions' sha256, every score
    recomputed, the spec by sha256), and its units, drawn with the others' for the joint resamples."""
    results, results_path = verified.results, verified.path
    score = results.scores[m.split][m.member.metric]
    info = results.metrics[m.member.metric]
    ids, arrays = verified.units[(m.split, info.protocol)]
    units = MemberUnits(index=m.index, metric=info.metric, arrays=arrays, key=units_key(results, m.split, ids),
                        weight=m.member.weight, task_type=m.task_type)
    relative = _relative(results_path, options)
    member = MemberScore(index=m.index, spec=m.member.spec, spec_id=m.spec_id, spec_sha256=m.loaded.sha256,
                         split=m.split, metric=m.member.metric, task_type=m.task_type, weight=m.member.weight,
                         optional=m.member.optional, status="scored", value=score.value, ci_low=score.ci_low,
                         ci_high=score.ci_high, interval=score.interval, n=score.n, results=relative,
                         results_sha256=hashlib.sha256(results_path.read_bytes()).hexdigest(),
                         request_sha256=request, reused=reused, encoded=encoded)
    return member, units


def _suite_results(loaded: LoadedSuite, members: list[MemberScore], units: list[MemberUnits],
                   model: ModelRef, run_name: str, limit: int | None = None) -> SuiteResults:
    suite, u = loaded.suite, loaded.suite.uncertainty
    draws = joint_draws(units, resamples=u.resamples, seed=u.seed)  # members over the same items share a draw
    partial = any(m.status == "missing" for m in members)
    aggregates = []
    method = aggregate_method([m.interval or "percentile" for m in members if m.status == "scored"])
    for name in suite.aggregates:
        value, low, high = aggregate_interval(name, draws, u.confidence, method)
        aggregates.append(AggregateScore(name=name, value=value, ci_low=low, ci_high=high, interval=method,
                                         members=len(draws), partial=partial))
    provenance = SuiteProvenance(suite_path=str(loaded.path), suite_sha256=loaded.sha256, run=run_name,
                                 model=model.name,
                                 revision=model.revision, weights_sha256=model.weights_sha256,
                                 resamples=u.resamples, confidence=u.confidence, seed=u.seed,
                                 specrun_version=__version__,
                                 created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                 limit=limit)
    return SuiteResults(suite_id=suite.id, title=suite.title, version=suite.version, members=members,
                        aggregates=aggregates, provenance=provenance)
