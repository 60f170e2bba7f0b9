"""Reading MTEB's results repository at its full size: a synthetic tree shaped like the repository (104,926 files:
~1,150 model folders, ~1,450 revision folders with `external/` and `no_revision_available/` among them, a
model_meta.json in most, ~100,000 task files over ~1,100 task names, both file layouts copied from the slice's
shapes: mteb 1.11 and later's `scores`, and the older top-level split with scores nested per similarity; one task
name in six multilingual, 200 subsets and ~105 kB a file, so the tree weighs about the repository's 1.8 GB),
written in a temporary folder on tmpfs and deleted after; then, each phase in a fresh process (its peak RSS its
own): indexing the names, one board's task (`every_model` of one task), a few tasks, and twenty tasks in turn (the
Python memory still held after the first and after the last: it must not grow with the files opened). The same
phases on the slice (../shared/data/mteb-results-slice/results).

    python bench/published_scale.py [--files 104926] [--slice ROOT] [--keep DIR]

Wall time is measured without tracemalloc; Python's peak and held allocations in a second run of the phase with
it. Not a test; the numbers depend on the machine (say which, and whether it was shared).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

DEFAULT_SLICE = Path(__file__).resolve().parents[2] / "shared" / "data" / "mteb-results-slice" / "results"
REAL_TASKS = ("BIOSSES", "SICK-R", "STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark")
MULTI = "SynthMultilingualSTS"
FEW = ("STS12", "STSBenchmark", MULTI, "SynthTask0007")
MANY = (*REAL_TASKS, MULTI, *(f"SynthTask{i:04d}" for i in range(11)))
N_TASK_NAMES = 1100
PHASES = ("index", "one-task", "few-tasks", "many-tasks")


def _new_layout(task: str, rng: random.Random, version: str | None, subsets: int) -> dict:
    """mteb 1.11 and later: `scores.<split>` a list of entries, one per hf_subset (the slice's STS12 shape)."""
    entries = []
    for k in range(subsets):
        value = rng.random()
        entries.append({"hf_subset": "default" if subsets == 1 else f"l{k:03d}-l{k:03d}", "languages": ["eng-Latn"],
                        "cos_sim_pearson": value, "cos_sim_spearman": value, "euclidean_pearson": value,
                        "euclidean_spearman": value, "manhattan_pearson": value, "manhattan_spearman": value,
                        "cosine_pearson": value, "cosine_spearman": value, "main_score": value})
    return {"dataset_revision": "a0d554a64d88156834ff5ae9920b964011b16384", "task_name": task,
            "evaluation_time": rng.random() * 100, "mteb_version": version, "scores": {"test": entries}}


def _old_layout(task: str, rng: random.Random) -> dict:
    """Before mteb 1.11: no `scores`; a top-level split, scores nested per similarity (the slice's older STS12)."""
    pair = {"pearson": rng.random(), "spearman": rng.random()}
    return {"dataset_revision": "a0d554a64d88156834ff5ae9920b964011b16384", "mteb_dataset_name": task,
            "mteb_version": rng.choice(["1.2.0", "1.0.3", "0.9.1"]),
            "test": {"cos_sim": pair, "euclidean": dict(pair), "manhattan": dict(pair), "evaluation_time": 13.7}}


def _meta(model: str, revision: str, rng: random.Random) -> dict:
    """A model_meta.json as mteb's ResultCache writes it (the slice's keys)."""
    return {"name": model, "revision": revision, "release_date": "2024-12-21", "languages": ["en"], "loader": None,
            "n_parameters": rng.randrange(10**6, 10**10), "max_tokens": 512.0, "embed_dim": 768,
            "license": "apache-2.0", "open_weights": True, "framework": ["Sentence Transformers"],
            "reference": None, "similarity_fn_name": "cosine", "use_instructions": False, "training_datasets": None}


def _revisions(rng: random.Random) -> list[str]:
    count = rng.choices((1, 2, 3), weights=(80, 15, 5))[0]
    names = [f"{rng.getrandbits(160):040x}" for _ in range(count)]
    if rng.random() < 0.15:
        names[0] = "no_revision_available"
    if rng.random() < 0.10:
        names[-1] = "external"
    return sorted(set(names))


def _write(path: Path, document: dict) -> None:
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")


def _task_names(rng: random.Random) -> list[str]:
    """One revision's tasks: most of the STS tasks, the multilingual one half the time, ~55 of the rest."""
    names = [t for t in REAL_TASKS if rng.random() < 0.9] + ([MULTI] if rng.random() < 0.5 else [])
    return names + [f"SynthTask{i:04d}" for i in sorted(rng.sample(range(N_TASK_NAMES), rng.randrange(20, 110)))]


def _subsets(task: str) -> int:
    """200 subsets for the multilingual tasks (one name in six, and MULTI), else one."""
    return 200 if task == MULTI or (task.startswith("SynthTask") and int(task[9:]) % 6 == 0) else 1


def _write_revision(folder: Path, model: str, rng: random.Random, budget: int) -> int:
    """One revision folder (its meta, its task files, up to `budget` files); the number of files written."""
    folder.mkdir(parents=True)
    written = 0
    if rng.random() < 0.9 and budget > 0:
        _write(folder / "model_meta.json", _meta(model, folder.name, rng))
        written += 1
    for task in _task_names(rng)[:budget - written]:
        version = rng.choice(["1.12.75", "1.38.2", "2.1.0", None])
        older = _subsets(task) == 1 and rng.random() < 0.08
        document = _old_layout(task, rng) if older else _new_layout(task, rng, version, _subsets(task))
        _write(folder / f"{task}.json", document)
        written += 1
    return written


def generate(root: Path, n_files: int, seed: int = 0) -> dict[str, int]:
    """The synthetic tree below root, `n_files` files in all (task files and model_meta.json)."""
    rng = random.Random(seed)
    written = models = revisions = 0
    while written < n_files:
        model = f"org{models % 97:02d}/model-{models:05d}"
        models += 1
        for revision in _revisions(rng):
            if written < n_files:
                written += _write_revision(root / model.replace("/", "__") / revision, model, rng, n_files - written)
                revisions += 1
    return {"files": written, "models": models, "revisions": revisions}


def peak_rss_mb() -> float:
    """This process's peak RSS: /proc's VmHWM (its own since exec; getrusage's ru_maxrss keeps the parent's peak
    across exec on Linux), else getrusage."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_phase(phase: str, root: Path, trace: bool) -> dict[str, object]:
    """One phase in this process: wall time (or, with `trace`, Python's peak and held allocations) and peak RSS."""
    from specrun.mteb.results import PublishedDir
    from specrun.mteb.score_ref import MtebRef

    rss_before = peak_rss_mb()
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    published = PublishedDir(root)
    index = published.index
    index_s = time.perf_counter() - start
    wanted = {"index": (), "one-task": FEW[:1], "few-tasks": FEW, "many-tasks": MANY}[phase]
    tasks = [t for t in wanted if t in index.tasks]  # on the slice, filled from its own tasks
    tasks += [t for t in sorted(index.tasks) if t not in tasks][:len(wanted) - len(tasks)]
    held: list[float] = []
    n_files = n_rows = 0
    slowest = (0.0, "", 0)
    for task in tasks:
        began = time.perf_counter()
        found = published.every_model(MtebRef(task=task, split="test", score="cosine_spearman"))
        slowest = max(slowest, (time.perf_counter() - began, task, found.n_files))
        n_files, n_rows = n_files + found.n_files, n_rows + len(found.values)
        del found
        if trace:
            held.append(tracemalloc.get_traced_memory()[0] / 2**20)
    wall = time.perf_counter() - start
    row: dict[str, object] = {
        "phase": phase, "index_s": round(index_s, 3), "tasks_s": round(wall - index_s, 3),
        "rss_start_mb": round(rss_before, 1),
        "rss_peak_mb": round(peak_rss_mb(), 1),
        "detail": f"{index.n_files} files named, {len(index.tasks)} tasks; {len(tasks)} task(s) read: "
                  f"{n_files} files, {n_rows} rows" + (
                      f"; slowest {slowest[1]} {slowest[0]:.2f} s ({slowest[2]} files)" if tasks else "")}
    if trace:
        row["py_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        row["py_held_mb"] = f"{held[0]:.1f}->{held[-1]:.1f}" if held else "-"
    return row


def _in_fresh_process(phase: str, root: Path, trace: bool) -> dict[str, object]:
    args = [sys.executable, __file__, "--phase", phase, str(root)] + (["--trace"] if trace else [])
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(name: str, root: Path) -> None:
    """Every phase on one tree: timed, then traced, each in its own process."""
    print(f"\n{name}: {root}")
    print(f"{'phase':<11} {'index s':>8} {'tasks s':>8} {'RSS start':>10} {'RSS peak':>9} {'Py peak':>8} "
          f"{'Py held first->last':>20}  detail")
    for phase in PHASES:
        timed, traced = _in_fresh_process(phase, root, False), _in_fresh_process(phase, root, True)
        print(f"{phase:<11} {timed['index_s']:>8} {timed['tasks_s']:>8} {timed['rss_start_mb']:>10} "
              f"{timed['rss_peak_mb']:>9} {traced['py_peak_mb']:>8} {traced['py_held_mb']:>20}  {timed['detail']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=104_926)
    parser.add_argument("--slice", type=Path, default=DEFAULT_SLICE)
    parser.add_argument("--keep", type=Path, help="write the synthetic tree here and keep it")
    parser.add_argument("--phase", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(run_phase(args.phase[0], Path(args.phase[1]), args.trace)))
        return 0
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    root = args.keep or Path(tempfile.mkdtemp(prefix="published-scale-", dir=base))
    try:
        start = time.perf_counter()
        made = generate(root, args.files)
        print(f"synthetic tree: {made} written in {time.perf_counter() - start:.1f} s "
              f"({sum(e.stat().st_size for e in _files(root)) / 2**20:.0f} MB)")
        table("synthetic", root)
        if args.slice.is_dir():
            table("slice", args.slice)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def _files(root: Path) -> list[os.DirEntry[str]]:
    return [f for m in os.scandir(root) for r in os.scandir(m.path) for f in os.scandir(r.path)]


if __name__ == "__main__":
    sys.exit(main())
