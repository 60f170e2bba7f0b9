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
from specrun.board.joint import MemberUnits, aggregate_interval, aggregate_method, joint_draws
from specrun.board.suites.parts import member_units, own_mean, part_scores, read_parts
from specrun.core.errors import MissingDataError, OfflineError, OutputError, SpecrunError, SuiteError
from specrun.core.options import RunOptions
from specrun.core.workspace import Workspace
from specrun.data import load_splits, resolve_data_dir
from specrun.encoders.models import ModelRef, resolve_model
from specrun.mteb.results import PublishedDir
from specrun.outputs import SetKind, write_output_sets
from specrun.outputs.folders import output_folder, suite_folder
from specrun.plan import make_plan
from specrun.results import configuration
from specrun.results.identity import identity_notes
from specrun.results.verify import Verified, verified_with_spec
from specrun.runner import run
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
               **({"limit": options.limit} if options.limit is not None else {}),
               **({"subsets": list(member.subsets)} if member.subsets is not None else {}),
               **({"splits": list(member.splits)} if member.splits is not None else {})}
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
    pending = list({spec.spec.id: spec for m in loaded.members if m.index not in reused and m.index not in missing
                    for spec in m.runs}.values())
    count = len(loaded.members)
    for m in loaded.members:
        state = ("reused (same spec, model and settings)" if m.index in reused else
                 f"missing: {missing[m.index]}" if m.index in missing else "to run")
        _say(console, f"suite {loaded.suite.id}: member {m.index + 1}/{count} {m.label}: {state}")
    outputs = {out.results.spec_id: out for out in run(pending, options, console)} if pending else {}
    members, draws, changed, other_data = [], [], [], []
    for m in loaded.members:
        if m.index in missing:
            members.append(_missing_score(m, requests[m.index], missing[m.index]))
            continue
        verified = reused.get(m.index) or [verified_with_spec(output_folder(options, spec.spec.id, model.slug) /
                                                              "results.json", str(spec.path))[0] for spec in m.runs]
        changed = changed or configuration(verified[0].results)
        other_data += [f"{m.label}: {note}" for spec, one in zip(m.runs, verified, strict=True)
                       for note in identity_notes(spec.spec, one.results)]
        encoded = sum(outputs[spec.spec.id].results.texts.encoded for spec in m.runs
                      if spec.spec.id in outputs and _first_of_spec(loaded, m, spec.spec.id))
        score, drawn = _member_score(m, verified, options, requests[m.index], reused=m.index in reused,
                                     encoded=encoded)
        members.append(score)
        draws.append(drawn)
    results = _suite_results(loaded, members, draws, model, folder.name, options.limit)
    beside = members_published(loaded, published, model.name, model.revision) if published is not None else None
    report = suite_markdown(results) + (published_markdown(results, beside, changed, other_data) if beside is not None
                                        else "")
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


def _first_of_spec(loaded: LoadedSuite, member: ResolvedMember, spec_id: str) -> bool:
    """A spec (a subset's) scored by several members counts its encoded texts once, for its first member."""
    return next(m for m in loaded.members if any(s.spec.id == spec_id for s in m.runs)).index == member.index


