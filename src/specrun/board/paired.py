"""The paired difference of two runs' metric on the same resampled units (and fits or random runs): the board's
core comparison, read by `compare` (two runs), a suite's compare (through its members) and a prompt set's spread
(best minus worst variant)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specrun.core.errors import CompareError, SpecrunError
from specrun.metrics import METRICS, intervals
from specrun.metrics.estimate import n_runs, per_run_values, point_of
from specrun.metrics.resampling import distribution, mean_over_runs


@dataclass(frozen=True)
class Difference:
    split: str
    metric: str
    a: float
    b: float
    difference: float  # a - b
    ci_low: float
    ci_high: float
    a_better: float  # share of resamples where A is better, in the metric's direction
    n: int
    interval: str = "percentile"  # the interval method (the metric's, as both runs' scores name it)


def paired_difference(split: str, metric_id: str, name: str, direction: str, arrays_a: dict[str, np.ndarray],
                      arrays_b: dict[str, np.ndarray], resamples: int, confidence: float, seed: int, n: int,
                      interval: str = "percentile") -> Difference:
    """A - B on the same resampled units (and runs), its interval by the metric's method and the share of the
    method's plausible differences in which A is better."""
    metric = METRICS[name]
    data_a = [arrays_a[key] for key in metric.inputs]
    data_b = [arrays_b[key] for key in metric.inputs]
    n_units = len(data_a[0])

    def paired(weights: np.ndarray) -> np.ndarray:  # one resample of units, scored for both models
        return metric.statistic(*data_a, weights=weights) - metric.statistic(*data_b, weights=weights)

    runs = n_runs(metric, data_a)
    if runs != n_runs(metric, data_b):
        raise CompareError(f"{metric_id} on {split}: the runs hold {runs} and {n_runs(metric, data_b)} fits or "
                           "random runs; refusing to compare")
    each_a, each_b = per_run_values(metric, data_a), per_run_values(metric, data_b)
    value_a, value_b = point_of(metric, each_a), point_of(metric, each_b)
    differences = distribution(paired, n_units, resamples, seed, n_runs=runs)  # the same units and runs for both
    if not np.all(np.isfinite(differences)):
        raise CompareError(f"{metric_id} on {split}: some resamples are degenerate; the interval is undefined")
    difference = value_a - value_b
    each = each_a - each_b  # paired run by run: what centred_t_runs reads
    try:
        low, high = intervals.interval(interval, difference, differences, confidence, n_units=n_units, each=each,
                                       statistic=lambda w: mean_over_runs(paired(w), None) if runs else paired(w))
        plausible = intervals.plausible(interval, difference, differences, each=each, confidence=confidence)
    except SpecrunError as exc:
        raise exc.prefixed(f"{metric_id} on {split}") from None
    wins = intervals.ahead(plausible if direction == "higher" else -plausible, max(abs(value_a), abs(value_b)))
    return Difference(split=split, metric=metric_id, a=value_a, b=value_b, difference=difference,
                      ci_low=low, ci_high=high, a_better=float(np.mean(wins)), n=n, interval=interval)


def method_note(differences: list[Difference]) -> str:
    """Which interval method read which metrics' resamples, in one clause."""
    by_method: dict[str, list[str]] = {}
    for d in differences:
        by_method.setdefault(d.interval, []).append(d.metric)
    if len(by_method) == 1:
        return f"{next(iter(by_method))} intervals"
    return "intervals: " + "; ".join(f"{method} ({', '.join(dict.fromkeys(names))})"
                                     for method, names in by_method.items())
