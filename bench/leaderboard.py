"""Leaderboard scale: 50 models x 10 specs x 10,000 units x 1,000 resamples, synthetic per-unit arrays fed to the
core functions `specrun leaderboard` uses (rank_board per spec, then rank_overall), printing wall time and peak
RSS. Not a test: `python bench/leaderboard.py [--models 50 --specs 10 --units 10000 --resamples 1000]`.

The per-spec cost is models x resamples evaluations of the metric's count-weighted statistic (one count matrix
per batch of 250 resamples, shared by all models): a mean-type metric (MAP, MRR, P@K: retrieval) is the default;
`--metric spearman` (STS) costs one sort-and-rank per model per batch, about ten times more.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from specrun.board import rank_board, rank_overall
from specrun.metrics import METRICS


def synthetic(metric: str, models: int, units: int, rng: np.random.Generator) -> list[list[np.ndarray]]:
    """Per-unit arrays of `models` models whose quality rises slowly with their index (close, overlapping)."""
    if METRICS[metric].inputs == ("prediction", "gold"):
        gold = rng.normal(size=units)
        return [[gold + rng.normal(scale=2.0 - 0.01 * m, size=units), gold] for m in range(models)]
    base = rng.beta(2, 2, units)
    return [[np.clip(base + rng.normal(scale=0.3, size=units) + 0.002 * m, 0, 1)] for m in range(models)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--specs", type=int, default=10)
    parser.add_argument("--units", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--metric", default="map", choices=sorted(METRICS), help="a one- or two-input metric")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    statistic = METRICS[args.metric].statistic
    start = time.perf_counter()
    observed, scores, per_spec = [], [], []
    for spec in range(args.specs):
        models = synthetic(args.metric, args.models, args.units, rng)
        began = time.perf_counter()
        ranking = rank_board(statistic, models, direction="higher", resamples=args.resamples, confidence=0.95,
                             seed=1000 + spec)
        per_spec.append(time.perf_counter() - began)
        observed.append(ranking.observed)
        scores.append(ranking.scores)
        del models
    began = time.perf_counter()
    overall = rank_overall(observed, scores, ["higher"] * args.specs, confidence=0.95)
    across = time.perf_counter() - began
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    widths = overall.borda_high - overall.borda_low
    print(f"{args.models} models x {args.specs} specs x {args.units} units x {args.resamples} resamples, "
          f"metric {args.metric}")
    print(f"per spec (joint bootstrap, ranks, pairwise): median {np.median(per_spec):.2f} s, "
          f"max {max(per_spec):.2f} s")
    print(f"across specs (Borda, mean, two-level): {across:.2f} s")
    print(f"wall time {wall:.1f} s (synthetic data included), peak RSS {peak:.0f} MiB")
    print(f"Borda rank interval width: median {np.median(widths):.0f}, max {widths.max()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
