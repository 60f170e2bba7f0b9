"""MrTidyRetrieval's imported spec (JMTEB(v2)'s japanese subset; `mteb_retrieval` with option corpus_split: train)
beside MTEB 2.x's own task class, whose load_data reads the repo with its own `_load_data_retrieval`, on the same
local hub snapshot and model.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_loader_import.py \
        [--queries 60] [--documents 300] [--model DIR] [--data-dir ../shared/data]
It writes a hub-style snapshot in mteb/mrtidy's layout (README `configs:` japanese-corpus with a train split,
japanese-queries and japanese-qrels with a test split, parquet) from the STS Benchmark test file in
<data-dir>/stsb/: each query is a first sentence, relevant (1) its own second sentence, two other documents judged
at random 0 or 1; the corpus (every fourth document with a title) also holds unjudged second sentences. The
corpus config also has a `test` split of other documents, which MTEB's loader does not read. Then the task is
scored twice with all-MiniLM-L6-v2:
  - specrun: the MrTidyRetrieval spec `specrun import mteb --benchmark "JMTEB(v2)"` writes (japanese only),
    fingerprinted on the snapshot, run with --model;
  - MTEB: its real MrTidyRetrieval class (mteb.get_task, hf_subsets japanese), its dataset path pointed at the
    snapshot, loaded by its own load_data and scored by AbsTaskRetrieval.evaluate on
    SentenceTransformerEncoderWrapper. The unrounded means of its per-query pytrec_eval scores (caught from
    calculate_retrieval_scores) are compared, and its rounded main score printed beside them.
Prints both numbers per score and their difference; exit 1 when one differs by more than 1e-6."""

from __future__ import annotations

import argparse
import csv
import os
import random
import tempfile
from pathlib import Path
from typing import Any

from mteb_parity_cli import ROOT, bundled_model, mteb_retrieval_means, print_differences, run_imported, specrun

TASK = "MrTidyRetrieval"
SUBSET = "japanese"
SCORES = {"ndcg_at_10": "ndcg_cut_10", "map_at_10": "map_cut_10", "recall_at_100": "recall_100"}


def snapshot_rows(data_dir: Path, queries: int, documents: int) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Config -> split -> rows, drawn from the STS Benchmark test pairs (seeded), every text once."""
    with (data_dir / "stsb" / "sts-test.csv").open(encoding="utf-8") as handle:
        pairs = [(row[5], row[6]) for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
                 if len(row) >= 7]
    rng = random.Random(5)
    unique = list({second: (first, second) for first, second in pairs}.values())
    firsts = {first for first, _ in unique}
    unique = [pair for pair in unique if pair[1] not in firsts]
    rng.shuffle(unique)
    corpus = {f"d{i}": second for i, (_, second) in enumerate(unique[:documents])}
    decoys = [{"_id": f"x{i}", "title": "", "text": second} for i, (_, second) in enumerate(unique[documents:][:20])]
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {
        f"{SUBSET}-corpus": {"train": [{"_id": doc, "title": f"Title {doc}" if i % 4 == 0 else "", "text": text}
                                       for i, (doc, text) in enumerate(corpus.items())], "test": decoys},
        f"{SUBSET}-queries": {"test": []}, f"{SUBSET}-qrels": {"test": []}}
    for i, (first, _) in enumerate(unique[:queries]):
        rows[f"{SUBSET}-queries"]["test"].append({"_id": f"q{i}", "text": first})
        judged = {f"d{i}": 1, **{doc: rng.choice((0, 1)) for doc in rng.sample(sorted(corpus), 2)}}
        rows[f"{SUBSET}-qrels"]["test"] += [{"query-id": f"q{i}", "corpus-id": doc, "score": score}
                                           for doc, score in judged.items()]
    return rows


def write_snapshot(folder: Path, rows: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = ["---", "configs:"]
    for name, splits in rows.items():
        (folder / name).mkdir(parents=True)
        lines += [f"- config_name: {name}", "  data_files:"]
        for split, part in splits.items():
            pq.write_table(pa.Table.from_pylist(part), folder / name / f"{split}.parquet")
            lines += [f"  - split: {split}", f"    path: {name}/{split}.parquet"]
    (folder / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")


def specrun_scores(work: Path, data: Path, model: str) -> dict[str, float]:
    specrun("import", "mteb", "--benchmark", "JMTEB(v2)", "-o", str(work / "specs"))
    return run_imported(work, data, model, str(work / "specs" / "mrtidyretrieval.yaml"), [*SCORES, "mrr_at_10"])


def mteb_scores(snapshot: Path, model: str) -> tuple[dict[str, float], float]:
    """MTEB's unrounded means (per-query pytrec_eval scores, its own MRR) and its reported main score."""
    return mteb_retrieval_means(snapshot, model, TASK, SCORES, subset=SUBSET)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=60, help="queries (default 60)")
    parser.add_argument("--documents", type=int, default=300, help="corpus documents (default 300)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    args.model = args.model or bundled_model()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # no earlier run's rows for a folder like this
        snapshot = work / "data" / "mrtidyretrieval"
        write_snapshot(snapshot, snapshot_rows(args.data_dir, args.queries, args.documents))
        theirs, reported = mteb_scores(snapshot, args.model)
        ours = specrun_scores(work, work / "data", args.model)
    print(f"{TASK} ({SUBSET}) on a {args.queries}-query, {args.documents}-document snapshot from STS Benchmark "
          f"(specrun {ours.pop('n')} queries, MTEB {theirs.pop('n')}); MTEB's reported main score {reported:.5f}")
    return print_differences(ours, theirs, 14)


if __name__ == "__main__":
    raise SystemExit(main())
