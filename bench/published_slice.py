"""Reading MTEB's results repository as it is, on the slice (../shared/data/mteb-results-slice/results: 2,724 task
files, 378 model_meta.json): wall time and peak memory of indexing it (names only), of one task's published rows
(STSBenchmark cosine_spearman: its 274 files read, 14 older ones converted), and, for contrast, of reading every
task file. Each phase runs in a fresh process so its peak RSS is its own. Not a test:
`python bench/published_slice.py [ROOT]`.

The older layout's conversion needs MTEB's task metadata (main score, languages per subset), read from the small
`specrun/mteb/data/task-facts-*.json.gz`; `--write-facts` writes that file from the packaged catalogue (whose
load, 2 s and 400 MB, is why the facts are kept apart).

The conversion against mteb's own (in a side environment with mteb; mteb is never a dependency of specrun):
`MTEB_VENV/bin/python bench/published_slice.py --mteb-dump /tmp/older.json [ROOT]` writes what
`mteb.TaskResult.from_disk` makes of every file without `scores`, then `python bench/published_slice.py --compare
/tmp/older.json [ROOT]` checks specrun's reading of each equals it, entry for entry."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "mteb-results-slice" / "results"
PHASES = ("index", "facts", "task", "every-file")


def run_phase(phase: str, root: Path) -> dict[str, float | int | str]:
    """One phase, timed (wall) and measured (tracemalloc's peak of Python allocations; the process's peak RSS)."""
    from specrun.mteb import task_facts
    from specrun.mteb.results import PublishedDir, read_task_file
    from specrun.mteb.score_ref import MtebRef

    ref = MtebRef(task="STSBenchmark", split="test", score="cosine_spearman")
    tracemalloc.start()
    start = time.perf_counter()
    detail: str
    if phase == "index":
        index = PublishedDir(root).index
        detail = f"{index.n_files} files named, {len(index.tasks)} tasks, {len(index.meta)} model_meta.json"
    elif phase == "facts":
        detail = f"{len(task_facts.load_facts().tasks)} tasks' facts"
    elif phase == "task":
        found = PublishedDir(root).every_model(ref)
        converted = sum(v.layout != "1.11 and later" for v in found.values)
        detail = (f"{found.n_files} files, {len(found.values)} rows ({converted} converted), "
                  f"{sum(v.meta is not None for v in found.values)} with model_meta, {len(found.set_aside)} set aside")
    else:
        paths = [p for p in sorted(root.glob("*/*/*.json")) if p.name != "model_meta.json"]
        layouts = [read_task_file(p).layout for p in paths]
        detail = f"{len(paths)} files, {sum(x != '1.11 and later' for x in layouts)} converted"
    wall = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    return {"phase": phase, "wall_s": round(wall, 3), "python_peak_mb": round(peak / 2**20, 1),
            "rss_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), "detail": detail}


def write_facts() -> Path:
    """specrun/mteb/data/task-facts-*.json.gz from the packaged catalogue (rerun when a catalogue is added)."""
    import gzip

    from specrun.mteb import catalogue, task_facts

    facts = task_facts.facts_from_catalogue(catalogue.load())
    path = Path(task_facts.__file__).parent / "data" / task_facts.FACTS_FILE
    text = json.dumps(facts.model_dump(mode="json"), separators=(",", ":"), sort_keys=True)
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    return path


def mteb_dump(out: Path, root: Path) -> int:
    """mteb's reading of every older file (run with mteb installed)."""
    from mteb import TaskResult

    found = {}
    for path in sorted(root.glob("*/*/*.json")):
        if path.name != "model_meta.json" and "scores" not in json.loads(path.read_text(encoding="utf-8")):
            result = TaskResult.from_disk(path)
            found["/".join(path.parts[-3:])] = {"task_name": result.task_name, "scores": result.scores,
                                                "dataset_revision": result.dataset_revision}
    out.write_text(json.dumps(found, default=str), encoding="utf-8")
    return len(found)


def compare(dump: Path, root: Path) -> list[str]:
    """The files whose reading here differs from mteb's (task name, dataset revision or any entry)."""
    from specrun.mteb.results import read_task_file

    differ = []
    for name, theirs in json.loads(dump.read_text(encoding="utf-8")).items():
        ours = read_task_file(root / name)
        entries = {split: [{**(e.model_extra or {}), "hf_subset": e.hf_subset, "languages": e.languages,
                            "main_score": e.main_score} for e in found] for split, found in ours.scores.items()}
        expected = {split: [{k: v for k, v in e.items() if k != "mteb_version"} for e in found]
                    for split, found in theirs["scores"].items()}
        if (entries, ours.task_name, ours.dataset_revision) != (expected, theirs["task_name"],
                                                                 theirs["dataset_revision"]):
            differ.append(name)
    return differ


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] in ("--mteb-dump", "--compare"):
        root = Path(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_ROOT
        if sys.argv[1] == "--mteb-dump":
            print(f"{mteb_dump(Path(sys.argv[2]), root)} older files read by mteb")
            return 0
        differ = compare(Path(sys.argv[2]), root)
        print(f"{len(json.loads(Path(sys.argv[2]).read_text()))} older files, {len(differ)} differ: {differ[:5]}")
        return 1 if differ else 0
    if sys.argv[1:] == ["--write-facts"]:
        print(write_facts())
        return 0
    if len(sys.argv) > 2 and sys.argv[1] == "--phase":
        root = Path(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_ROOT
        print(json.dumps(run_phase(sys.argv[2], root)))
        return 0
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ROOT
    print(f"slice: {root}")
    print(f"{'phase':<11} {'wall s':>7} {'Python peak MB':>15} {'RSS peak MB':>12}  detail")
    for phase in PHASES:
        done = subprocess.run([sys.executable, __file__, "--phase", phase, str(root)], capture_output=True,
                              text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{row['phase']:<11} {row['wall_s']:>7} {row['python_peak_mb']:>15} {row['rss_peak_mb']:>12}  "
              f"{row['detail']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
