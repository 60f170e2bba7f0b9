"""The instruction join of `mteb_retrieval` and the spec form an instruction task imports as, beside MTEB 2.x's own
task classes on the same local hub snapshots and model.

MTEB is never a dependency: run this with the side environment's Python,
    HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_instruction_import.py \
        [--queries 40] [--candidates 20] [--model DIR] [--data-dir ../shared/data]
It writes two hub-style snapshots from the STS Benchmark test file in <data-dir>/stsb/ (each query a first sentence,
its relevant document its own second sentence, others judged at random; every query an instruction from a few
templates, one of them empty, which MTEB still joins with a space; a null one would stop MTEB's evaluator, whose
collate refuses None, so specrun's reader refuses it too):
  - IFIRCds' layout (InstructionRetrieval): corpus, queries, default (qrels) and instruction configs;
  - Core17InstructionRetrieval's (InstructionReranking, FollowIR): `<id>-og` and `<id>-changed` queries of one
    text with their own instructions and qrels, top_ranked candidates, and the qrel_diff config its class reads
    (a changed document's text also under a second id among the candidates, a tie; every third pair's qrel_diff
    also lists a document outside its candidates).
Then, per snapshot:
  1. the query texts: specrun's reader (option `instructions`) against MTEB's RetrievalDatasetLoader followed by
     `_retrieval_texts` (what its evaluator embeds), every query compared;
  2. the scores: MTEB's real task class (mteb.get_task, its dataset path pointed at the snapshot, AbsTaskRetrieval
     .evaluate on SentenceTransformerEncoderWrapper; the unrounded means of its per-query pytrec_eval scores, and its
     own MRR, caught from calculate_retrieval_scores) against the spec `specrun import mteb` writes for the task
     once its revision is a commit and its main score nDCG@10 (the real ones are refused: IFIR's revision is a short
     hash and its main score nDCG@20, FollowIR's p-MRR), given every trec measure MTEB reports, run with --model.
  3. Core17InstructionRetrieval as it really imports (main score p-MRR: the paired_reranking kind, the reader's
     option `pairs`), given every measure MTEB reports for it: p-MRR (caught from its calculate_pmrr), the pooled
     trec measures and the og and changed ones (`og.ndcg_at_10`, ..., caught from the calculate_retrieval_scores
     calls of its evaluate_p_mrr_change), unrounded, against the spec run with --model.
Prints the largest difference per snapshot and per score family; exit 1 when texts differ or a score differs by
more than 1e-6."""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from mteb_parity_cli import ROOT, bundled_model, specrun

TEMPLATES = ("Relevant documents restate the query in other words.", "Only answers about the same event count.",
             "A document is relevant if it shares the subject.", "")
MEASURES = {"ndcg": "ndcg_cut", "map": "map_cut", "recall": "recall", "precision": "P"}  # MTEB key -> pytrec's
CUTOFFS = (1, 3, 5, 10, 100, 1000)
PAIRED_CUTOFFS = (1, 3, 5, 10, 20, 100, 1000)  # Core17's k_values: every cutoff MTEB reports for it
WRITE_SPEC = """
import json, sys, yaml
from specrun.mteb import catalogue
from specrun.mteb.import_retrieval import RETRIEVAL_METRICS
from specrun.mteb.importer import import_tasks
name, folder, commit = sys.argv[1:4]
loaded = catalogue.load()
task = loaded.task(name)
task = task.model_copy(update={"dataset": task.dataset.model_copy(update={"revision": commit}),
                               "main_score": "ndcg_at_10", "hooks": {}, "hook_calls": {}})
(entry,) = import_tasks([name], loaded.model_copy(update={"tasks": {**loaded.tasks, name: task}}))
spec = yaml.safe_load(entry.text)
first = next(iter(spec["metrics"].values()))
for key, (metric, label) in RETRIEVAL_METRICS.items():
    ref = {k: v for k, v in first["mteb"].items() if k != "main"} | {"score": key}
    spec["metrics"].setdefault(key, first | {"metric": metric, "label": label, "mteb": ref})
(protocol,) = spec["protocols"].values()
protocol["options"]["top_k"] = 1000
path = f"{folder}/{entry.spec_id}.yaml"
open(path, "w").write(yaml.safe_dump(spec, sort_keys=False))
print(path, entry.spec_id)
"""
WRITE_PAIRED = """
import sys, yaml
from specrun.mteb import catalogue
from specrun.mteb.import_retrieval import RETRIEVAL_METRICS
from specrun.mteb.importer import import_tasks
name, folder, cutoffs = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
(entry,) = import_tasks([name], catalogue.load())
spec = yaml.safe_load(entry.text)
first = {k: v for k, v in spec["metrics"]["ndcg_at_10"].items() if k != "mteb"}
for key, (metric, label) in RETRIEVAL_METRICS.items():
    if key.rsplit("_", 1)[-1] in cutoffs:
        for side in ("", "og.", "changed."):
            spec["metrics"].setdefault(side + key, first | {"metric": side.replace(".", "_") + metric,
                                                             "label": side + label})
path = f"{folder}/{entry.spec_id}.yaml"
open(path, "w").write(yaml.safe_dump(spec, sort_keys=False))
print(path, entry.spec_id)
"""
READ_QUERIES = """
import json, sys
from pathlib import Path
from specrun.readers.mteb_retrieval import read_mteb_retrieval
class Layout:
    options = {"instructions": True, "candidates": sys.argv[2] == "yes"}
print(json.dumps({row["query_id"]: row["query"] for row in read_mteb_retrieval(Path(sys.argv[1]), Layout(), "test")}))
"""


