"""MindSmallReranking's imported spec (corpus_reranking with option max_over_subqueries) beside MTEB 2.x's own task
class, on the same local hub snapshot and model.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_subqueries_import.py \
        [--groups 60] [--candidates 15] [--model DIR] [--data-dir ../shared/data]
It writes a hub-style snapshot in MTEB's MIND layout (README `configs:` corpus, queries, default (qrels) and
top_ranked, parquet) from the STS Benchmark test file in <data-dir>/stsb/: each group (a user, id `u<n>`) has one
to four subqueries `u<n>_<k>` (first sentences, its browsing history), each with its own candidate list drawn from
the group's pool (second sentences; the lists overlap, so a document's max over subqueries matters), and every
subquery carries the group's qrels (one to three clicked candidates 1, the others 0, as MIND's). Then the task is
scored twice with all-MiniLM-L6-v2:
  - specrun: `specrun import mteb MindSmallReranking`'s spec, fingerprinted on the snapshot, run with --model;
  - MTEB: its real MindSmallReranking class (mteb.get_task), its dataset path pointed at the snapshot, loaded by
    its own RetrievalDatasetLoader and scored by AbsTaskRetrieval.evaluate on SentenceTransformerEncoderWrapper,
    its task_specific_scores calling max_over_subqueries. MTEB rounds map and nDCG to 5 decimals in its result;
    the unrounded means of the merged queries' pytrec_eval scores (caught from max_over_subqueries' call of
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
from mteb_parity_reranking_import import write_snapshot

TASK = "MindSmallReranking"
PREFIX = "max_over_subqueries_"
SCORES = {"map_at_1000": "map_cut_1000", "ndcg_at_10": "ndcg_cut_10"}  # MTEB key -> pytrec_eval measure


def snapshot_rows(data_dir: Path, groups: int, candidates: int) -> dict[str, list[dict[str, Any]]]:
    """The four configs' rows, drawn from the STS Benchmark test pairs (seeded), every text once."""
    with (data_dir / "stsb" / "sts-test.csv").open(encoding="utf-8") as handle:
        pairs = [(row[5], row[6]) for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
                 if len(row) >= 7]
    rng = random.Random(11)
    firsts = list(dict.fromkeys(first for first, _ in pairs))
    seconds = [text for text in dict.fromkeys(second for _, second in pairs) if text not in set(firsts)]
    rng.shuffle(firsts)
    corpus = {f"n{i}": text for i, text in enumerate(seconds[:groups * candidates])}
    rows: dict[str, list[dict[str, Any]]] = {"queries": [], "default": [], "top_ranked": []}
    history = iter(firsts)
    for group in range(groups):
        pool = rng.sample(sorted(corpus), candidates)
        clicked = pool[:rng.randint(1, 3)]
        for k in range(rng.randint(1, 4)):
            query_id = f"u{group}_{k}"
            rows["queries"].append({"_id": query_id, "text": next(history)})
            rows["default"] += [{"query-id": query_id, "corpus-id": doc, "score": int(doc in clicked)}
                                for doc in pool]
            listed = rng.sample(pool, rng.randint(2, candidates))
            rows["top_ranked"].append({"query-id": query_id, "corpus-ids": listed})
    rows["corpus"] = [{"_id": doc, "title": "", "text": text} for doc, text in corpus.items()]
    return rows


def specrun_scores(work: Path, data: Path, model: str) -> dict[str, float]:
    (spec,) = specrun("import", "mteb", TASK, "-o", str(work / "specs")).split()
    return run_imported(work, data, model, spec, [PREFIX + name for name in ("map_at_1000", "mrr_at_10",
                                                                             "ndcg_at_10")])


def mteb_scores(snapshot: Path, model: str) -> tuple[dict[str, float], float]:
    """MTEB's unrounded means over the merged queries (pytrec_eval's, its own MRR) and its reported main score."""
    return mteb_retrieval_means(snapshot, model, TASK, SCORES, patched="retrieval_metrics", prefix=PREFIX)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=60, help="groups of subqueries (default 60)")
    parser.add_argument("--candidates", type=int, default=15, help="candidate pool per group (default 15)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    args.model = args.model or bundled_model()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # no earlier run's rows for a folder like this
        snapshot = work / "data" / "mindsmallreranking"
        rows = snapshot_rows(args.data_dir, args.groups, args.candidates)
        write_snapshot(snapshot, rows)
        theirs, reported = mteb_scores(snapshot, args.model)
        ours = specrun_scores(work, work / "data", args.model)
    print(f"{TASK} on {args.groups} groups ({len(rows['queries'])} subqueries) x {args.candidates} candidates from "
          f"STS Benchmark (specrun {ours.pop('n')} merged queries, MTEB {theirs.pop('n')}); MTEB's reported main "
          f"score {reported:.5f}")
    return print_differences(ours, theirs, 32)


if __name__ == "__main__":
    raise SystemExit(main())
