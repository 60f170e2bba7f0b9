"""Reading a run back (compare, publish, card --results) without trusting results.json: a file anyone can edit.

Every reader goes through `load_verified`: a bounded read of results.json, its ids and names checked before any
becomes a path, its numbers checked for sense, the predictions it pins read (bounded, sha256) and every score's
value and n recomputed from them. What must come from the benchmark itself (licence, publication status) comes
from the spec the run used, found by the sha256 results.json records (`find_spec`, `check_against_spec`). Each
refusal is one ResultsError line naming the file and key."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.errors import ResultsError, SpecrunError
from specrun.core.registry import PROTOCOLS
from specrun.core.workspace import warn_stderr
from specrun.metrics import METRICS, estimate
from specrun.metrics.estimate import n_runs, per_run_values, point_of
from specrun.plan import interval_method
from specrun.results._build import version_of
from specrun.results._counts import check_uncertainty, check_unit_counts
from specrun.results._read import is_plain_file_name, read_predictions, read_results
from specrun.results.model import RESULTS_LIMIT, Results, Unit
from specrun.spec import NAME_PATTERN, LoadedSpec, Spec, load_spec, subset_specs
from specrun.spec.extends import chain_sha256

_NAME = re.compile(NAME_PATTERN)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
REL_TOLERANCE = 1e-9  # recomputed vs recorded: float64 sums in another order differ by ~1e-15 relative
ABS_TOLERANCE = 1e-12  # for values at or near 0

Units = dict[Unit, tuple[list[str], dict[str, np.ndarray]]]


@dataclass(frozen=True)
class Verified:
    """A results.json whose every score was recomputed from the predictions it pins."""

    path: Path
    results: Results
    units: Units


def _fail(path: Path, message: str, key: str | None = None) -> ResultsError:
    return ResultsError(message, file=str(path), key=key)


def _name(path: Path, value: str, key: str, what: str) -> None:
    if not _NAME.fullmatch(value):
        raise _fail(path, f"{what} {value!r} is not a lower-case name of letters, digits, '_', '.', '-'", key)


def check_consistency(results: Results, path: Path) -> None:
    """Names that become paths or hub ids, and numbers that must make sense, before anything uses them."""
    _name(path, results.spec_id, "spec_id", "spec id")
    p = results.provenance
    if not _SHA256.fullmatch(p.spec_sha256):
        raise _fail(path, f"spec sha256 {p.spec_sha256!r} is not 64 lower-case hex digits", "provenance.spec_sha256")
    if not _SHA256.fullmatch(results.predictions.sha256):
        raise _fail(path, "the predictions sha256 is not 64 lower-case hex digits", "predictions.sha256")
    if not is_plain_file_name(results.predictions.file):
        raise _fail(path, f"predictions file {results.predictions.file!r} must be a plain file name beside "
                          "results.json", "predictions.file")
    if results.predictions.rows < 0:
        raise _fail(path, f"predictions rows {results.predictions.rows} is negative", "predictions.rows")
    for split in p.data:
        _name(path, split, f"provenance.data.{split}", "split")
    _check_metric_infos(results, path)
    check_uncertainty(results, path)
    _check_scores(results, path)
    for plot, file in results.plots.items():
        split, _, protocol = plot.partition("/")
        if not (_NAME.fullmatch(split) and _NAME.fullmatch(protocol)):
            raise _fail(path, f"plot key {plot!r} is not 'split/protocol'", f"plots.{plot}")
        if not is_plain_file_name(file):
            raise _fail(path, f"plot file {file!r} must be a plain file name beside results.json", f"plots.{plot}")


def _check_metric_infos(results: Results, path: Path) -> None:
    """Each metric's id and protocol are names, and its metric and protocol kind are known and fit each other."""
    for metric_id, info in results.metrics.items():
        key = f"metrics.{metric_id}"
        _name(path, metric_id, key, "metric id")
        _name(path, info.protocol, f"{key}.protocol", "protocol")
        if info.metric not in METRICS:
            raise _fail(path, f"unknown metric {info.metric!r}; expected one of: {', '.join(METRICS)}",
                        f"{key}.metric")
        if info.protocol_kind not in PROTOCOLS:
            raise _fail(path, f"unknown protocol kind {info.protocol_kind!r}; expected one of: "
                              f"{', '.join(PROTOCOLS)}", f"{key}.protocol_kind")
        produced = PROTOCOLS[info.protocol_kind].info.outputs
        missing = [need for need in METRICS[info.metric].inputs if need not in produced]
        if missing:
            raise _fail(path, f"metric {info.metric!r} needs {', '.join(missing)}, which protocol kind "
                              f"{info.protocol_kind!r} does not produce", f"{key}.metric")
        if info.direction != METRICS[info.metric].direction:  # as every spec must: else ranked upside down
            raise _fail(path, f"{info.metric} is {METRICS[info.metric].direction} is better; the file says "
                              f"{info.direction}: refusing edited results", f"{key}.direction")


