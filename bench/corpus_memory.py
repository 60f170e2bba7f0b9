"""Peak memory of a whole `specrun` corpus-retrieval run, by corpus size: `bench/scale.py`'s synthetic BEIR set,
run by the real runner in a child process with the hashing adapter (no model: what is measured is the data,
the store, the search and the runner's own bookkeeping), cached (cold, then warm) and with `--no-cache`.

    python bench/corpus_memory.py --docs 100000 1000000 --queries 1000

Peak RSS is the child's own (`os.wait4`); the store on disk is the cache folder after the cold run. The hashing
adapter's vectors have 64 dimensions, so the corpus matrix a run would hold is N x 64 x 4 bytes; the figures say
what grows with N besides the vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from real_corpus import write_spec  # noqa: E402
from scale import generate  # noqa: E402


def child(command: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of a child process."""
    clock = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - clock
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"child failed: {' '.join(command)}\n{process.stderr.read() if process.stderr else ''}")
    return seconds, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--top-k", type=int, default=100)
    args = parser.parse_args(argv)
    rows = []
    for n_docs in args.docs:
        with tempfile.TemporaryDirectory() as temp:
            work = Path(temp)
            data_dir = work / "data"
            generate(data_dir / "corpusset" / "data", n_docs, args.queries, 12)
            spec = write_spec(work, data_dir, args.top_k)
            base = [sys.executable, "-m", "specrun", str(spec), "--data-dir", str(data_dir), "--adapter", "hashing",
                    "-q"]
            row: dict[str, float | int] = {"docs": n_docs, "queries": args.queries}
            for name, extra in (("cold", ["--cache-dir", str(work / "cache")]),
                                ("warm", ["--cache-dir", str(work / "cache")]), ("no_cache", ["--no-cache"])):
                seconds, peak = child([*base, *extra, "--output", str(work / name)])
                row[f"{name}_s"], row[f"{name}_peak_mib"] = round(seconds, 1), round(peak)
                if name == "cold":
                    row["store_mib"] = round(sum(p.stat().st_size for p in (work / "cache").rglob("*.shard")) / 2**20)
                print(f"{n_docs:>9} docs {name:8s} {seconds:7.1f} s  peak {peak:7.0f} MiB", file=sys.stderr,
                      flush=True)
            row["matrix_mib"] = round(n_docs * 64 * 4 / 2**20)
            rows.append(row)
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
