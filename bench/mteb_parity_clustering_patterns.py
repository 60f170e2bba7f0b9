"""Imported Clustering specs whose dataset_transform has more than renames and `explode`, beside MTEB 2.x's own task
classes on the same local hub snapshots and model (all-MiniLM-L6-v2).

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_clustering_patterns.py \
        [--model DIR] [--data-dir ../shared/data] [--only TASK]
Each case writes a hub-style snapshot (README `configs:` + parquet per split) from English MasakhaNEWS headlines
(<data-dir>/masakhanews/eng/test.tsv), in the task's hub layout, then scores it with the imported spec (specrun,
fingerprinted, `--model`) and with MTEB's real task class (mteb.get_task, dataset path pointed at the snapshot, its
own load_data + dataset_transform, AbsTaskClustering.evaluate on SentenceTransformerEncoderWrapper). Cases:
  - StackExchangeClustering.v2: rows of lists, stratified_subsampling to 2,048 of 2,400 (`sample`), and the
    transform's `self.max_fraction_of_documents_to_embed = None` (every sampled document embedded);
  - StackExchangeClusteringP2P.v2: solo labels dropped (`drop_rare`), 300 documents, 3 of them solo;
  - SIB200ClusteringS2S restricted to jpn_Jpan (as JMTEB(v2)): train + validation + test joined (`source_splits`),
    category class-encoded, 300 documents;
  - ArXivHierarchicalClusteringP2P: label texts 'a.b' split into paths (`split_text`, uneven depth: the kind's
    `missing_level: class`), train_test_split(test_size=2048, seed 42) of 2,400 (`sample: train_test_split`),
    4 % embedded.
Prints both V-measures and their difference; exit 1 when one differs by more than 1e-6."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mteb_parity_cli import ROOT, bundled_model, specrun
from mteb_parity_clustering_import import articles, specrun_score

SETS = 3


def rows_of_lists(texts: list[str], labels: list[Any]) -> dict[str, list[Any]]:
    size = -(-len(texts) // SETS)
    return {"sentences": [texts[i:i + size] for i in range(0, len(texts), size)],
            "labels": [labels[i:i + size] for i in range(0, len(texts), size)]}


def write(folder: Path, splits: dict[str, dict[str, list[Any]]], config: str = "default") -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "data").mkdir(parents=True)
    files = ""
    for split, table in splits.items():
        pq.write_table(pa.table(table), folder / "data" / f"{split}.parquet")
        files += f"  - split: {split}\n    path: data/{split}.parquet\n"
    (folder / "README.md").write_text(f"---\nconfigs:\n- config_name: {config}\n  data_files:\n{files}---\n",
                                      encoding="utf-8")


def case_data(task: str, texts: list[str], labels: list[str]) -> tuple[dict[str, dict[str, list[Any]]], str]:
    """The snapshot's splits (and config) of a case, in the task's hub layout."""
    if task == "StackExchangeClustering.v2":
        many = [f"{text} ({i})" for i, text in enumerate(texts)]
        return {"test": rows_of_lists(many, labels)}, "default"
    if task == "StackExchangeClusteringP2P.v2":
        solo = [*labels[:297], "solo-a", "solo-b", "solo-c"]
        return {"test": rows_of_lists(texts[:300], solo[:300])}, "default"
    if task == "SIB200ClusteringS2S":
        parts = {"train": (0, 200), "validation": (200, 250), "test": (250, 300)}
        return {split: {"index_id": list(range(a, b)), "category": labels[a:b], "text": texts[a:b]}
                for split, (a, b) in parts.items()}, "jpn_Jpan"
    paths = [label if i % 3 == 0 else f"{label}.{'xy'[i % 2]}" for i, label in enumerate(labels)]
    return {"test": rows_of_lists([f"{text} ({i})" for i, text in enumerate(texts)], paths)}, "default"


SUBSET = {"SIB200ClusteringS2S": "jpn_Jpan"}
ROWS = {"StackExchangeClustering.v2": 2400, "ArXivHierarchicalClusteringP2P": 2400}


def mteb_score(snapshot: Path, model: str, task_name: str) -> float:
    import datasets
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    datasets.disable_progress_bars()
    subset = SUBSET.get(task_name)
    task = mteb.get_task(task_name, hf_subsets=[subset] if subset else None)
    task.metadata.dataset = {"path": str(snapshot), "revision": task.metadata.dataset["revision"]}
    task.load_data()
    found = task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test",
                          encode_kwargs={"batch_size": 64})
    return float(found[subset or "default"]["v_measure"])


def spec_of(work: Path, task_name: str) -> str | None:
    """A restricted task's spec, written as `--benchmark` writes it (None: `specrun import mteb TASK` does)."""
    subset = SUBSET.get(task_name)
    if subset is None:
        return None
    from specrun.mteb.catalogue import load
    from specrun.mteb.import_subset import restricted
    from specrun.mteb.importer import spec_id, spec_text

    catalogue = load()
    path = work / "specs" / f"{spec_id(task_name)}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(spec_text(restricted(catalogue.task(task_name), subset), catalogue.provenance.mteb_version),
                    encoding="utf-8")
    return str(path)


def specrun_restricted(work: Path, data: Path, model: str, spec: str) -> tuple[float, int]:
    import json

    cache = str(work / "cache")
    specrun("fingerprint", spec, "--data-dir", str(data), "--cache-dir", cache, "--write")
    out = specrun(spec, "--data-dir", str(data), "--model", model, "--cache-dir", cache, "--output",
                  str(work / "runs"), "-q")
    score = json.loads(Path(out.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]["v_measure"]
    return float(score["value"]), int(score["n"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--only", help="one case")
    args = parser.parse_args()
    model = args.model or bundled_model()
    sys.path.insert(0, str(ROOT / "src"))
    from specrun.mteb.importer import spec_id

    worst = 0.0
    for task in [args.only] if args.only else ["StackExchangeClusteringP2P.v2", "SIB200ClusteringS2S",
                                               "ArXivHierarchicalClusteringP2P", "StackExchangeClustering.v2"]:
        texts, labels = articles(args.data_dir, ROWS.get(task, 300))
        wanted = ROWS.get(task, len(texts))  # English MasakhaNEWS's test split has 948: cycled (texts numbered)
        texts, labels = [texts[i % len(texts)] for i in range(wanted)], [labels[i % len(labels)] for i in range(wanted)]
        splits, config = case_data(task, texts, labels)
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch)
            os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")
            snapshot = work / "data" / spec_id(task)
            write(snapshot, splits, config)
            theirs = mteb_score(snapshot, model, task)
            spec = spec_of(work, task)
            ours, n = specrun_restricted(work, work / "data", model, spec) if spec else \
                specrun_score(work, work / "data", model, task)
        difference = ours - theirs
        worst = max(worst, abs(difference))
        print(f"{task} ({len(texts)} documents read, {n} embedded): v_measure specrun {ours:.10f}  mteb "
              f"{theirs:.10f}  difference {difference:.1e}", flush=True)
    print(f"largest difference {worst:.1e}")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
