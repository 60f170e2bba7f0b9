"""A metric's value on all units and its seeded bootstrap interval, resampling the protocol's unit (pairs, queries,
sentence pairs) through the one resampling driver, and for a metric of several runs the runs too; the interval is
read from the resamples by a method of `metrics.intervals`. NaN, a constant prediction or degenerate resamples are
errors, never numbers."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.derived import arrays_digest
from specrun.core.errors import MetricError
from specrun.core.recent import Recent
from specrun.core.registry import METRICS
from specrun.core.types import Score
from specrun.metrics import intervals
from specrun.metrics.resampling import distribution, forget_draws, mean_over_runs


def n_runs(metric: MetricEntry, data: Sequence[np.ndarray]) -> int:
    """The runs a per-run metric's first input holds (its second axis; 1 when it is 1-D), the others holding one
    value per unit (or, for a `run_gold` metric, one per unit and run); 0 for a plain metric."""
    if not metric.per_run:
        return 0
    first, *others = data
    runs = first.shape[1] if first.ndim == 2 else 1
    bad = [name for name, values in zip(metric.inputs[1:], others, strict=True) if values.ndim != 1 and not (
        metric.run_gold and values.ndim == 2 and first.ndim == 2 and values.shape[1] == runs)]
    if first.ndim not in (1, 2) or bad:
        raise MetricError(f"{', '.join(bad) or metric.inputs[0]} must hold one value per unit"
                          + (f" (or one per unit and each of the {runs} runs)" if bad else " (or one per run)"))
    return runs


def per_run_values(metric: MetricEntry, data: Sequence[np.ndarray]) -> np.ndarray:
    """The metric on all units: one value, or (runs,) values for a per-run metric."""
    return np.asarray(metric.statistic(*data, weights=np.ones(len(data[0]))), dtype=np.float64)


def point_of(metric: MetricEntry, each: np.ndarray) -> float:
    """The reported value from `per_run_values`: the mean over runs for a per-run metric."""
    return float(np.mean(each)) if metric.per_run else float(each)


def point_value(metric: MetricEntry, data: Sequence[np.ndarray]) -> float:
    """The reported value: the metric on all units (every weight 1), the mean over runs for a per-run metric."""
    return point_of(metric, per_run_values(metric, data))


def inputs(metric: MetricEntry, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(arrays[key], dtype=np.float64) for key in metric.inputs]


def value(name: str, arrays: dict[str, np.ndarray]) -> float:
    """The metric on all units (every weight 1)."""
    metric = METRICS[name]
    return point_value(metric, inputs(metric, arrays))


@dataclass(frozen=True)
class Resampled:
    """A metric's value on all units and its bootstrap distribution: what every interval method reads."""

    name: str
    point: float
    each: np.ndarray  # the value of each run (one value for a plain metric)
    values: np.ndarray  # (resamples,) the statistic of each resample (over the runs it drew)
    n: int  # units the value is computed on
    n_units: int  # units resampled
    statistic: Callable[[np.ndarray], np.ndarray]  # unit weights (batch, units) -> (batch,), every run once

    def interval(self, method: str, confidence: float) -> tuple[float, float]:
        try:
            return intervals.interval(method, self.point, self.values, confidence, statistic=self.statistic,
                                      n_units=self.n_units, each=self.each)
        except MetricError as exc:
            raise exc.prefixed(self.name) from None

    def score(self, method: str, confidence: float, bounds: tuple[float, float] | None = None) -> Score:
        low, high = self.interval(method, confidence)
        low, high, clipped = clip(low, high, self.point, bounds)
        runs = {"runs": int(self.each.size), "run_sd": float(np.std(self.each))} if self.each.size >= 2 else {}
        return Score(value=self.point, ci_low=low, ci_high=high, n=self.n, interval=method,
                     clipped=True if clipped else None, **runs)


def clip(low: float, high: float, point: float, bounds: tuple[float, float] | None) -> tuple[float, float, bool]:
    """The interval moved back inside the values the metric can take (a Spearman above 1, an accuracy above 1, a
    V-measure below 0: basic and centred intervals shift the resamples and can leave the range). Clipping never
    loses coverage: the true value lies in the range, so an interval that held it still does. The value itself
    is never left outside (a spec's range narrower than the value's is not the value's fault)."""
    if bounds is None:
        return low, high, False
    lowest, highest = min(bounds[0], point), max(bounds[1], point)
    clipped_low, clipped_high = max(low, lowest), min(high, highest)
    return clipped_low, clipped_high, (clipped_low, clipped_high) != (low, high)


