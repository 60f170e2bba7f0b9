"""Coverage of the clustering intervals by documents per class x cluster cell (issue 45 item 10).

A bootstrap resample draws from the sample's documents, so it fills no class x cluster cell the sample left
empty: with few documents per cell the resampled spread falls short of the true one and the centred interval
covers less than 95 %. This measures it: `bench/coverage.py`'s fixed-assignment population (K classes, purity
0.55), samples of each size, and the coverage of the value the statistic has on average at that size (its
`expected` truth: the mean over fresh samples) by

  percentile, centred   metrics.intervals, as specrun reports them
  jackknife             centred, widened to the jackknife's standard error where that is larger
                        (`intervals.widened` with `intervals.jackknife_sd`; one evaluation per filled cell)
  halves                centred, widened to the standard error half-samples without replacement give
                        (sd of 200 halves; a half of n has about the variance of a full sample over n)

with the mean width of each and the ratio of the bootstrap's sd to the true sd (over fresh samples).

    .venv/bin/python bench/coverage_clustering_cells.py --reps 500 --json cells.json
    .venv/bin/python bench/coverage_clustering_cells.py --reps 20 --cases 10:300   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np


def _load_coverage() -> Any:
    """bench/coverage.py (its population and sampling), by path: the name `coverage` is also coverage.py's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_coverage", Path(__file__).resolve().parent / "coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_coverage"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


coverage = _load_coverage()

CONFIDENCE = 0.95
METRICS = ("v_measure", "nmi", "ari")
METHODS = ("percentile", "centred", "jackknife", "halves")
CASES = ("10:300", "10:500", "10:1000", "10:3000", "7:100", "20:1000", "20:3000")  # classes:documents
PURITY = 0.55
HALVES = 200
_POPULATIONS: dict[int, dict[str, np.ndarray]] = {}


def population(k: int) -> dict[str, np.ndarray]:
    if k not in _POPULATIONS:
        _POPULATIONS[k] = coverage._clusters_build(k, PURITY)(np.random.default_rng([20261202, k]))
    return _POPULATIONS[k]


