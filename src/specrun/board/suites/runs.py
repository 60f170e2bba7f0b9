"""Suite runs read back for `compare` and `leaderboard`: suite.json checked, every member's results.json found
where suite.json says (relative to the output root), matched by sha256 and verified (every score recomputed),
and each member's joint resamples drawn again from its predictions. Member i of every run is resampled with the
seed member_seed(suite seed, i) over the same unit ids, so resample b is the same units for every model: paired
within a member; members on the same items (board.suites.units.units_key) share the first one's draws, the others
are independent."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specrun.board.joint import MemberDraws, joint_draws
from specrun.board.suites.parts import ReadPart, member_ids, member_units, read_part
from specrun.core.errors import CompareError, SpecrunError
from specrun.core.workspace import warn_stderr
from specrun.results import IDENTITY_FIELDS, Results, run_identity, run_labels
from specrun.results.verify import Verified, verified_with_spec
from specrun.spec import LoadedSpec
from specrun.spec.model import Spec
from specrun.suites.model import ResolvedMember, load_suite
from specrun.suites.results import SUITE_FORMAT, MemberScore, PartScore, SuiteResults, read_suite_results


@dataclass(frozen=True)
class ReadMember:
    """A scored member of one suite run: its entry, its verified results and its draws."""

    score: MemberScore
    verified: Verified  # its results (of a member over several cells: its first cell's)
    ids: list[str]
    arrays: dict[str, np.ndarray]
    draws: MemberDraws
    direction: str
    parts: tuple[ReadPart, ...] = ()  # a member over several cells: each one read back


@dataclass(frozen=True)
class SuiteRun:
    path: Path
    results: SuiteResults
    members: list[ReadMember]  # the scored members, in suite order

    @property
    def label(self) -> str:
        return self.results.provenance.run


def display_labels(runs: Sequence[SuiteRun]) -> list[str]:
    """Each run's model as the leaderboard and compare name it (name plus the settings that differ), read from
    its first scored member's results; the folder name where none is scored."""
    if not all(run.members for run in runs):
        return [run.label for run in runs]
    return run_labels([run_identity(run.members[0].verified.results) for run in runs])


def is_suite_json(path: Path) -> bool:
    """A file whose `format` field is the suite results format (what `compare` and `leaderboard` dispatch on)."""
    if not path.is_file():  # a FIFO or a device named as a run is never opened here (it could block)
        return False
    try:
        with path.open("rb") as file:  # suite.json writes `format` first; a large results.json is not read whole
            head = file.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    return f'"format": "{SUITE_FORMAT}"' in head or f'"format":"{SUITE_FORMAT}"' in head


def output_root(path: Path) -> Path:
    """suite.json lies at ROOT/suite+<suite id>/<run>/suite.json; members' results paths are relative to ROOT."""
    return path.resolve().parent.parent.parent


def read_suite_runs(paths: Sequence[Path]) -> list[SuiteRun]:
    """Every suite.json read and checked against the first (one suite, one bootstrap) before any member is read,
    then every member read back verified and checked: what `compare` and `leaderboard` rank or pair."""
    read = []
    for path in paths:
        results = read_suite_results(path)
        if isinstance(results, str):
            raise CompareError(results)
        read.append((path, results))
    for path, results in read[1:]:
        _check_suite(read[0][0], read[0][1], path, results)
    runs = [read_suite_run(path, results) for path, results in read]
    check_together(runs)
    return runs