def project_python(code: str, *args: str) -> str:
    """Python code in the project's environment (specrun's dependencies), its stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c", code, *args], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(done.stderr.strip())
    return done.stdout.strip()


def sts_pairs(data_dir: Path) -> list[tuple[float, str, str]]:
    with (data_dir / "stsb" / "sts-test.csv").open(encoding="utf-8") as handle:
        pairs = [(float(row[4]), row[5], row[6]) for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
                 if len(row) >= 7]
    first = {text: i for i, (_, _, text) in reversed(list(enumerate(pairs)))}  # each document text once
    return [pairs[i] for i in sorted(first.values())]


def retrieval_rows(pairs: list[tuple[float, str, str]], queries: int, rng: random.Random) -> dict[str, list]:
    """IFIR's layout: every query judges its own second sentence (by the pair's score) and two others."""
    chosen = rng.sample(range(len(pairs)), queries * 3)
    rows: dict[str, list] = {"corpus": [{"_id": f"d{i}", "title": "", "text": pairs[i][2]} for i in chosen],
                             "queries": [], "default": [], "instruction": []}
    for number, i in enumerate(chosen[:queries]):
        judged = {f"d{i}": 2 if pairs[i][0] >= 4 else 1} | {f"d{j}": rng.choice((0, 1)) for j in
                                                             rng.sample(chosen[queries:], 2)}
        rows["queries"].append({"_id": f"q{i}", "text": pairs[i][1]})
        rows["default"] += [{"query-id": f"q{i}", "corpus-id": d, "score": s} for d, s in judged.items()]
        rows["instruction"].append({"query-id": f"q{i}", "instruction": TEMPLATES[number % len(TEMPLATES)]})
    return rows


def followir_rows(pairs: list[tuple[float, str, str]], queries: int, candidates: int,
                  rng: random.Random) -> dict[str, list]:
    """FollowIR's layout: per base query an -og and a -changed query of one text, the changed instruction making
    some of the og's relevant documents non-relevant (qrel_diff lists them), both ranking the same candidates."""
    chosen = rng.sample(range(len(pairs)), queries * 3)
    rows: dict[str, list] = {"corpus": [{"_id": f"d{i}", "title": "", "text": pairs[i][2]} for i in chosen],
                             "queries": [], "default": [], "instruction": [], "top_ranked": [], "qrel_diff": []}
    for number, i in enumerate(chosen[:queries]):
        others = [f"d{j}" for j in rng.sample([j for j in chosen if j != i], candidates - 1)]
        og = {f"d{i}": 1} | dict.fromkeys(others[:3], 1) | dict.fromkeys(others[3:6], 0)
        dropped = others[:2]
        changed = og | dict.fromkeys(dropped, 0)
        copy = f"{dropped[0]}x{number}"  # a dropped document's text under another id: a tie, broken by id descending
        rows["corpus"].append({"_id": copy, "title": "", "text": pairs[int(dropped[0][1:])][2]})
        listed = [f"d{i}", *others, copy]
        rng.shuffle(listed)
        if number % 3 == 0:  # a listed document no run holds: rank len + 1 on both sides
            dropped = [*dropped, next(f"d{j}" for j in chosen if f"d{j}" not in listed)]
        for suffix, judged, instruction in (("og", og, TEMPLATES[number % 3]),
                                            ("changed", changed, TEMPLATES[number % 3] + " Nothing about sports.")):
            query_id = f"q{i}-{suffix}"
            rows["queries"].append({"_id": query_id, "text": pairs[i][1]})
            rows["default"] += [{"query-id": query_id, "corpus-id": d, "score": s} for d, s in judged.items()]
            rows["instruction"].append({"query-id": query_id, "instruction": instruction})
            rows["top_ranked"].append({"query-id": query_id, "corpus-ids": listed})
        rows["qrel_diff"].append({"query-id": f"q{i}", "corpus-ids": dropped})
    return rows