def _check_scores(results: Results, path: Path) -> None:
    """Each score belongs to a split the run read and a metric it defines, with finite, ordered numbers."""
    if not results.scores:
        raise _fail(path, "no scores", "scores")
    for split, scores in results.scores.items():
        _name(path, split, f"scores.{split}", "split")
        if split not in results.provenance.data:
            raise _fail(path, f"split {split!r} has scores but no provenance.data entry", f"scores.{split}")
        for metric_id, score in scores.items():
            key = f"scores.{split}.{metric_id}"
            if metric_id not in results.metrics:
                raise _fail(path, f"a score for metric id {metric_id!r}, which metrics does not define", key)
            numbers = {"value": score.value, "ci_low": score.ci_low, "ci_high": score.ci_high}
            for field, number in numbers.items():
                if not math.isfinite(number):
                    raise _fail(path, f"{field} is {number!r}, not a finite number", f"{key}.{field}")
            if score.ci_low > score.ci_high:
                raise _fail(path, f"ci_low {score.ci_low!r} is above ci_high {score.ci_high!r}", key)
            if score.n <= 0:
                raise _fail(path, f"n must be positive, got {score.n}", f"{key}.n")


def _close(recorded: float, computed: float) -> bool:
    return math.isclose(recorded, computed, rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)


BOOTSTRAP_PACKAGES = ("numpy", "scipy")  # the seeded bootstrap's numbers depend on these


def _versions_here() -> dict[str, str]:
    found = {}
    for name in BOOTSTRAP_PACKAGES:
        try:
            found[name] = version_of(name)  # numpy's and scipy's metadata parsed whole took 3 ms a read-back
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def _named(versions: dict[str, str]) -> str:
    return ", ".join(f"{name} {versions.get(name, 'unrecorded')}" for name in BOOTSTRAP_PACKAGES)


def recompute(results: Results, units: Units, path: Path) -> tuple[Results, list[str]]:
    """Every score's value, n and interval from the predictions (weights 1); an edited number is refused. The
    interval is recomputed whatever results.json says made it: with the numpy and scipy it records, a different
    interval is an edit; with others (which the file itself claims, so it cannot be trusted to switch the check
    off), the interval computed here replaces the recorded one and a note says so. Returns the results as
    verified (intervals replaced where they were) and the notes."""
    scored = {(split, results.metrics[m].protocol) for split, scores in results.scores.items() for m in scores}
    for split, protocol in units:
        if (split, protocol) not in scored:
            raise _fail(path, f"the predictions have rows for split {split!r}, protocol {protocol!r}, which "
                              "results.json does not score", "predictions")
    here = _versions_here()
    recorded = {name: results.provenance.packages.get(name, "unrecorded") for name in BOOTSTRAP_PACKAGES}
    replaced: list[str] = []
    shown = {split: dict(scores) for split, scores in results.scores.items()}
    for split, scores in results.scores.items():
        for metric_id, score in scores.items():
            low, high = _checked_score(results, units, split, metric_id, path)
            if not (_close(score.ci_low, low) and _close(score.ci_high, high)):
                if recorded == here:
                    raise _fail(path, f"interval [{score.ci_low!r}, {score.ci_high!r}] differs from the [{low!r}, "
                                      f"{high!r}] its predictions give; refusing edited results",
                                f"scores.{split}.{metric_id}")
                shown[split][metric_id] = score.model_copy(update={"ci_low": low, "ci_high": high})
                replaced.append(f"{split}/{metric_id}")
    if not replaced:
        return results, []
    return results.model_copy(update={"scores": shown}), [
        f"{path}: the interval of {', '.join(replaced)} is the one computed here from the predictions "
        f"({_named(here)}), not the recorded one (made, results.json says, with {_named(recorded)})"]


