"""Imported Clustering specs beside MTEB 2.x's own task classes, on the same local hub snapshots and model.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_clustering_import.py \
        [--rows 300] [--model DIR] [--data-dir ../shared/data]
It writes a hub-style snapshot (README `configs:` + a test parquet) per case from the first --rows English
MasakhaNEWS articles in <data-dir>/masakhanews/eng/test.tsv (headlines, six categories), in the layout the task's
hub data has, then scores it twice with all-MiniLM-L6-v2:
  - specrun: `specrun import mteb TASK`'s spec, fingerprinted on the snapshot and run with `--model`;
  - MTEB: its real task class (mteb.get_task), its dataset path pointed at the snapshot, loaded by its own
    load_data and dataset_transform, scored by AbsTaskClustering.evaluate on SentenceTransformerEncoderWrapper.
Cases: MedrxivClusteringP2P.v2 (rows of lists chained by its transform: the spec's `explode`; 4 % embedded),
MewsC16JaClustering (max_document_to_embed: a seeded sample of all), AlloProfClusteringS2S.v2 (max_depth 1),
DutchNewsArticlesClusteringP2P (renamed columns; max_fraction_of_documents_to_embed 1.0). Prints both V-measures
and their difference; exit 1 when one differs by more than 1e-6. Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
from pathlib import Path

from mteb_parity_cli import ROOT, bundled_model, specrun

SETS = 3  # rows of lists in a v2 layout
# task -> the hub columns its data holds (text, label) and whether a split is rows of lists
CASES = {"MedrxivClusteringP2P.v2": ("sentences", "labels", True),
         "MewsC16JaClustering": ("sentences", "labels", False),
         "AlloProfClusteringS2S.v2": ("sentences", "labels", False),
         "DutchNewsArticlesClusteringP2P": ("text", "label", False)}


def articles(data_dir: Path, rows: int) -> tuple[list[str], list[str]]:
    with (data_dir / "masakhanews" / "eng" / "test.tsv").open(encoding="utf-8", newline="") as handle:
        found = list(csv.DictReader(handle, delimiter="\t"))[:rows]
    return [row["headline"].strip() for row in found], [row["category"] for row in found]


def write_snapshot(folder: Path, texts: list[str], labels: list[str], layout: tuple[str, str, bool]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    text, label, lists = layout
    if lists:  # SETS rows, each a list of documents and a list of their labels
        size = -(-len(texts) // SETS)
        table = {text: [texts[i:i + size] for i in range(0, len(texts), size)],
                 label: [labels[i:i + size] for i in range(0, len(texts), size)]}
    else:
        table = {text: texts, label: labels}
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.table(table), folder / "data" / "test.parquet")
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      "    path: data/test.parquet\n---\n", encoding="utf-8")


def specrun_score(work: Path, data: Path, model: str, task: str) -> tuple[float, int]:
    spec = Path(specrun("import", "mteb", task, "-o", str(work / "specs")).splitlines()[-1])
    cache = str(work / "cache")
    specrun("fingerprint", str(spec), "--data-dir", str(data), "--cache-dir", cache, "--write")
    path = specrun(str(spec), "--data-dir", str(data), "--model", model, "--cache-dir", cache,
                   "--output", str(work / "runs"), "-q")
    score = json.loads(Path(path.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]["v_measure"]
    return float(score["value"]), int(score["n"])


def mteb_score(snapshot: Path, model: str, task_name: str) -> float:
    import datasets
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    datasets.disable_progress_bars()
    task = mteb.get_task(task_name)
    revision = task.metadata.dataset["revision"]
    task.metadata.dataset = {"path": str(snapshot), "revision": revision}  # the local copy, read as the hub's
    task.load_data()
    found = task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test",
                          encode_kwargs={"batch_size": 32})
    return float(found["default"]["v_measure"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300, help="MasakhaNEWS articles per snapshot (default 300)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    args.model = args.model or bundled_model()
    texts, labels = articles(args.data_dir, args.rows)
    worst = 0.0
    sys.path.insert(0, str(ROOT / "src"))
    from specrun.mteb.importer import spec_id

    for task, layout in CASES.items():
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch)
            os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # no earlier case's rows for this folder
            snapshot = work / "data" / spec_id(task)
            write_snapshot(snapshot, texts, labels, layout)
            theirs = mteb_score(snapshot, args.model, task)
            ours, n = specrun_score(work, work / "data", args.model, task)
        difference = ours - theirs
        worst = max(worst, abs(difference))
        print(f"{task} ({len(texts)} documents, {n} embedded): v_measure specrun {ours:.10f}  mteb {theirs:.10f}  "
              f"difference {difference:.1e}", flush=True)
    print(f"largest difference {worst:.1e}")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
