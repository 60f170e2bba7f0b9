"""Suite runs read back for `compare` and `leaderboard`: suite.json checked, every member's results.json found
where suite.json says (relative to the output root), matched by sha256 and verified (every score recomputed),
and each member's joint resamples drawn again from its predictions. Member i of every run is resampled with the
seed member_seed(suite seed, i) over the same unit ids, so resample b is the same units for every model: paired
within a member, members independent."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specrun.core.errors import CompareError, SpecrunError
from specrun.metrics.aggregate import MemberDraws, member_draws
from specrun.results import run_identity, run_labels
from specrun.results.verify import Verified, load_verified
from specrun.suites.results import SUITE_FORMAT, MemberScore, SuiteResults, read_suite_results


@dataclass(frozen=True)
class ReadMember:
    """A scored member of one suite run: its entry, its verified results and its draws."""

    score: MemberScore
    verified: Verified
    ids: list[str]
    arrays: dict[str, np.ndarray]
    draws: MemberDraws
    direction: str


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
    """Every scored member of a suite.json read back verified; a missing or changed member file is one line."""
    root = output_root(path)
    u = results.provenance
    members = []
    for m in results.members:
        if m.status != "scored":
            continue
        where = f"member {m.index + 1} ({m.spec_id} {m.split} {m.metric})"
        results_path = root / str(m.results)
        try:
            data = results_path.read_bytes()
        except OSError as exc:
            raise CompareError(f"{where}: cannot read {results_path} ({exc.strerror or exc})", file=str(path)) from None
        if hashlib.sha256(data).hexdigest() != m.results_sha256:
            raise CompareError(f"{where}: {results_path} is not the file suite.json records (sha256 differs); "
                               "refusing to use it", file=str(path))
        try:
            verified = load_verified(results_path)
        except SpecrunError as exc:
            raise exc.prefixed(where) from None
        run = verified.results
        if run.provenance.spec_sha256 != m.spec_sha256 or m.metric not in run.scores.get(m.split, {}):
            raise CompareError(f"{where}: {results_path} is not a run of the member's spec and score", file=str(path))
        info = run.metrics[m.metric]
        ids, arrays = verified.units[(m.split, info.protocol)]
        try:
            drawn = member_draws(info.metric, arrays, resamples=u.resamples, seed=u.seed, index=m.index,
                                 weight=m.weight, task_type=m.task_type)
        except SpecrunError as exc:
            raise exc.prefixed(where) from None
        members.append(ReadMember(score=m, verified=verified, ids=list(ids), arrays=arrays, draws=drawn,
                                  direction=info.direction))
    return SuiteRun(path=path, results=results, members=members)


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
