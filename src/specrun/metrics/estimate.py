"""A metric's value on all units and its seeded percentile bootstrap interval, resampling the protocol's unit
(pairs, queries, sentence pairs) through the one resampling driver; NaN, a constant prediction or degenerate
resamples are errors, never numbers."""

from __future__ import annotations

import numpy as np

from specrun.core.errors import MetricError
from specrun.core.registry import METRICS
from specrun.core.types import Score
from specrun.metrics.resampling import distribution, percentile_interval


def value(name: str, arrays: dict[str, np.ndarray]) -> float:
    """The metric on all units (every weight 1)."""
    metric = METRICS[name]
    data = [np.asarray(arrays[key], dtype=np.float64) for key in metric.inputs]
    return float(metric.statistic(*data, weights=np.ones(len(data[0]))))


def estimate(name: str, arrays: dict[str, np.ndarray], *, resamples: int, confidence: float,
             seed: int) -> Score:
    """The metric on all units plus its percentile bootstrap interval; the same seed gives the same interval."""
    metric = METRICS[name]
    data = [np.asarray(arrays[key], dtype=np.float64) for key in metric.inputs]
    n_units = len(data[0])
    for key, values in zip(metric.inputs, data, strict=True):
        if not np.all(np.isfinite(values)):
            raise MetricError(f"{name}: {key} has {int(np.sum(~np.isfinite(values)))} non-finite value(s)")
        if key in metric.must_vary and np.ptp(values) == 0:
            raise MetricError(f"{name}: {key} is constant over all {n_units} units ({values[0]!r}); "
                              "the correlation is undefined")
    if n_units < 3:
        raise MetricError(f"{name}: {n_units} unit(s); at least 3 are needed for an interval")
    n = metric.count(*data) if metric.count else n_units
    point = float(metric.statistic(*data, weights=np.ones(n_units)))
    if not np.isfinite(point):
        raise MetricError(f"{name}: undefined on these {n} unit(s) (constant input or nothing to count)")

    values = distribution(lambda weights: metric.statistic(*data, weights=weights), n_units, resamples, seed)
    degenerate = int(np.sum(~np.isfinite(values)))
    if degenerate:
        raise MetricError(f"{name}: {degenerate} of {resamples} bootstrap resamples are degenerate "
                          f"(constant input); the interval is undefined on {n} units")
    low, high = percentile_interval(values, confidence)
    return Score(value=point, ci_low=low, ci_high=high, n=n)