def write_snapshot(folder: Path, rows: dict[str, list]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = ["---", "configs:"]
    for name, part in rows.items():
        split = "qrel_diff" if name == "qrel_diff" else "test"  # the split Core17's own Python asks for
        (folder / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(part), folder / name / f"{split}.parquet")
        lines += [f"- config_name: {name}", "  data_files:", f"  - split: {split}", f"    path: {name}/{split}.parquet"]
    (folder / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")


def mteb_texts(snapshot: Path) -> dict[str, str]:
    """What MTEB's evaluator embeds for each query: its loader's queries through `_retrieval_texts`."""
    from mteb._create_dataloaders import _retrieval_texts
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalDatasetLoader
    from mteb.types import PromptType

    queries = RetrievalDatasetLoader(str(snapshot), revision="main", split="test").load()["queries"]
    return dict(zip(queries["id"], _retrieval_texts(queries, PromptType.query), strict=True))


def unrounded(result: Any, cutoffs: tuple[int, ...], prefix: str = "") -> dict[str, float]:
    """Means over one calculate_retrieval_scores call's per-query pytrec_eval scores, and its own MRR."""
    per_query = result.all_scores
    means = {f"{prefix}{key}_at_{k}": sum(s[f"{measure}_{k}"] for s in per_query.values()) / len(per_query)
             for key, measure in MEASURES.items() for k in cutoffs}
    return means | {f"{prefix}mrr_at_{k}": float(result.mrr[f"MRR@{k}"]) for k in cutoffs}


def mteb_scores(name: str, snapshot: Path, model: str) -> tuple[dict[str, float], dict[str, Any]]:
    """MTEB's unrounded means over its per-query pytrec_eval scores (and its MRR), and its reported result; for
    a FollowIR task also its og and changed means (`og.` and `changed.` keys) and its unrounded p-MRR."""
    import datasets
    import mteb
    import mteb._evaluators.retrieval_evaluator as evaluator
    import mteb._evaluators.retrieval_metrics as metrics
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    datasets.disable_progress_bars()
    caught: list[Any] = []
    originals = (evaluator.calculate_retrieval_scores, metrics.calculate_retrieval_scores, metrics.calculate_pmrr)

    def catching(function: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            caught.append(function(*args, **kwargs))
            return caught[-1]
        return call

    evaluator.calculate_retrieval_scores, metrics.calculate_retrieval_scores, metrics.calculate_pmrr = map(
        catching, originals)
    task = mteb.get_task(name)
    task.metadata.dataset = {"path": str(snapshot), "revision": task.metadata.dataset["revision"]}
    task.load_data()
    try:
        found = task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test",
                              encode_kwargs={"batch_size": 32})
    finally:
        evaluator.calculate_retrieval_scores, metrics.calculate_retrieval_scores, metrics.calculate_pmrr = originals
    # the task's own run first; a FollowIR hook then computes p-MRR and scores og and changed again, in that order
    scores = unrounded(caught[0], PAIRED_CUTOFFS if len(caught) == 4 else CUTOFFS)
    if len(caught) == 4:
        scores |= {"p-MRR": float(caught[1])} | unrounded(caught[2], PAIRED_CUTOFFS, "og.") | unrounded(
            caught[3], PAIRED_CUTOFFS, "changed.")
    return scores, found["default"]


def specrun_scores(name: str, work: Path, data: Path, model: str, paired: bool = False) -> tuple[dict[str, float], str]:
    """The imported spec's scores on the snapshot: the pinned nDCG@10 form, or (`paired`) the task as it imports
    with every measure MTEB reports for it added."""
    specs = work / ("paired-specs" if paired else "specs")
    specs.mkdir(exist_ok=True)
    writer = (WRITE_PAIRED, name, str(specs), ",".join(map(str, PAIRED_CUTOFFS))) if paired else (
        WRITE_SPEC, name, str(specs), "c5691e3c48741d5f83b5cc8e630653d7a8cfc048")
    spec, spec_id = project_python(*writer).split()
    cache = str(work / "cache")
    specrun("fingerprint", spec, "--data-dir", str(data), "--cache-dir", cache, "--write")
    path = specrun(spec, "--data-dir", str(data), "--model", model, "--cache-dir", cache, "--output",
                   str(work / ("paired-runs" if paired else "runs")), "-q")
    scores = json.loads(Path(path.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]
    return {key: float(value["value"]) for key, value in scores.items()}, spec_id


def compare(name: str, snapshot: Path, work: Path, model: str) -> float:
    ours_texts = json.loads(project_python(READ_QUERIES, str(snapshot),
                                           "yes" if (snapshot / "top_ranked").exists() else "no"))
    theirs_texts = mteb_texts(snapshot)
    same = ours_texts == theirs_texts
    theirs, reported = mteb_scores(name, snapshot, model)
    ours, _ = specrun_scores(name, work, snapshot.parent, model)
    print(f"{name}: {len(ours_texts)} queries, joined texts {'equal' if same else 'DIFFER'} "
          f"(MTEB {len(theirs_texts)}); MTEB's reported main score {reported['main_score']:.5f}"
          + (f", p-MRR {reported['p-MRR']:.5f}" if "p-MRR" in reported else ""))
    worst = paired_gap(name, work, snapshot.parent, model, theirs) if "p-MRR" in theirs else 0.0
    for family in ("ndcg", "map", "mrr", "recall", "precision"):
        keys = [f"{family}_at_{k}" for k in CUTOFFS]
        gap = max(abs(ours[key] - theirs[key]) for key in keys)
        worst = max(worst, gap)
        print(f"  {family:9s} @{','.join(map(str, CUTOFFS))}: largest difference {gap:.1e} "
              f"(@10 specrun {ours[keys[3]]:.10f} mteb {theirs[keys[3]]:.10f})")
    return worst if same else float("inf")


def paired_gap(name: str, work: Path, data: Path, model: str, theirs: dict[str, float]) -> float:
    """The task as it imports (paired_reranking, main score p-MRR) against MTEB's p-MRR and every pooled, og and
    changed trec measure it reports; the largest difference."""
    ours, _ = specrun_scores(name, work, data, model, paired=True)
    ours["p-MRR"] = ours.pop("p_mrr")
    gaps = {key: abs(ours[key] - value) for key, value in theirs.items()}
    print(f"  as imported (paired_reranking): p-MRR specrun {ours['p-MRR']:.12f} mteb {theirs['p-MRR']:.12f}; "
          f"{len(gaps)} scores compared")
    for side in ("", "og.", "changed."):
        keys = [key for key in gaps if key != "p-MRR" and key.startswith(side) and (side or "." not in key)]
        print(f"  {side or 'pooled.'}*: {len(keys)} measures, largest difference {max(gaps[k] for k in keys):.1e} "
              f"(ndcg@10 specrun {ours[side + 'ndcg_at_10']:.10f} mteb {theirs[side + 'ndcg_at_10']:.10f})")
    print(f"  p-MRR difference {gaps['p-MRR']:.1e}; max abs diff over all {len(gaps)}: {max(gaps.values()):.1e}")
    return max(gaps.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=40, help="queries (default 40; FollowIR: pairs)")
    parser.add_argument("--candidates", type=int, default=20, help="FollowIR candidates per query (default 20)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    model = args.model or bundled_model()
    pairs, rng = sts_pairs(args.data_dir), random.Random(11)
    worst = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")
        for name, spec_id, rows in (
                ("IFIRCds", "ifircds", retrieval_rows(pairs, args.queries, rng)),
                ("Core17InstructionRetrieval", "core17instructionretrieval",
                 followir_rows(pairs, args.queries // 2, args.candidates, rng))):
            snapshot = work / name / spec_id
            write_snapshot(snapshot, rows)
            worst = max(worst, compare(name, snapshot, work / name, model))
    print(f"largest difference {worst:.1e}")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