def _checked_score(results: Results, units: Units, split: str, metric_id: str, path: Path) -> tuple[float, float]:
    """One score's value, n and runs checked against its predictions; returns the interval they give, for recompute."""
    key = f"scores.{split}.{metric_id}"
    score = results.scores[split][metric_id]
    info = results.metrics[metric_id]
    unit = units.get((split, info.protocol))
    metric = METRICS[info.metric]
    if unit is None:
        raise _fail(path, f"the predictions have no rows for split {split!r}, protocol {info.protocol!r}", key)
    arrays = unit[1]
    absent = [name for name in metric.inputs if name not in arrays]
    if absent:
        raise _fail(path, f"the predictions lack {', '.join(absent)}, which {info.metric} needs", key)
    data = [np.asarray(arrays[name], dtype=np.float64) for name in metric.inputs]
    runs = _runs_of(metric, data, path, key)
    with np.errstate(all="ignore"):
        each = per_run_values(metric, data)
        value = point_of(metric, each)
        each = np.atleast_1d(each)
    expected_runs, expected_sd = (runs, float(np.std(each))) if each.size > 1 else (None, None)
    if score.runs != expected_runs or (score.run_sd is None) != (expected_sd is None) or (
            expected_sd is not None and not _close(score.run_sd, expected_sd)):
        raise _fail(path, f"runs {score.runs!r}, run_sd {score.run_sd!r} differ from the {expected_runs!r}, "
                          f"{expected_sd!r} its predictions give; refusing edited results", f"{key}.runs")
    n = metric.count(*data) if metric.count else len(data[0])
    if not _close(score.value, value):
        raise _fail(path, f"value {score.value!r} differs from the {value!r} its predictions give; "
                          "refusing edited results", f"{key}.value")
    if score.n != n:
        raise _fail(path, f"n {score.n} differs from the {n} units its predictions give; "
                          "refusing edited results", f"{key}.n")
    return _recompute_interval(results, arrays, info.metric, score.interval, path, key, info.range)


def _runs_of(metric: MetricEntry, data: list[np.ndarray], path: Path, key: str) -> int:
    """The runs the predictions hold for a metric, checked: only a per-run metric's first input may hold one value
    per run (a list); every other column holds one number per unit."""
    if not metric.per_run:
        if any(values.ndim != 1 for values in data):
            raise _fail(path, "the predictions hold a list where this metric reads one number per unit", key)
        return 0
    try:
        return n_runs(metric, data)
    except SpecrunError as exc:
        raise _fail(path, exc.message, key) from None


def _recompute_interval(results: Results, arrays: dict[str, np.ndarray], metric: str, method: str, path: Path,
                        key: str, bounds: tuple[float, float] | None = None) -> tuple[float, float]:
    u = results.provenance.uncertainty
    try:
        again = estimate(metric, arrays, resamples=u.resamples, confidence=u.confidence, seed=u.seed,
                         interval=method, bounds=bounds)
    except SpecrunError as exc:
        raise _fail(path, f"the interval cannot be recomputed from the predictions ({exc.message})", key) from None
    return again.ci_low, again.ci_high


# Per kind: a column added after runs were written -> the column it equals in those older runs. A pair_classification
# run written before its thresholds took the protocol's `similarity:` was cosine-only, so its threshold_score (the
# score the thresholds cut) is its cosine_score. Filled in only where the run records cosine (or, older still,
# nothing: cosine); a run that records another function and lacks the column is refused as any missing input.
OLDER_COLUMNS = {"pair_classification": {"threshold_score": "cosine_score"}}


