"""Coverage of the clustering kind's interval with `sets` (MTEB's legacy per-set V-measure, averaged over sets) by
number of sets, against intervals that treat the sets as the units.

`bench/coverage.py`'s families clustering_sets (each set its own 8-12 labels, means and spread: sets unlike each
other) and clustering_sets_alike (every set drawn from one 10-label mixture), 200-500 documents a set, one
k-means run a set, through `ClusteringProtocol.run`. The truth is the expected per-set V-measure (the expectation of
a mean over sets is that of one set), the mean over `--truth-sets` fresh sets. Per sample, 95 % intervals:

  centred     what specrun reports (two-level bootstrap: documents and, paired, the sets; centred)
  t_sets      mean of the sets' values +- t(S-1) x their sd / sqrt(S): the sets as the independent units
  widened_t   centred stretched about the value (`intervals.widened`) to the t_sets half-width where that is wider
  centred_t_runs  what specrun reports for an imported legacy task (`interval: centred_t_runs`): widened_t with
              each side at least the t_sets half-width

    .venv/bin/python bench/coverage_sets.py --reps 500 --sets 5 10 30 --json sets.json
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
    """bench/coverage.py (its families), by path: the name `coverage` is also coverage.py's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_coverage", Path(__file__).resolve().parent / "coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_coverage"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


coverage = _load_coverage()
CONFIDENCE = 0.95
METHODS = ("centred", "t_sets", "widened_t", "centred_t_runs")


def intervals_of(arrays: dict[str, np.ndarray], resamples: int, seed: int) -> dict[str, Any]:
    """The point, the sets' values and each method's interval on one sample."""
    from scipy import stats

    from specrun.metrics import intervals
    from specrun.metrics.estimate import resample

    got = resample("v_measure", arrays, resamples=resamples, seed=seed)
    sets = len(got.each)
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, sets - 1) * np.std(got.each, ddof=1) / np.sqrt(sets))
    z = float(stats.norm.ppf((1 + CONFIDENCE) / 2))
    return {"point": got.point, "each": got.each.tolist(),
            "centred": got.interval("centred", CONFIDENCE), "t_sets": (got.point - half, got.point + half),
            "widened_t": intervals.widened(got.point, got.values, CONFIDENCE, half / z),
            "centred_t_runs": got.interval("centred_t_runs", CONFIDENCE)}


def _job(job: tuple[str, int, int, int, int, int]) -> list[dict[str, Any]]:
    family_name, sets, start, stop, resamples, seed = job
    family = coverage.BY_NAME[family_name]
    state = family.ready()
    return [intervals_of(family.sample(state, np.random.default_rng([seed, sets, rep]), sets), resamples, seed + rep)
            for rep in range(start, stop)]


def _truth_job(job: tuple[str, int, int, int]) -> list[float]:
    """Per-set V-measures of fresh sets (one set a sample): their mean is the truth."""
    from specrun.metrics import value

    family_name, start, stop, seed = job
    family = coverage.BY_NAME[family_name]
    state = family.ready()
    return [value("v_measure", family.sample(state, np.random.default_rng([seed, 999, draw]), 1))
            for draw in range(start, stop)]


def measure(family: str, sizes: list[int], reps: int, resamples: int, truth_sets: int, jobs: int,
            seed: int) -> dict[str, Any]:
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        values = [v for part in pool.map(_truth_job, [(family, a, b, seed) for a, b in coverage._chunks(truth_sets,
                                                                                                        100)])
                  for v in part]
        truth = float(np.mean(values))
        out: dict[str, Any] = {"family": family, "truth": truth, "truth_se": float(np.std(values) / np.sqrt(
            len(values))), "set_sd": float(np.std(values)), "sizes": []}
        for sets in sizes:
            rows = [r for part in pool.map(_job, [(family, sets, a, b, resamples, seed) for a, b in
                                                   coverage._chunks(reps, 10)]) for r in part]
            entry: dict[str, Any] = {"sets": sets, "reps": len(rows),
                                     "true_sd": float(np.std([r["point"] for r in rows]))}
            for method in METHODS:
                low, high = (np.array([r[method][i] for r in rows]) for i in (0, 1))
                k = int(np.sum((low <= truth) & (truth <= high)))
                entry[method] = {"coverage": k / len(rows), "coverage_ci": coverage._binomial(k, len(rows)),
                                 "width": float(np.mean(high - low)), "below": float(np.mean(truth < low)),
                                 "above": float(np.mean(truth > high))}
            out["sizes"].append(entry)
            print(json.dumps(entry), file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="*", default=["clustering_sets", "clustering_sets_alike"])
    parser.add_argument("--sets", nargs="*", type=int, default=[5, 10, 30])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--truth-sets", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--json")
    args = parser.parse_args()
    started = time.time()
    report = {"settings": vars(args), "results": [measure(f, args.sets, args.reps, args.resamples, args.truth_sets,
                                                          args.jobs, args.seed) for f in args.families]}
    report["seconds"] = round(time.time() - started, 1)
    for result in report["results"]:
        print(f"{result['family']}: truth {result['truth']:.4f} (se {result['truth_se']:.4f}, sd of a set "
              f"{result['set_sd']:.4f})")
        for entry in result["sizes"]:
            cells = "; ".join(f"{m} {entry[m]['coverage']:.3f} [{entry[m]['coverage_ci'][0]:.3f}, "
                              f"{entry[m]['coverage_ci'][1]:.3f}] width {entry[m]['width']:.4f}" for m in METHODS)
            print(f"  {entry['sets']} sets ({entry['reps']} samples, true sd {entry['true_sd']:.4f}): {cells}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
