"""An imported MultilabelClassification spec beside MTEB 2.x's own task class, on the same local hub snapshot and
model.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_multilabel_import.py \
        [--train 400] [--test 200] [--model DIR]
It writes a hub-style snapshot in the layout of MTEB's CEDRClassification (README `configs:`, train and test
parquet, columns `text` and `label`, a list of integer labels per row, some rows without any): synthetic sentences
made of one clause per label from a seeded generator (no dataset is bundled for this type). Then scores it twice
with all-MiniLM-L6-v2:
  - specrun: `specrun import mteb CEDRClassification`'s spec, fingerprinted on the snapshot, run with `--model`;
  - MTEB: its real CEDRClassification class (mteb.get_task), its dataset path pointed at the snapshot, loaded by
    its own load_data and scored by AbsTaskMultilabelClassification.evaluate (its 10 experiments, Generator
    seeded 42, KNeighborsClassifier) on SentenceTransformerEncoderWrapper.
Prints both numbers per measure (accuracy, the main score; f1; lrap; hamming) and their difference; exit 1 when one
differs by more than 1e-6. Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import warnings
from pathlib import Path

from mteb_parity_cli import bundled_model, specrun

TASK = "CEDRClassification"
PAIRS = (("accuracy", "multilabel_accuracy"), ("f1", "multilabel_f1_macro"), ("lrap", "lrap"),
         ("hamming", "hamming"))
CLAUSES = {0: ["she laughed at the joke", "the party was a delight", "we won the prize", "the sun came out again"],
           1: ["he cried all night", "the loss was hard to bear", "nobody called back", "the house felt empty"],
           2: ["the thunder startled everyone", "a door slammed without warning", "the news came out of nowhere",
               "the lights went out at once"],
           3: ["the rat in the kitchen was vile", "the smell made him gag", "the food had gone bad",
               "the rubbish piled up in the hall"],
           4: ["he shouted at the referee", "the delay made her furious", "they slammed the table",
               "the rude reply enraged him"]}
FILLER = ["the bus left at nine", "the report has ten pages", "a table stands by the window", "the shop opens daily"]


def rows(count: int, rng: random.Random) -> list[dict]:
    """Synthetic label sets (none, one or two of five labels) and a sentence of one clause per label."""
    out = []
    for n in range(count):
        labels = sorted(rng.sample(range(5), rng.choice([0, 1, 1, 1, 2])))
        parts = [rng.choice(CLAUSES[label]) for label in labels] or [rng.choice(FILLER)]
        out.append({"text": f"{'; '.join(parts)} (note {n}).", "label": labels})
    return out


def write_snapshot(folder: Path, train: int, test: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(20261006)
    (folder / "data").mkdir(parents=True)
    for split, count in (("train", train), ("test", test)):
        found = rows(count, rng)
        pq.write_table(pa.table({"text": [r["text"] for r in found], "label": [r["label"] for r in found]}),
                       folder / "data" / f"{split}.parquet")
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n" + "".join(
        f"  - split: {split}\n    path: data/{split}.parquet\n" for split in ("train", "test")) + "---\n",
        encoding="utf-8")


def specrun_scores(work: Path, model: str) -> dict[str, float]:
    path = Path(specrun("import", "mteb", TASK, "-o", str(work / "specs")))
    cache = str(work / "cache")
    specrun("fingerprint", str(path), "--data-dir", str(work / "data"), "--cache-dir", cache, "--write")
    found = specrun(str(path), "--data-dir", str(work / "data"), "--model", model, "--cache-dir", cache,
                    "--output", str(work / "runs"), "-q")
    scores = json.loads(Path(found.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]
    return {name: float(scores[name]["value"]) for _, name in PAIRS} | {"n": scores["multilabel_accuracy"]["n"]}


def mteb_scores(snapshot: Path, model: str) -> dict[str, float]:
    import datasets
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    datasets.disable_progress_bars()
    task = mteb.get_task(TASK)
    task.metadata.dataset = {"path": str(snapshot), "revision": task.metadata.dataset["revision"]}
    task.load_data()
    with warnings.catch_warnings():  # its hamming_score divides 0 by 0 for a row without labels, then masks it
        warnings.simplefilter("ignore", RuntimeWarning)
        found = task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test",
                              encode_kwargs={"batch_size": 32})["default"]
    return {name: float(found[name]) for name, _ in PAIRS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=400, help="fit rows (default 400)")
    parser.add_argument("--test", type=int, default=200, help="evaluated rows (default 200)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    args = parser.parse_args()
    model = args.model or bundled_model()
    worst = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # no earlier run's rows for a folder like this
        write_snapshot(work / "data" / TASK.lower(), args.train, args.test)
        theirs = mteb_scores(work / "data" / TASK.lower(), model)
        ours = specrun_scores(work, model)
        print(f"{TASK} on a synthetic snapshot ({ours.pop('n')} evaluated, {args.train} fit rows):")
        for mteb_name, name in PAIRS:
            difference = ours[name] - theirs[mteb_name]
            worst = max(worst, abs(difference))
            print(f"  {mteb_name:10s} specrun {ours[name]:.10f}  mteb {theirs[mteb_name]:.10f}  "
                  f"difference {difference:.1e}")
    print(f"largest difference {worst:.1e}")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