RECENT_LIMIT = 64  # resampled metrics a process keeps: a suite's members, a board's runs
RECENT_BYTES = 64 << 20  # and the inputs they hold at most: never a memory that grows with the corpus


def _recent_key(metric: MetricEntry, data: Sequence[np.ndarray], resamples: int, seed: int) -> tuple[int, str]:
    """What decides a resampled metric: the metric entry, its inputs' bytes and shapes, resamples and seed."""
    digest = arrays_digest(hashlib.sha256(f"{resamples} {seed}".encode()), data)
    return id(metric), digest.hexdigest()  # the entry's id: a Resampled holds its metric, so the id stays its


# The last RECENT_LIMIT resampled metrics of this process: a suite run that verifies the members it has just
# written, or the subset means of a run, draw each bootstrap once. Their draws are read-only (callers share them)
# and their inputs the computation's own copies (a caller's later edit is not theirs).
_RECENT: Recent[Resampled] = Recent()


def clear_recent() -> None:
    """Forget the resampled metrics and the draws kept in this process: a timing or a count of draws starts from
    none."""
    _RECENT.clear()
    forget_draws()


def resample(name: str, arrays: dict[str, np.ndarray], *, resamples: int, seed: int) -> Resampled:
    """The metric on all units and on each seeded bootstrap resample; NaN, constant inputs or degenerate
    resamples are errors. The same metric on the same inputs again in this process is the one drawn before
    (inputs over RECENT_BYTES are neither kept nor looked up)."""
    metric = METRICS[name]
    data = inputs(metric, arrays)
    size = sum(values.nbytes for values in data)
    if size > RECENT_BYTES:
        return _resampled(name, metric, data, resamples=resamples, seed=seed)
    key = _recent_key(metric, data, resamples, seed)
    drawn = _RECENT.get(key)
    if drawn is None or drawn.name != name:
        data = [np.array(values) for values in data]  # its own copies: a caller's later edit is not its
        drawn = _resampled(name, metric, data, resamples=resamples, seed=seed)
        for array in (drawn.each, drawn.values):
            array.flags.writeable = False
        _RECENT.put(key, drawn, size, count=RECENT_LIMIT, total=RECENT_BYTES)
    return drawn


def _resampled(name: str, metric: MetricEntry, data: list[np.ndarray], *, resamples: int, seed: int) -> Resampled:
    n_units = len(data[0])
    for key, values in zip(metric.inputs, data, strict=True):
        if not np.all(np.isfinite(values)):
            raise MetricError(f"{name}: {key} has {int(np.sum(~np.isfinite(values)))} non-finite value(s)")
        if key in metric.must_vary and np.ptp(values) == 0:
            raise MetricError(f"{name}: {key} is constant over all {n_units} units ({float(values.flat[0])!r}); "
                              "the correlation is undefined")
    if n_units < 3:
        raise MetricError(f"{name}: {n_units} unit(s); at least 3 are needed for an interval")
    runs = n_runs(metric, data)
    n = metric.count(*data) if metric.count else n_units
    with np.errstate(all="ignore"):
        each = per_run_values(metric, data)
    if not np.all(np.isfinite(each)):
        raise MetricError(f"{name}: undefined on these {n} unit(s) (constant input or nothing to count)")

    def statistic(weights: np.ndarray) -> np.ndarray:
        return metric.statistic(*data, weights=weights)

    values = distribution(statistic, n_units, resamples, seed, n_runs=runs)
    degenerate = int(np.sum(~np.isfinite(values)))
    if degenerate:
        raise MetricError(f"{name}: {degenerate} of {resamples} bootstrap resamples are degenerate "
                          f"(constant input); the interval is undefined on {n} units")

    def every_run_once(weights: np.ndarray) -> np.ndarray:
        return mean_over_runs(statistic(weights), None) if runs else statistic(weights)

    return Resampled(name=name, point=point_of(metric, each), each=each, values=values, n=n, n_units=n_units,
                     statistic=every_run_once)


def method_of(name: str, interval: str) -> str:
    """The interval method a metric gets: the one named, or for `auto` the metric's declared default."""
    return METRICS[name].interval if interval == "auto" else interval


def estimate(name: str, arrays: dict[str, np.ndarray], *, resamples: int, confidence: float,
             seed: int, interval: str = "auto", bounds: tuple[float, float] | None = None) -> Score:
    """The metric on all units plus its bootstrap interval by the named method (`auto`: the metric's own),
    clipped to `bounds` (the spec's range); the same seed gives the same interval."""
    return resample(name, arrays, resamples=resamples, seed=seed).score(method_of(name, interval), confidence,
                                                                       bounds)