def with_older_columns(results: Results, units: Units) -> Units:
    """The predictions with each column OLDER_COLUMNS names filled in where an older run lacks it."""
    kinds = {info.protocol: info.protocol_kind for info in results.metrics.values()}
    filled: Units = {}
    for (split, protocol), (ids, arrays) in units.items():
        used = results.provenance.similarity.get(protocol)
        if used is None or used.function == "cosine":
            older = OLDER_COLUMNS.get(kinds.get(protocol, ""), {})
            arrays = {**arrays, **{column: arrays[source] for column, source in older.items()
                                   if column not in arrays and source in arrays}}
        filled[(split, protocol)] = (ids, arrays)
    return filled


def load_verified(path: Path | str) -> Verified:
    """results.json read back and checked: names, numbers, the predictions' sha256, every score recomputed."""
    path = Path(path)
    results = read_results(path)
    check_consistency(results, path)
    units = with_older_columns(results, read_predictions(path, results))
    check_unit_counts(results, units, path)
    results, notes = recompute(results, units, path)
    for note in notes:  # every command that reads runs back says which interval it shows
        warn_stderr(note)
    return Verified(path=path, results=results, units=units)


def find_spec(results: Results, results_path: Path, explicit: str | None = None) -> LoadedSpec:
    """The spec the run used, by the sha256 results.json records: --spec when given, else the recorded path,
    else any specs/*.yaml of the current folder. The results' licence and status are never trusted instead."""
    wanted = results.provenance.spec_sha256
    if explicit is not None:
        candidates = [Path(explicit)]
    else:
        candidates = [Path(results.provenance.spec_path)]
        specs = Path("specs")
        if specs.is_dir():
            candidates += sorted(specs.glob("*.yaml"))
    for candidate in candidates:
        if chain_sha256(candidate) == wanted:  # its bytes' (with `extends`, its chain's)
            loaded = load_spec(candidate)
            if loaded.sha256 == wanted:  # the same bytes were parsed as were hashed
                return _subset_of(loaded, results, results_path)
    if explicit is not None:
        raise _fail(results_path, f"--spec {explicit} is not the spec this run used (results.json records sha256 "
                                  f"{wanted}); pass --spec with the spec file the run used", "provenance.spec_sha256")
    raise _fail(results_path, f"the spec this run used (sha256 {wanted}, recorded as "
                              f"{results.provenance.spec_path!r}) is neither at that path nor in specs/; "
                              "run from the folder the run was made in, or pass --spec SPEC", "provenance.spec_sha256")


def _subset_of(loaded: LoadedSpec, results: Results, results_path: Path) -> LoadedSpec:
    """The spec a run scored: the file's, or the subset of it the results name."""
    subset = results.provenance.subset
    if subset is None:
        return loaded
    if subset not in (loaded.spec.subsets or {}):
        raise _fail(results_path, f"the run scored subset {subset!r}, which {loaded.display} does not declare",
                    "provenance.subset")
    return subset_specs(loaded, [subset])[0]


