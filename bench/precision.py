"""Precision as a measured choice: for each spec and `--dtype`, one specrun process (`--no-cache`, the given
`--device`, `-q`, the bundled model unless `--model`), its encoding throughput and its scores, with the drift of
each score and of the per-unit predictions against float32 on the same device.

    python bench/precision.py --device cuda                                   # a GPU: float32, float16, bfloat16
    python bench/precision.py --device cpu --dtypes float32 bfloat16 --specs specs/biosses.yaml

Throughput is `texts.encoded / provenance.timings_s.encode` from results.json (model loading excluded); `--rounds`
alternates the dtypes that many times and reports the median. Drift: the largest |score - float32 score| over the
spec's metrics (and the largest |interval bound difference|), and the largest |prediction - float32 prediction|
over every unit's `prediction` in predictions.jsonl (the cosines of an STS spec). Prints a Markdown table, then JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SPECRUN_DATA_DIR", ROOT.parent / "shared" / "data"))


def run_specrun(spec: Path, device: str, dtype: str, model: str | None, out: Path) -> dict:
    command = [sys.executable, "-m", "specrun", str(spec), "--data-dir", str(DATA), "--no-cache", "-q",
               "--device", device, "--dtype", dtype, "--output", str(out)]
    if model:
        command += ["--model", model]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(command)}\n{proc.stderr[-4000:]}")
    folder = Path(proc.stdout.strip().splitlines()[-1]).parent
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    predictions = {}
    for line in (folder / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "prediction" in row:
            predictions[(row["split"], row["protocol"], row["id"])] = row["prediction"]
    return {"rate": results["texts"]["encoded"] / results["provenance"]["timings_s"]["encode"],
            "encoded": results["texts"]["encoded"], "scores": results["scores"], "predictions": predictions}


def drift(run: dict, base: dict) -> dict[str, float]:
    values, bounds = [], []
    for split, scores in base["scores"].items():
        for name, score in scores.items():
            other = run["scores"][split][name]
            values.append(abs(other["value"] - score["value"]))
            bounds.append(max(abs(other["ci_low"] - score["ci_low"]), abs(other["ci_high"] - score["ci_high"])))
    shared = base["predictions"].keys() & run["predictions"].keys()
    predictions = max((abs(run["predictions"][k] - base["predictions"][k]) for k in shared), default=float("nan"))
    return {"score": max(values), "interval": max(bounds), "prediction": predictions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16", "bfloat16"])
    parser.add_argument("--specs", nargs="+", type=Path,
                        default=[ROOT / "specs" / "biosses.yaml", ROOT / "specs" / "jsts.yaml"])
    parser.add_argument("--model", help="default: specrun's default model")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    dtypes = ["float32", *[d for d in args.dtypes if d != "float32"]]  # float32 is the reference

    def say(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    report: list[dict] = []
    with tempfile.TemporaryDirectory() as temp:
        for spec in args.specs:
            runs: dict[str, list[dict]] = {dtype: [] for dtype in dtypes}
            for round_ in range(args.rounds):
                for dtype in dtypes:
                    runs[dtype].append(run_specrun(spec, args.device, dtype, args.model, Path(temp) / "out"))
                    say(f"{spec.name} {dtype} round {round_ + 1}: {runs[dtype][-1]['rate']:.1f} texts/s")
            base = runs["float32"][0]
            base_rate = statistics.median(r["rate"] for r in runs["float32"])
            for dtype in dtypes:
                rate = statistics.median(r["rate"] for r in runs[dtype])
                report.append({"spec": spec.name, "dtype": dtype, "device": args.device,
                               "texts": runs[dtype][0]["encoded"], "texts_per_s": round(rate, 1),
                               "speed_vs_float32": round(rate / base_rate, 3),
                               "max_drift": {k: float(f"{v:.3g}") for k, v in drift(runs[dtype][0], base).items()},
                               "scores": {f"{split}/{name}": round(s["value"], 6)
                                          for split, scores in runs[dtype][0]["scores"].items()
                                          for name, s in scores.items()}})
    print("| spec | device | dtype | texts | texts/s | vs float32 | max score drift | max interval drift | "
          "max prediction drift |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in report:
        d = row["max_drift"]
        print(f"| {row['spec']} | {row['device']} | {row['dtype']} | {row['texts']} | {row['texts_per_s']} | "
              f"{row['speed_vs_float32']} | {d['score']:.2g} | {d['interval']:.2g} | {d['prediction']:.2g} |")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
