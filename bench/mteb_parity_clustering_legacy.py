"""Imported legacy Clustering specs (AbsTaskClusteringLegacy: V-measure per set, mean over sets) beside MTEB 2.x's
own task classes, on the same local hub snapshots and model.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_clustering_legacy.py \
        [--sets 5] [--per-set 100] [--model DIR] [--data-dir ../shared/data]
It writes a hub-style snapshot (README `configs:` + a test parquet of rows of lists) from the first sets x per-set
English MasakhaNEWS headlines in <data-dir>/masakhanews/eng/test.tsv, shuffled with Random(0) (six
categories): one row per set, and one
more row of 20 headlines of a single category (a set MTEB scores 1 without clustering). Then it scores it twice
with all-MiniLM-L6-v2: specrun runs `specrun import mteb TASK`'s spec (fingerprinted, `--model`); MTEB runs its
real task class (mteb.get_task, dataset path pointed at the snapshot, its own load_data,
AbsTaskClusteringLegacy.evaluate on SentenceTransformerEncoderWrapper). Prints both V-measures, their standard
deviations over the sets and the difference; exit 1 when one differs by more than 1e-6."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mteb_parity_cli import ROOT, bundled_model, specrun
from mteb_parity_clustering_import import articles

CASES = ("WikiCitiesClustering", "BuiltBenchClusteringP2P")


def write_snapshot(folder: Path, texts: list[str], labels: list[str], sets: int, per_set: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [(texts[i * per_set:(i + 1) * per_set], labels[i * per_set:(i + 1) * per_set]) for i in range(sets)]
    rest = [(t, label) for t, label in zip(texts[sets * per_set:], labels[sets * per_set:], strict=True)
            if label == labels[sets * per_set]][:20]
    rows.append(([t for t, _ in rest], [label for _, label in rest]))  # a set of one label
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.table({"sentences": [r[0] for r in rows], "labels": [r[1] for r in rows]}),
                   folder / "data" / "test.parquet")
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      "    path: data/test.parquet\n---\n", encoding="utf-8")


def specrun_score(work: Path, data: Path, model: str, task: str) -> dict[str, float]:
    spec = Path(specrun("import", "mteb", task, "-o", str(work / "specs")).splitlines()[-1])
    cache = str(work / "cache")
    specrun("fingerprint", str(spec), "--data-dir", str(data), "--cache-dir", cache, "--write")
    path = specrun(str(spec), "--data-dir", str(data), "--model", model, "--cache-dir", cache,
                   "--output", str(work / "runs"), "-q")
    return json.loads(Path(path.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]["v_measure"]


def mteb_score(snapshot: Path, model: str, task_name: str) -> dict[str, float]:
    import datasets
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    datasets.disable_progress_bars()
    task = mteb.get_task(task_name)
    task.metadata.dataset = {"path": str(snapshot), "revision": task.metadata.dataset["revision"]}
    task.load_data()
    found = task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test",
                          encode_kwargs={"batch_size": 32})
    return found["default"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=5, help="sets of headlines (default 5)")
    parser.add_argument("--per-set", type=int, default=100, help="headlines per set (default 100)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    args.model = args.model or bundled_model()
    texts, labels = articles(args.data_dir, 10_000)  # the file runs category by category: shuffled, seeded
    order = list(range(len(texts)))
    random.Random(0).shuffle(order)
    texts, labels = [texts[i] for i in order], [labels[i] for i in order]
    worst = 0.0
    sys.path.insert(0, str(ROOT / "src"))
    from specrun.mteb.importer import spec_id

    for task in CASES:
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch)
            os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")
            snapshot = work / "data" / spec_id(task)
            write_snapshot(snapshot, texts, labels, args.sets, args.per_set)
            theirs = mteb_score(snapshot, args.model, task)
            ours = specrun_score(work, work / "data", args.model, task)
        difference = float(ours["value"]) - float(theirs["v_measure"])
        worst = max(worst, abs(difference), abs(float(ours["run_sd"]) - float(theirs["v_measure_std"])))
        print(f"{task} ({args.sets} sets of {args.per_set} + 1 of one label, {ours['n']} documents): v_measure "
              f"specrun {ours['value']:.10f} [{ours['ci_low']:.4f}, {ours['ci_high']:.4f}] (sd over sets "
              f"{ours['run_sd']:.6f})  mteb {float(theirs['v_measure']):.10f} (v_measure_std "
              f"{float(theirs['v_measure_std']):.6f})  difference {difference:.1e}", flush=True)
    print(f"largest difference {worst:.1e}")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