def read_suite_run(path: Path, results: SuiteResults) -> SuiteRun:
    """Every scored member of a suite.json read back verified; a missing or changed member file is one line.
    What the aggregates read is never taken from suite.json alone: each member's weight and task type come from
    the suite file (found by the sha256 suite.json records) and its direction from its spec (found by sha256,
    the results checked against it); a smoke run (--limit) is refused, as a run's readers refuse one."""
    root = output_root(path)
    u = results.provenance
    if u.limit is not None:
        raise CompareError(f"a --limit {u.limit} suite run (the first {u.limit} items of each split, a smoke run); "
                           "compare and the leaderboard take full runs only: rerun without --limit", file=str(path))
    declared = suite_file_members(path, results)
    scored, units, read = [], [], []
    for m in results.members:
        if m.status != "scored":
            continue
        where = f"member {m.index + 1} ({m.label} {m.metric})"
        own = declared[m.index]
        cells = m.cell_keys() or [(None, m.split, m.metric)]
        memo: dict[Path, tuple[Verified, LoadedSpec]] = {}  # two splits of one spec: its results verified once
        found = [_member_results(root / str(entry.results), m, entry, (split, metric), where, path, memo)
                 for entry, (_, split, metric) in zip(m.cells or [m], cells, strict=True)]
        parts = [read_part(verified, split, metric) for (verified, _), (_, split, metric) in zip(found, cells,
                                                                                                  strict=True)]
        scored.append((m, own, found[0][1], parts))
        units.append(member_units(own, parts))
        if _model_of(found[0][0].results) != _model_of(scored[0][3][0].verified.results):  # one model and setting
            raise CompareError(f"{where}: its results are a run of another model or configuration than member "
                               f"{scored[0][0].index + 1}'s; suite.json was edited", file=str(path))
    try:  # members over the same items share the first one's draws, as when the suite ran
        draws = joint_draws(units, resamples=u.resamples, seed=u.seed)
    except SpecrunError as exc:
        raise exc.prefixed(str(path)) from None
    for (m, own, spec, parts), drawn in zip(scored, draws, strict=True):
        metric = own.cells[0].metric if own.cells else m.metric
        read.append(ReadMember(score=m, verified=parts[0].verified, ids=member_ids(own, parts),
                               arrays=parts[0].arrays, draws=drawn, direction=spec.metrics[metric].direction,
                               parts=tuple(parts) if own.cells else ()))
    return SuiteRun(path=path, results=results, members=read)


def _model_of(results: Results) -> tuple[object, ...]:
    """The run's model and configuration, its device aside (`--device auto` may resolve apart between runs)."""
    return tuple(value for name, value in zip(("name", *IDENTITY_FIELDS), run_identity(results), strict=True)
                 if name != "device")


def suite_file_members(path: Path, results: SuiteResults) -> dict[int, ResolvedMember]:
    """The suite file suite.json was made from, found by its sha256 (the recorded path, else suites/*.yaml of the
    current folder), its members by index; suite.json's own record of each member (spec, split, metric, weight,
    task type) must agree with it, else one line: an edited weight would move every aggregate and rank."""
    wanted = results.provenance.suite_sha256
    recorded = Path(results.provenance.suite_path)
    candidates = [recorded, *(sorted(Path("suites").glob("*.yaml")) if Path("suites").is_dir() else [])]
    found = next((c for c in candidates if c.is_file()
                  and hashlib.sha256(c.read_bytes()).hexdigest() == wanted), None)
    if found is None:
        raise CompareError(f"the suite file it was run from (sha256 {wanted[:12]}) is neither at {recorded} nor in "
                           "suites/ here; its weights and task types are read from that file, never from suite.json "
                           "alone: run from the folder the suite was run from", file=str(path))
    loaded = load_suite(found)
    p, u = results.provenance, loaded.suite.uncertainty
    if [a.name for a in results.aggregates] != list(loaded.suite.aggregates) or (
            p.confidence, p.resamples, p.seed) != (u.confidence, u.resamples, u.seed):
        raise CompareError(f"suite.json's aggregates or bootstrap (confidence {p.confidence!r}, resamples "
                           f"{p.resamples}, seed {p.seed}) are not its suite file's {found}; suite.json was edited",
                           file=str(path))
    declared = {m.index: m for m in loaded.members}
    for m in results.members:
        own = declared.get(m.index)
        mine = None if own is None else (own.spec_id, own.split, own.metric, own.member.weight, own.task_type,
                                         None if not own.cells else tuple(c.key for c in own.cells))
        said = (m.spec_id, m.split, m.metric, m.weight, m.task_type, m.cell_keys())
        if mine != said:
            raise CompareError(f"member {m.index + 1}: suite.json records {said} where the suite file {found} says "
                               f"{mine}; suite.json was edited", file=str(path))
    return declared