def halves_sd(statistic: Any, n: int, rng: np.random.Generator) -> float:
    """sd of the statistic over half-samples without replacement (no duplicated documents)."""
    weights = np.zeros((HALVES, n))
    for row in weights:
        row[rng.choice(n, n // 2, replace=False)] = 1.0
    return float(np.std(np.asarray(statistic(weights)), ddof=1))


def one_sample(k: int, n: int, rep: int, resamples: int) -> list[dict[str, Any]]:
    from specrun.metrics import intervals
    from specrun.metrics.estimate import resample

    arrays = coverage.rows_of(population(k), np.random.default_rng([20261206, k, n, rep]), n)
    cells = np.unique(arrays["gold_class"] * 1000 + arrays["cluster_id"], return_inverse=True)[1].ravel()
    rows = []
    for metric in METRICS:
        r = resample(metric, arrays, resamples=resamples, seed=rep)
        jack = intervals.jackknife_sd(r.statistic, n, cells)
        half = halves_sd(r.statistic, n, np.random.default_rng([rep, 7]))
        rows.append({"metric": metric, "point": r.point, "boot_sd": float(np.std(r.values, ddof=1)),
                     "jack_sd": jack, "halves_sd": half, "cells": int(cells.max()) + 1,
                     "percentile": r.interval("percentile", CONFIDENCE), "centred": r.interval("centred", CONFIDENCE),
                     "jackknife": intervals.widened(r.point, r.values, CONFIDENCE, jack),
                     "halves": intervals.widened(r.point, r.values, CONFIDENCE, half)})
    return rows


def expected(k: int, n: int, draws: int) -> dict[str, list[float]]:
    from specrun.metrics import value

    out: dict[str, list[float]] = {metric: [] for metric in METRICS}
    for draw in range(draws):
        arrays = coverage.rows_of(population(k), np.random.default_rng([20261207, k, n, draw]), n)
        for metric in METRICS:
            out[metric].append(value(metric, arrays))
    return out


def _job(job: tuple[str, int, int, int, int]) -> tuple[str, int, Any]:
    kind, k, n, start, stop = job
    if kind == "expected":
        return kind, k * 100_000 + n, expected(k, n, stop - start)
    return kind, k * 100_000 + n, [row for rep in range(start, stop) for row in one_sample(k, n, rep, 1000)]


def summary(k: int, n: int, rows: list[dict[str, Any]], truth: dict[str, list[float]]) -> list[dict[str, Any]]:
    out = []
    for metric in METRICS:
        mine = [row for row in rows if row["metric"] == metric]
        points = np.asarray(truth[metric])
        target, true_sd = float(points.mean()), float(points.std(ddof=1))
        entry: dict[str, Any] = {"classes": k, "documents": n, "per_cell": n / k**2, "metric": metric,
                                 "reps": len(mine), "filled_cells": float(np.mean([row["cells"] for row in mine])),
                                 "expected": target, "true_sd": true_sd,
                                 "boot_sd_ratio": float(np.mean([row["boot_sd"] for row in mine])) / true_sd,
                                 "jack_sd_ratio": float(np.mean([row["jack_sd"] for row in mine])) / true_sd,
                                 "halves_sd_ratio": float(np.mean([row["halves_sd"] for row in mine])) / true_sd}
        centred_width = float(np.mean([row["centred"][1] - row["centred"][0] for row in mine]))
        for method in METHODS:
            low, high = np.array([row[method] for row in mine]).T
            width = float(np.mean(high - low))
            entry[method] = {"coverage": float(np.mean((low <= target) & (target <= high))), "width": width,
                             "width_ratio": width / centred_width}
        out.append(entry)
    return out


def markdown(table: list[dict[str, Any]]) -> str:
    lines = ["| classes | documents | per cell | filled cells | metric | boot sd / true sd | percentile | centred "
             "| jackknife (width / centred) | halves (width / centred) |", "|" + " ---: |" * 10]
    for e in table:
        lines.append(f"| {e['classes']} | {e['documents']:,} | {e['per_cell']:.1f} | {e['filled_cells']:.0f} | "
                     f"{e['metric']} | {e['boot_sd_ratio']:.2f} | {e['percentile']['coverage']:.3f} | "
                     f"{e['centred']['coverage']:.3f} | {e['jackknife']['coverage']:.3f} "
                     f"({e['jackknife']['width_ratio']:.2f}) | {e['halves']['coverage']:.3f} "
                     f"({e['halves']['width_ratio']:.2f}) |")
    return "\n".join(lines)


def main() -> None:
    import multiprocessing

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--draws", type=int, default=2000, help="fresh samples estimating the expected value")
    parser.add_argument("--cases", nargs="+", default=list(CASES), help="classes:documents")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    cases = [tuple(int(x) for x in case.split(":")) for case in args.cases]
    work = [("expected", k, n, a, min(args.draws, a + 250)) for k, n in cases for a in range(0, args.draws, 250)]
    work += [("reps", k, n, a, min(args.reps, a + 25)) for k, n in cases for a in range(0, args.reps, 25)]
    started = time.time()
    truth: dict[int, dict[str, list[float]]] = {}
    reps: dict[int, list[dict[str, Any]]] = {}
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for kind, key, out in pool.imap_unordered(_job, work):
            if kind == "expected":
                for metric, values in out.items():
                    truth.setdefault(key, {}).setdefault(metric, []).extend(values)
            else:
                reps.setdefault(key, []).extend(out)
    table = [e for k, n in cases for e in summary(k, n, reps[k * 100_000 + n], truth[k * 100_000 + n])]
    print(markdown(table))
    print(f"{time.time() - started:.0f} s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"reps": args.reps, "draws": args.draws, "resamples": 1000,
                                               "purity": PURITY, "table": table}, indent=1))


if __name__ == "__main__":
    main()
