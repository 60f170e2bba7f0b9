"""An imported Reranking spec beside MTEB 2.x's own task class, on the same local hub snapshot and model.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_reranking_import.py \
        [--queries 50] [--candidates 20] [--model DIR] [--data-dir ../shared/data]
It writes a hub-style snapshot in MTEB's reranking layout (README `configs:` corpus, queries, default (qrels) and
top_ranked, parquet) from the STS Benchmark test file in <data-dir>/stsb/: each query is a first sentence, its
candidates its own second sentence (graded by the pair's similarity: 2 from 4.0, 1 from 2.0, else 0) and others'
second sentences (four judged at random 0, 1 or 2, so the ranking is not trivial; the rest unjudged); every
seventh query also has a relevant document outside its candidates (it counts in the ideal DCG and AP's
denominator). Then the task is scored twice with all-MiniLM-L6-v2:
  - specrun: `specrun import mteb AskUbuntuDupQuestions`'s spec, fingerprinted on the snapshot, run with --model;
  - MTEB: its real AskUbuntuDupQuestions class (mteb.get_task), its dataset path pointed at the snapshot, loaded
    by its own RetrievalDatasetLoader and scored by AbsTaskRetrieval.evaluate on SentenceTransformerEncoderWrapper
    (its reranking path: top_ranked handed to the search). MTEB rounds map and nDCG to 5 decimals in its result;
    the unrounded means of its per-query pytrec_eval scores (caught from calculate_retrieval_scores) are compared,
    and its rounded main score printed beside them.
Prints both numbers per measure (map_at_1000, the main score; mrr_at_10; ndcg_at_10) and their difference; exit 1
when one differs by more than 1e-6. Figures in BENCHMARKS.md.

Every document text is distinct by default. With --duplicates the STS file's repeated sentences stay and every fifth
query also gets a copy of its own second sentence under another id (judged 0): an exact tie. specrun embeds a text
once, so the copies score the same and are ordered by document id, descending (pytrec_eval's order for equal
scores); MTEB embeds each copy in its own batch, whose padding moves the float32 cosine by ~1e-7, so its order of
the copies is set by that noise and the numbers differ (by ~1e-3 at 200 x 30): not a difference of evaluation."""

from __future__ import annotations

import argparse
import csv
import os
import random
import tempfile
from pathlib import Path
from typing import Any

from mteb_parity_cli import ROOT, bundled_model, mteb_retrieval_means, print_differences, run_imported, specrun

TASK = "AskUbuntuDupQuestions"
SCORES = {"map_at_1000": "map_cut_1000", "ndcg_at_10": "ndcg_cut_10"}  # MTEB key -> pytrec_eval measure


def snapshot_rows(data_dir: Path, queries: int, candidates: int,
                  duplicates: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The four configs' rows, drawn from the STS Benchmark test pairs (seeded), every document text once unless
    `duplicates`."""
    with (data_dir / "stsb" / "sts-test.csv").open(encoding="utf-8") as handle:
        pairs = [(float(row[4]), row[5], row[6]) for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
                 if len(row) >= 7]
    rng = random.Random(7)
    first = {text: i for i, (_, _, text) in reversed(list(enumerate(pairs)))}  # each text's first row
    chosen = rng.sample(range(len(pairs)) if duplicates else sorted(first.values()), queries * 3)
    corpus = {f"d{i}": pairs[i][2] for i in chosen}
    rows: dict[str, list[dict[str, Any]]] = {"queries": [], "default": [], "top_ranked": []}
    for number, i in enumerate(chosen[:queries]):
        query_id, grade = f"q{i}", (2 if pairs[i][0] >= 4 else 1 if pairs[i][0] >= 2 else 0)
        others = rng.sample([f"d{j}" for j in chosen if j != i], candidates - 1)
        judged = {f"d{i}": grade, **{doc: rng.choice((0, 0, 1, 2)) for doc in others[:4]}}
        listed = [f"d{i}", *others]
        if duplicates and number % 5 == 0:  # an exact tie: the same text under another id, judged 0
            corpus[f"d{i}x"] = pairs[i][2]
            judged[f"d{i}x"] = 0
            listed[-1] = f"d{i}x"
        if number % 7 == 0:  # relevant, but not among the candidates
            judged[listed.pop()] = 1
        rng.shuffle(listed)
        rows["queries"].append({"_id": query_id, "text": pairs[i][1]})
        rows["default"] += [{"query-id": query_id, "corpus-id": doc, "score": score} for doc, score in judged.items()]
        rows["top_ranked"].append({"query-id": query_id, "corpus-ids": listed})
    rows["corpus"] = [{"_id": doc, "title": "", "text": text} for doc, text in corpus.items()]
    return rows


def write_snapshot(folder: Path, rows: dict[str, list[dict[str, Any]]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = ["---", "configs:"]
    for name, part in rows.items():
        (folder / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(part), folder / name / "test.parquet")
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: {name}/test.parquet"]
    (folder / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")


def specrun_scores(work: Path, data: Path, model: str) -> dict[str, float]:
    (spec,) = specrun("import", "mteb", TASK, "-o", str(work / "specs")).split()
    return run_imported(work, data, model, spec, ["map_at_1000", "mrr_at_10", "ndcg_at_10"])


def mteb_scores(snapshot: Path, model: str) -> tuple[dict[str, float], float]:
    """MTEB's unrounded means (per-query pytrec_eval scores, its own MRR) and its reported main score."""
    return mteb_retrieval_means(snapshot, model, TASK, SCORES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50, help="queries (default 50)")
    parser.add_argument("--candidates", type=int, default=20, help="candidates per query (default 20)")
    parser.add_argument("--duplicates", action="store_true", help="keep repeated texts: exact ties (docstring)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    args.model = args.model or bundled_model()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # no earlier run's rows for a folder like this
        snapshot = work / "data" / "askubuntudupquestions"
        write_snapshot(snapshot, snapshot_rows(args.data_dir, args.queries, args.candidates, args.duplicates))
        theirs, reported = mteb_scores(snapshot, args.model)
        ours = specrun_scores(work, work / "data", args.model)
    print(f"{TASK} on a {args.queries} x {args.candidates} snapshot from STS Benchmark (specrun {ours.pop('n')} "
          f"queries, MTEB {theirs.pop('n')}); MTEB's reported main score {reported:.5f}")
    return print_differences(ours, theirs, 12)


if __name__ == "__main__":
    raise SystemExit(main())