def _member_results(results_path: Path, m: MemberScore, entry: MemberScore | PartScore, scored: tuple[str, str],
                    where: str, path: Path, memo: dict[Path, tuple[Verified, LoadedSpec]]) -> tuple[Verified, Spec]:
    """The member's results.json (`entry`: the member, or one of its cells; `scored`: its (split, metric)),
    verified against its spec. A file
    other than the one suite.json records (by sha256) is taken only when it answers the same request with the same
    numbers: another run of the same spec (same version), model and settings (it lies in the same folder, whose
    name is the settings) rewrote it, and its score equals the recorded one; else one line."""
    try:
        data = results_path.read_bytes()
    except OSError as exc:
        raise CompareError(f"{where}: cannot read {results_path} ({exc.strerror or exc})", file=str(path)) from None
    try:
        verified, loaded = memo.get(results_path) or verified_with_spec(results_path)
    except SpecrunError as exc:
        raise exc.prefixed(where) from None
    memo[results_path] = (verified, loaded)
    run = verified.results
    split, metric = scored
    if run.provenance.spec_sha256 != m.spec_sha256 or metric not in run.scores.get(split, {}):
        raise CompareError(f"{where}: {results_path} is not a run of the member's spec and score", file=str(path))
    if hashlib.sha256(data).hexdigest() != entry.results_sha256:
        score = run.scores[split][metric]
        if (score.value, score.ci_low, score.ci_high, score.n) != (entry.value, entry.ci_low, entry.ci_high, entry.n):
            raise CompareError(f"{where}: {results_path} is not the file suite.json records (sha256 differs) and "
                               f"its score is not the recorded one ({score.value!r} vs {entry.value!r}); refusing",
                               file=str(path))
        warn_stderr(f"{where}: {results_path} was rewritten by another run of the same spec, model and settings; "
                    "its score is the one suite.json records")
    return verified, loaded.spec


def _check_suite(path_a: Path, a: SuiteResults, path_b: Path, b: SuiteResults) -> None:
    pair = f"{path_b} and {path_a}"
    if a.suite_id != b.suite_id:
        raise CompareError(f"{pair} are runs of different suites ({b.suite_id} vs {a.suite_id}); refusing")
    if a.provenance.suite_sha256 != b.provenance.suite_sha256:
        raise CompareError(f"{pair} used different versions of suite {a.suite_id} (sha256 "
                           f"{b.provenance.suite_sha256[:12]} vs {a.provenance.suite_sha256[:12]}); refusing")
    pa, pb = a.provenance, b.provenance
    if (pa.resamples, pa.confidence, pa.seed) != (pb.resamples, pb.confidence, pb.seed):
        raise CompareError(f"{pair} used different suite bootstrap settings; refusing")


def check_together(runs: Sequence[SuiteRun]) -> None:
    """Runs compared or ranked together: one suite (id and sha256), the same bootstrap, the same members scored
    (or the same ones missing), each member on the same unit ids; else one line naming the two files."""
    first = runs[0]
    a = first.results
    for other in runs[1:]:
        b = other.results
        pair = f"{other.path} and {first.path}"
        _check_suite(first.path, a, other.path, b)
        keys_a = [(m.index, m.spec_id, m.split, m.metric, m.status) for m in a.members]
        keys_b = [(m.index, m.spec_id, m.split, m.metric, m.status) for m in b.members]
        if keys_a != keys_b:
            raise CompareError(f"{pair} score different members (or miss different ones: a partial aggregate is "
                               "comparable only to one missing the same members); refusing")
        for ma, mb in zip(first.members, other.members, strict=True):
            if ma.ids != mb.ids or ma.score.spec_sha256 != mb.score.spec_sha256:
                raise CompareError(f"{pair}: member {ma.score.index + 1} ({ma.score.spec_id}) evaluated different "
                                   "units; refusing")
    labels = [r.label for r in runs]
    twice = next((label for i, label in enumerate(labels) if label in labels[:i]), None)
    if twice is not None:
        raise CompareError(f"two runs of suite {a.suite_id} have the same model and settings ({twice}); name each "
                           "once")