def _reusable(loaded: LoadedSuite, suite_path: Path, requests: dict[int, str], options: RunOptions,
              model: ModelRef, console: Console) -> dict[int, list[Verified]]:
    """Members an earlier suite.json records with the same request whose results.json (where this run would
    write it) is still the one it recorded and verifies against its spec; anything else is run again."""
    if not suite_path.exists():
        return {}
    earlier = read_suite_results(suite_path)
    if isinstance(earlier, str):
        _say(console, f"specrun: warning: {earlier}; every member is run again")
        return {}
    recorded = {(e.spec_id, e.split, e.metric, e.cell_keys()): e for e in earlier.members if e.status == "scored"}
    reused = {}
    for m in loaded.members:
        entry = recorded.get((m.spec_id, m.split, m.metric, cell_keys(m)))
        if entry is None or entry.request_sha256 != requests[m.index]:
            continue
        paths = {spec.spec.id: output_folder(options, spec.spec.id, model.slug) / "results.json" for spec in m.runs}
        ids = [c.spec.spec.id for c in m.cells] or [m.spec_id]
        said = [(p.results, p.results_sha256) for p in entry.cells or [entry]]
        if [where for where, _ in said] != [_relative(paths[spec_id], options) for spec_id in ids]:
            continue
        try:
            if any(hashlib.sha256(paths[spec_id].read_bytes()).hexdigest() != sha
                   for spec_id, (_, sha) in zip(ids, said, strict=True)):
                continue
            reused[m.index] = [verified_with_spec(paths[spec.spec.id], str(spec.path))[0] for spec in m.runs]
        except (OSError, SpecrunError) as exc:
            reason = exc.one_line() if isinstance(exc, SpecrunError) else str(exc)
            _say(console, f"specrun: warning: member {m.index + 1} {m.label}: not reused ({reason}); run again")
    return reused


def cell_keys(m: ResolvedMember) -> tuple[tuple[str | None, str, str], ...] | None:
    """(subset, split, metric) of each cell of a member over several, as MemberScore.cell_keys reads them back."""
    return tuple(c.key for c in m.cells) if m.cells else None


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
        for spec in m.runs:
            if spec.spec.id not in checked:
                try:
                    load_splits(make_plan(spec), data_dir, workspace=workspace)
                    checked[spec.spec.id] = None
                except (MissingDataError, OfflineError) as exc:  # a wrong sha256 or a bad row is still an error
                    if not m.member.optional:
                        raise
                    checked[spec.spec.id] = exc.one_line()
        why = [str(checked[spec.spec.id]) for spec in m.runs if checked[spec.spec.id] is not None]
        if why:
            missing[m.index] = "; ".join(why)
    return missing


def _missing_score(m: ResolvedMember, request: str, reason: str) -> MemberScore:
    return MemberScore(index=m.index, spec=m.member.spec, spec_id=m.spec_id, spec_sha256=m.loaded.sha256,
                       split=m.split, metric=m.metric, task_type=m.task_type, weight=m.member.weight,
                       optional=m.member.optional, status="missing", reason=reason, request_sha256=request)


def _member_score(m: ResolvedMember, verified: list[Verified], options: RunOptions, request: str, *, reused: bool,
                  encoded: int) -> tuple[MemberScore, MemberUnits]:
    """The member's score from its results read back verified (names, numbers, predictions' sha256, every score
    recomputed, the spec by sha256), and its units, drawn with the others' for the joint resamples. A member over
    several subsets or splits scores the mean over its cells (board.suites.parts)."""
    parts = read_parts(m, verified)
    relative = {spec.spec.id: _relative(v.path, options) for spec, v in zip(m.runs, verified, strict=True)}
    common = dict(index=m.index, spec=m.member.spec, spec_id=m.spec_id, spec_sha256=m.loaded.sha256, split=m.split,
                  metric=m.metric, task_type=m.task_type, weight=m.member.weight, optional=m.member.optional,
                  status="scored", request_sha256=request, reused=reused, encoded=encoded)
    if m.cells:
        value, low, high, method = own_mean(m, parts)
        cells = part_scores(m, parts, relative)
        member = MemberScore(**common, value=value, ci_low=low, ci_high=high, interval=method,
                             n=sum(p.n for p in cells), cells=cells)
    else:
        score = verified[0].results.scores[m.split][m.metric]
        member = MemberScore(**common, value=score.value, ci_low=score.ci_low, ci_high=score.ci_high,
                             interval=score.interval, n=score.n, results=relative[m.spec_id],
                             results_sha256=hashlib.sha256(verified[0].path.read_bytes()).hexdigest())
    return member, member_units(m, parts)


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
