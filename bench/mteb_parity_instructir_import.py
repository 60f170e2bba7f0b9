"""InstructIR as `specrun import mteb` writes it (corpus_retrieval with `query_groups: "_"`, main score the metric
robustness_at_10) beside MTEB 2.x's own InstructIR class, on the same local hub snapshot and model.

MTEB is never a dependency: run this with the side environment's Python,
    cd bench && HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python mteb_parity_instructir_import.py \
        [--groups 20] [--model DIR] [--data-dir ../../shared/data]
It writes a hub-style snapshot in InstructIR's layout (corpus, queries, default qrels and instruction configs)
from the STS Benchmark test file in <data-dir>/stsb/: each group one first sentence asked 1 to 3 times (ids
`q<i>_<v>`, MTEB's grouping key being the id up to the first '_'), each time with its own instruction and its own
judgments (its own second sentence relevant in one variant, other documents in the others), so a group's variants
differ. Then MTEB's real InstructIR (mteb.get_task, its dataset path pointed at the snapshot, AbsTaskRetrieval
.evaluate on SentenceTransformerEncoderWrapper; its task_specific_scores' robustness_at_10 caught unrounded, and
the unrounded means of its per-query pytrec_eval scores) against the imported spec run with --model: robustness@10
and every trec measure the spec maps. Prints each difference; exit 1 when one is above 1e-6."""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

from mteb_parity_cli import ROOT, bundled_model, specrun
from mteb_parity_instruction_import import CUTOFFS, TEMPLATES, sts_pairs, unrounded, write_snapshot

TASK = "InstructIR"


def grouped_rows(pairs: list[tuple[float, str, str]], groups: int, rng: random.Random) -> dict[str, list]:
    """InstructIR's layout: per group one query text under 1-3 ids `q<i>_<v>`, each with its own instruction and
    judgments (the group's own second sentence relevant in the first variant, another document in the others)."""
    chosen = rng.sample(range(len(pairs)), groups * 3)
    rows: dict[str, list] = {"corpus": [{"_id": f"d{i}", "title": "", "text": pairs[i][2]} for i in chosen],
                             "queries": [], "default": [], "instruction": []}
    for number, i in enumerate(chosen[:groups]):
        for variant in range(1 + number % 3):
            query = f"q{i}_{variant}"
            relevant = f"d{i}" if variant == 0 else f"d{rng.choice(chosen[groups:])}"
            judged = {relevant: 2} | {f"d{j}": rng.choice((0, 1)) for j in rng.sample(chosen[groups:], 2)
                                      if f"d{j}" != relevant}
            rows["queries"].append({"_id": query, "text": pairs[i][1]})
            rows["default"] += [{"query-id": query, "corpus-id": d, "score": s} for d, s in judged.items()]
            rows["instruction"].append({"query-id": query,
                                        "instruction": TEMPLATES[(number + variant) % len(TEMPLATES)]})
    return rows


def mteb_scores(snapshot: Path, model: str) -> dict[str, float]:
    import datasets
    import mteb
    import mteb._evaluators.retrieval_evaluator as evaluator
    import mteb.tasks.instruction_retrieval.eng.instruct_ir as instruct_ir
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    datasets.disable_progress_bars()
    caught: list[Any] = []
    originals = (evaluator.calculate_retrieval_scores, instruct_ir.robustness_at_10)

    def catching(function: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            caught.append(function(*args, **kwargs))
            return caught[-1]
        return call

    evaluator.calculate_retrieval_scores, instruct_ir.robustness_at_10 = map(catching, originals)
    task = mteb.get_task(TASK)
    task.metadata.dataset = {"path": str(snapshot), "revision": task.metadata.dataset["revision"]}
    task.load_data()
    try:
        task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test", encode_kwargs={"batch_size": 32})
    finally:
        evaluator.calculate_retrieval_scores, instruct_ir.robustness_at_10 = originals
    return unrounded(caught[0], CUTOFFS) | {"robustness_at_10": float(caught[1])}


def specrun_scores(work: Path, data: Path, model: str) -> tuple[dict[str, Any], int]:
    spec = specrun("import", "mteb", TASK, "-o", str(work / "specs")).splitlines()[-1]
    cache = str(work / "cache")
    specrun("fingerprint", spec, "--data-dir", str(data), "--cache-dir", cache, "--write")
    path = specrun(spec, "--data-dir", str(data), "--model", model, "--cache-dir", cache, "--output",
                   str(work / "runs"), "-q")
    scores = json.loads(Path(path.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]
    return {key: float(value["value"]) for key, value in scores.items()}, scores["robustness_at_10"]["n"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=20, help="query groups (default 20; 1-3 variants each)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    model = args.model or bundled_model()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")
        rows = grouped_rows(sts_pairs(args.data_dir), args.groups, random.Random(11))
        snapshot = work / "data" / TASK.lower()
        write_snapshot(snapshot, rows)
        theirs = mteb_scores(snapshot, model)
        ours, groups = specrun_scores(work, work / "data", model)
    print(f"{TASK}: {len(rows['queries'])} queries in {groups} groups")
    worst = 0.0
    for key in sorted(ours):
        if key not in theirs:
            continue
        difference = ours[key] - theirs[key]
        worst = max(worst, abs(difference))
        if key in ("robustness_at_10", "ndcg_at_10") or abs(difference) > 1e-12:
            print(f"  {key:16s} specrun {ours[key]:.12f}  mteb {theirs[key]:.12f}  difference {difference:.1e}")
    print(f"largest difference over {len(set(ours) & set(theirs))} scores {worst:.1e}")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