def check_against_spec(verified: Verified, loaded: LoadedSpec) -> None:
    """The results agree with the spec they were made from: same version (sha256), licence, status, metrics,
    splits, selections and bootstrap settings. Anything else means an edited results.json."""
    results, path, spec = verified.results, verified.path, loaded.spec
    if results.provenance.spec_sha256 != loaded.sha256:
        raise _fail(path, f"results were made from another version of {loaded.display} (sha256 "
                          f"{results.provenance.spec_sha256}, the spec now has {loaded.sha256}); rerun the spec",
                    "provenance.spec_sha256")
    for key, (found, wanted) in _recorded_and_specced(results, spec, path).items():
        if found != wanted:
            raise _fail(path, f"{found!r} differs from {wanted!r} in its spec {loaded.display}; "
                              "refusing edited results", key)
    for metric_id, m in spec.metrics.items():
        info = results.metrics.get(metric_id)
        wanted_info = (m.metric, m.protocol, spec.protocols[m.protocol].kind, m.label, m.direction, m.range)
        if info is None or (info.metric, info.protocol, info.protocol_kind, info.label, info.direction,
                            info.range or m.range) != wanted_info:  # the range clips every interval (older: none)
            raise _fail(path, f"metric {metric_id!r} differs from its spec {loaded.display}; refusing edited results",
                        f"metrics.{metric_id}")
    for metric_id in results.metrics:
        if metric_id not in spec.metrics:
            raise _fail(path, f"metric {metric_id!r} is not in its spec {loaded.display}", f"metrics.{metric_id}")
    for split, scores in results.scores.items():
        if sorted(scores) != sorted(spec.metrics):
            raise _fail(path, f"split {split} does not score exactly the spec's metrics", f"scores.{split}")
        for metric_id, score in scores.items():
            if score.interval != interval_method(spec, metric_id):
                raise _fail(path, f"interval method {score.interval!r} differs from the "
                                  f"{interval_method(spec, metric_id)!r} its spec {loaded.display} gives "
                                  f"{metric_id}; refusing edited results", f"scores.{split}.{metric_id}.interval")
        data = results.provenance.data[split]
        source = spec.sources[spec.splits[split].source]
        declared = spec.splits[split].fingerprint
        if (data.path, data.revision, data.licence) != (source.path, source.revision, source.licence) or (
                declared is not None and data.fingerprint != declared) or (
                data.selection != str(spec.subset.splits.get(split, "all"))):  # a count edited in (a --limit run)
            raise _fail(path, f"split {split}: data provenance differs from its spec {loaded.display}",
                        f"provenance.data.{split}")


def _recorded_and_specced(results: Results, spec: Spec, path: Path) -> dict[str, tuple[object, object]]:
    """Per key of results.json, what it records and what its spec gives: the fields that must be equal."""
    return {
        "spec_id": (results.spec_id, spec.id),
        "title": (results.title, spec.title),
        "licence": (results.licence, spec.licence.data),
        "publication": (results.publication, spec.licence.publication),
        "provenance.uncertainty.resamples": (results.provenance.uncertainty.resamples, spec.uncertainty.resamples),
        "provenance.uncertainty.confidence": (results.provenance.uncertainty.confidence,
                                              spec.uncertainty.confidence),
        "provenance.uncertainty.seed": (results.provenance.uncertainty.seed, spec.subset.seed),
        "scores": (sorted(results.scores), sorted(_scored_splits(results, spec.evaluated_splits, path))),
    }


def _scored_splits(results: Results, evaluated: list[str], path: Path) -> list[str]:
    """The splits a run must score: those --splits chose, as results.json records them (each one the spec
    evaluates), else every split the spec evaluates. A split dropped from scores without that record is an edit,
    and so is a --limit run with more items than its limit."""
    p = results.provenance
    for split, data in p.data.items():
        if p.limit is not None and data.n_selected > p.limit:
            raise _fail(path, f"{data.n_selected} items selected beyond the --limit {p.limit} it records; refusing "
                              "edited results", f"provenance.data.{split}.n_selected")
    chosen = p.splits
    if chosen is None:
        return evaluated
    unknown = [name for name in chosen if name not in evaluated] or ([] if chosen else ["(none)"])
    if unknown:
        raise _fail(path, f"the run records chosen split {unknown[0]!r}, which its spec does not evaluate; refusing "
                          "edited results", "provenance.splits")
    return chosen


def refuse_limited(verified: Verified, what: str) -> None:
    """A --limit run scored the first N items only: a smoke run, never compared, ranked or published."""
    limit = verified.results.provenance.limit
    if limit is not None:
        raise _fail(verified.path, f"a --limit {limit} run (the first {limit} items of each split, a smoke run); "
                                   f"{what} takes full runs only: rerun without --limit", "provenance.limit")


def verified_with_spec(path: Path | str, spec: str | None = None) -> tuple[Verified, LoadedSpec]:
    """load_verified, then the spec found by sha256 (or --spec) and checked against the results."""
    verified = load_verified(path)
    loaded = find_spec(verified.results, verified.path, spec)
    check_against_spec(verified, loaded)
    return verified, loaded


__all__ = ["RESULTS_LIMIT", "Verified", "check_against_spec", "check_consistency", "find_spec", "load_verified",
           "recompute", "refuse_limited", "verified_with_spec", "with_older_columns"]
