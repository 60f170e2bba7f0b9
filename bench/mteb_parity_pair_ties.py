"""Pair classification's threshold search on tied scores: specrun's measures beside MTEB 2.x's own code.

MTEB is never a dependency: run this with the side environment's Python,
    /tmp/mteb/bin/python bench/mteb_parity_pair_ties.py [--cases 400]
It draws pair sets whose scores tie on purpose (rounded to one decimal; duplicated pairs with flipped labels) and
bootstrap weights over them. specrun's side (its own environment, a subprocess) scores each set under each
weighting with `best_accuracy`, `best_f1`, `average_precision` and, unweighted, `best_thresholds`; MTEB's side runs
AbsTaskPairClassification's `_compute_metrics_values` on the rows a weighting stands for (a unit drawn k times is
k rows). Prints how many cases were compared and the largest difference per measure; exit 1 if one exceeds 1e-12.
Sets whose scores are all tied are counted apart: MTEB reports 0 there, specrun refuses them (NaN, an error).
Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPECRUN_PYTHON = ROOT / ".venv" / "bin" / "python"
TOLERANCE = 1e-12


def draw_cases(count: int, seed: int) -> list[dict[str, list]]:
    """Pair sets with ties: scores rounded to one decimal, a third of them with duplicated pairs whose label is
    flipped (the same score, both labels), each with three bootstrap weightings (a weight of 0 to 3 per unit)."""
    rng = np.random.default_rng(seed)
    cases = []
    for number in range(count):
        n = int(rng.integers(3, 60))
        scores = np.round(rng.random(n), 1)
        labels = rng.integers(0, 2, n)
        labels[:2] = [1, 0]
        if number % 3 == 0:  # duplicated pairs, labels flipped
            scores = np.r_[scores, scores[: n // 2]]
            labels = np.r_[labels, 1 - labels[: n // 2]]
        if number % 50 == 7:  # every score tied
            scores = np.full(len(scores), 0.5)
        weights = rng.integers(0, 4, (3, len(scores)))
        weights[:, :2] = 1
        cases.append({"scores": scores.tolist(), "labels": labels.tolist(), "weights": weights.tolist()})
    return cases


def specrun_side(cases_file: Path) -> None:
    """Run in specrun's environment: each case's measures per weighting, and its thresholds, as JSON on stdout."""
    from specrun.metrics.pair_classification import average_precision
    from specrun.search.thresholds import best_accuracy, best_f1, best_thresholds

    out = []
    for case in json.loads(cases_file.read_text(encoding="utf-8")):
        scores, labels = np.asarray(case["scores"]), np.asarray(case["labels"])
        weights = np.asarray(case["weights"], dtype=np.float64)
        out.append({"accuracy": best_accuracy(scores, labels, weights).tolist(),
                    "f1": best_f1(scores, labels, weights).tolist(),
                    "ap": average_precision(scores, labels, weights).tolist(),
                    "thresholds": list(best_thresholds(scores, labels))})
    json.dump(out, sys.stdout)


def mteb_search() -> SimpleNamespace:
    """MTEB's three methods bound to a stand-in: they read nothing of the task but each other."""
    from mteb.abstasks.pair_classification import AbsTaskPairClassification as Task

    search = SimpleNamespace()
    for name in ("_compute_metrics_values", "_find_best_acc_and_threshold", "_find_best_f1_and_threshold"):
        setattr(search, name, getattr(Task, name).__get__(search))
    return search


def mteb_side(cases: list[dict[str, list]], specrun: list[dict[str, list]]) -> int:
    import mteb

    search = mteb_search()
    worst = {"accuracy": 0.0, "f1": 0.0, "ap": 0.0, "thresholds": 0.0}
    compared, all_tied = 0, 0
    for case, ours in zip(cases, specrun, strict=True):
        scores, labels = np.asarray(case["scores"]), np.asarray(case["labels"], dtype=np.int64)
        for b, weights in enumerate(case["weights"]):
            index = np.repeat(np.arange(len(scores)), weights)
            theirs = search._compute_metrics_values(scores[index].tolist(), labels[index], True)
            worst["ap"] = max(worst["ap"], abs(ours["ap"][b] - theirs["ap"]))
            if len(set(scores[index])) == 1:  # specrun: undefined (NaN); MTEB: 0
                all_tied += 1
                if not (np.isnan(ours["accuracy"][b]) and np.isnan(ours["f1"][b])):
                    worst["accuracy"] = np.inf
                continue
            compared += 1
            for measure in ("accuracy", "f1"):
                worst[measure] = max(worst[measure], abs(ours[measure][b] - theirs[measure]))
        if len(set(case["scores"])) > 1:
            thresholds = (search._find_best_acc_and_threshold(scores.tolist(), labels, True)[1],
                          search._find_best_f1_and_threshold(scores.tolist(), labels, True)[3])
            worst["thresholds"] = max(worst["thresholds"], *(abs(a - b) for a, b in
                                                             zip(ours["thresholds"], thresholds, strict=True)))
    print(f"MTEB {mteb.__version__}: {len(cases)} pair sets, {compared} weightings compared "
          f"({all_tied} with every drawn score tied: specrun NaN, MTEB 0)")
    for measure, value in worst.items():
        print(f"  {measure:<10} largest difference {value:.1e}")
    return 0 if max(worst.values()) <= TOLERANCE else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--specrun-side", type=Path, help=argparse.SUPPRESS)  # the subprocess's own entry
    args = parser.parse_args()
    if args.specrun_side:
        specrun_side(args.specrun_side)
        return 0
    cases = draw_cases(args.cases, args.seed)
    with tempfile.TemporaryDirectory() as folder:
        cases_file = Path(folder) / "cases.json"
        cases_file.write_text(json.dumps(cases), encoding="utf-8")
        specrun = json.loads(subprocess.run([str(SPECRUN_PYTHON), __file__, "--specrun-side", str(cases_file)],
                                            check=True, capture_output=True, text=True).stdout)
    return mteb_side(cases, specrun)


if __name__ == "__main__":
    sys.exit(main())
