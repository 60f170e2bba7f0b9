"""`mteb_retrieval` beside MTEB 2.x's own `RetrievalDatasetLoader`, on the same local dataset folders.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_loader.py
It writes small MTEB-layout repos (README `configs:` + data files) in a temporary folder, one per case: parquet,
jsonl, `<subset>-` configs, a `qrels` config in place of `default`, the single-split fallback, integer ids and
whole-float scores, titles, padded and empty texts, queries without qrels. Each is read twice: by specrun's reader
and by MTEB's loader (`RetrievalDatasetLoader(folder, revision, split, config).load()`, documents then turned into
the text MTEB embeds by its `_corpus_to_dict`). Compared: the documents (ids and texts, in order), the queries
kept (ids and texts, in order) and the qrels. Prints one line per case and `all equal` or what differs; exit 1 if
anything differs. `--specrun-only` reads the cases with specrun alone (no mteb installed)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

CORPUS = [{"_id": f"d{i}", "title": ["", "A title", "Another title "][i % 3],
           "text": [f"document {i}", f"  padded document {i} ", " "][(i // 3) % 3]} for i in range(14)]
QUERIES = [{"_id": f"q{i}", "text": f"query {i}" + (" " if i == 2 else "")} for i in range(6)]
QRELS = [{"query-id": "q4", "corpus-id": "d3", "score": 2}, {"query-id": "q0", "corpus-id": "d0", "score": 1},
         {"query-id": "q0", "corpus-id": "d11", "score": 0}, {"query-id": "q2", "corpus-id": "d7", "score": 1},
         {"query-id": "q5", "corpus-id": "d13", "score": 3}, {"query-id": "q2", "corpus-id": "d2", "score": 2}]
INT_CORPUS = [{"_id": i, "title": "", "text": f"numbered document {i}"} for i in range(8)]
INT_QRELS = [{"query-id": "q1", "corpus-id": i, "score": float(i % 3)} for i in (1, 2, 4, 5)]
CASES: dict[str, dict[str, Any]] = {
    "parquet": {},
    "jsonl": {"suffix": "jsonl"},
    "subset en-": {"prefix": "en-", "subset": "en"},
    "qrels config": {"qrels_config": "qrels"},
    "single-split fallback (dev from test)": {"splits": {"qrels": ["dev", "test"]}, "split": "dev"},
    "integer ids, float scores": {"parts": {"corpus": INT_CORPUS, "qrels": INT_QRELS}},
}


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=4)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def make_repo(root: Path, suffix: str = "parquet", prefix: str = "", qrels_config: str = "default",
              splits: dict[str, list[str]] | None = None, parts: dict[str, Any] | None = None, **_: Any) -> Path:
    parts = {"corpus": CORPUS, "queries": QUERIES, "qrels": QRELS, **(parts or {})}
    splits = {"corpus": ["test"], "queries": ["test"], "qrels": ["test"], **(splits or {})}
    lines = ["---", "configs:"]
    for part, rows in parts.items():
        lines += [f"- config_name: {prefix}{part}" if prefix or part != "qrels" else f"- config_name: {qrels_config}",
                  "  data_files:"]
        for split in splits[part]:
            relative = f"{prefix}{part}/{split}.{suffix}"
            write(root / relative, rows)
            lines += [f"  - split: {split}", f"    path: {relative}"]
    (root / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")
    return root


def specrun_side(folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    from specrun.readers.mteb_retrieval import read_mteb_retrieval

    class Layout:
        options = {"subset": case["subset"]} if "subset" in case else {}

    rows = read_mteb_retrieval(folder, Layout(), case.get("split", "test"))
    corpus = rows[0]["corpus"]
    return {"documents": [list(pair) for pair in corpus.rows()],
            "queries": [[row["query_id"], row["query"]] for row in rows],
            "qrels": {row["query_id"]: row["qrels"] for row in rows}}


def mteb_side(folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    import datasets
    from mteb._create_dataloaders import _corpus_to_dict

    datasets.disable_progress_bars()
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalDatasetLoader

    loaded = RetrievalDatasetLoader(hf_repo=str(folder), revision="main", split=case.get("split", "test"),
                                    config=case.get("subset")).load()
    documents = [[row["id"], _corpus_to_dict(row)["text"]] for row in loaded["corpus"]]
    queries = [[row["id"], row["text"]] for row in loaded["queries"]]
    qrels = {query: {doc: int(score) for doc, score in judged.items()}
             for query, judged in loaded["relevant_docs"].items()}
    return {"documents": documents, "queries": queries, "qrels": qrels}


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    found = [f"{key}: specrun {ours[key]!r:.160} != MTEB {theirs[key]!r:.160}"
             for key in ("documents", "queries") if ours[key] != theirs[key]]
    if ours["qrels"] != theirs["qrels"]:
        found.append(f"qrels: specrun {ours['qrels']!r:.160} != MTEB {theirs['qrels']!r:.160}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specrun-only", action="store_true", help="read the cases with specrun only (no mteb)")
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        # datasets' own cache would serve an earlier run's rows for a folder of the same shape: one of our own
        os.environ["HF_DATASETS_CACHE"] = str(Path(scratch) / "hf-cache")
        for number, (name, case) in enumerate(CASES.items()):
            folder = make_repo(Path(scratch) / f"case{number}", **case)
            ours = specrun_side(folder, case)
            summary = (f"{len(ours['documents'])} documents, {len(ours['queries'])} queries, "
                       f"{sum(map(len, ours['qrels'].values()))} judgments")
            if args.specrun_only:
                print(f"{name}: {summary} (specrun only)")
                continue
            found = differences(ours, mteb_side(folder, case))
            failed += bool(found)
            print(f"{name}: {summary}: " + ("equal" if not found else "; ".join(found)))
    if not args.specrun_only:
        print("all equal" if not failed else f"{failed} case(s) differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
