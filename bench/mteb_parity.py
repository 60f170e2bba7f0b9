"""specrun and MTEB's own evaluators side by side, on the same data and the same vectors.

Two environments, because MTEB is never a dependency of specrun:

  1. specrun's (the project's .venv): run each spec with the real model and write its vectors and numbers
         .venv/bin/python bench/mteb_parity.py specrun --work /tmp/parity [--data-dir ../shared/data]
  2. a side environment with MTEB (`python -m venv /tmp/mteb && /tmp/mteb/bin/pip install torch==2.13.0 mteb`):
     MTEB's AbsTaskClassification, AbsTaskBitextMining, AbsTaskPairClassification and AbsTaskClusteringLegacy as
     local tasks whose load_data reads the mirror files (read here with the csv module, labels as sorted integers,
     not through specrun's readers), scored on an encoder that returns specrun's vectors for each text
         /tmp/mteb/bin/python bench/mteb_parity.py mteb --work /tmp/parity [--data-dir ../shared/data]

Step 2 prints both numbers per measure and their difference, and writes parity.json into the work folder.
Figures are in BENCHMARKS.md. Nothing here is installed into the package or imported by its tests."""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPECS = {"banking77": "specs/banking77.yaml", "tatoeba": "specs/tatoeba.yaml",
         "jsick": "specs/jsick-pairs.yaml", "masakhanews": "specs/masakhanews-s2s.yaml"}
# (MTEB's score name, the spec's metric id, the tolerance the issue sets) per spec
PAIRS = {"banking77": [("accuracy", "accuracy", 1e-6), ("f1", "f1_macro", 1e-6), ("f1_weighted", "f1_weighted", 1e-6)],
         "tatoeba": [("f1", "f1", 1e-6), ("accuracy", "accuracy", 1e-6), ("precision", "precision", 1e-6)],
         "jsick": [("cosine_ap", "ap", 1e-9), ("max_ap", "max_ap", 1e-9)],
         "jsick-scores": [("cosine_ap", "ap", 1e-9), ("max_ap", "max_ap", 1e-9)],
         "masakhanews": [("v_measure", "v_measure", 1e-9)]}
# the MTEB numbers that are not expected to equal specrun's to the tolerance, and why
EXPLAINED = {"jsick": "MTEB's similarities are float32 (and unrounded): equal cosines land in an order set by "
                      "rounding noise; specrun's float64 cosines rounded to 12 digits keep them tied",
             "masakhanews": "run 0 of specrun (seed 42) against MTEB's one run; the reported value is the mean "
                            "of 10 runs"}
SUBSETS = {"tatoeba": "jpn-eng"}  # MTEB's Tatoeba subset compared; the spec holds three


def run_id(name: str) -> str:
    """The folder a spec's run lands in under runs/: its stem, or <stem>.<subset> for a spec with subsets."""
    stem = Path(SPECS[name]).stem
    return f"{stem}.{SUBSETS[name]}" if name in SUBSETS else stem


PUBLISHED = {("banking77", "accuracy"): 0.8004221, ("tatoeba", "f1"): 0.0096963}  # mteb 1.12.75 results


# ------------------------------------------------------------------------------------------ step 1: specrun side

def specrun_side(work: Path, data_dir: Path) -> None:
    """Each spec run by specrun's CLI (real model, one cache), then every text of its splits embedded again through
    the same cache (hits: the very vectors the run scored) and written to vectors.npz."""
    from rich.console import Console

    from specrun.cli import build_parser, run_options
    from specrun.core.types import View
    from specrun.core.workspace import Workspace
    from specrun.data import load_data
    from specrun.encoders.cached import CachedEncoder
    from specrun.encoders.models import resolve_model
    from specrun.plan import make_plan
    from specrun.spec import load_spec, subset_specs

    cache = work / "cache"
    texts: dict[View, list[str]] = {}  # each text in the view its spec embeds it in (bitext sides: documents)
    for name, spec in SPECS.items():
        command = [sys.executable, "-m", "specrun", str(ROOT / spec), "--data-dir", str(data_dir), "--output",
                   str(work / "runs"), "--cache-dir", str(cache), "--name", "parity", "-q",
                   *(["--subsets", SUBSETS[name]] if name in SUBSETS else [])]
        subprocess.run(command, check=True, cwd=ROOT)
        plan = make_plan(subset_specs(load_spec(str(ROOT / spec)), [SUBSETS[name]] if name in SUBSETS else None)[0])
        loaded = load_data(plan, data_dir, Workspace.resolve(str(cache), False))
        for view, text in loaded.texts:  # every text the protocols embed, fit and threshold splits included
            texts.setdefault(view, []).append(text)
        for split in loaded.splits.values():  # and every fit item, also those no experiment draws
            for item in split.items:
                for protocol in plan.protocols:
                    for field in protocol.entry.info.text_fields:
                        if isinstance(item.fields.get(field), str):
                            texts.setdefault(protocol.view(field), []).append(item.fields[field])
        print(f"{name}: specrun run written", file=sys.stderr)
    args = build_parser().parse_args(["run", str(ROOT / SPECS["banking77"]), "--cache-dir", str(cache), "-q"])
    options = run_options(args)
    workspace = Workspace.resolve(options.cache_dir, options.no_cache).check()
    model = resolve_model(options.model, options.model_revision, memo_dir=workspace.memo)
    by_view = {view: list(dict.fromkeys(values)) for view, values in texts.items()}
    embeddings = CachedEncoder(model, options.encoder, workspace, Console(stderr=True, quiet=True),
                               options.execution).embeddings(by_view)
    first_view = {}
    for view, values in by_view.items():
        for text in values:
            first_view.setdefault(text, view)
    unique = list(first_view)
    vectors = np.stack([embeddings.embed_view(first_view[text], [text])[0] for text in unique]) if unique else \
        np.empty((0, 0), dtype=np.float32)
    if embeddings.encoded():
        print(f"{len(embeddings.encoded())} texts no run embedded (fit items no experiment draws) encoded now",
              file=sys.stderr)
    np.savez(work / "vectors.npz", texts=np.array(unique, dtype=object), vectors=vectors)
    print(f"{len(unique)} vectors -> {work / 'vectors.npz'}", file=sys.stderr)
    (work / "per_run.json").write_text(json.dumps(per_run_values(work)), encoding="utf-8")


def per_run_values(work: Path) -> dict[str, dict[str, list[float]]]:
    """Each metric of each run on all units, one value per run (what the reported mean averages), from the
    predictions results.json pins; and the pair scores, for MTEB's own threshold and AP code."""
    from specrun.core.registry import METRICS
    from specrun.metrics.estimate import inputs, per_run_values
    from specrun.results.verify import load_verified

    out: dict[str, dict[str, list[float]]] = {}
    for name in SPECS:
        verified = load_verified(next((work / "runs" / run_id(name)).rglob("results.json")))
        for _unit, (_ids, arrays) in verified.units.items():
            values = out.setdefault(Path(SPECS[name]).stem, {})
            for metric_id, info in verified.results.metrics.items():
                metric = METRICS[info.metric]
                values[metric_id] = np.atleast_1d(per_run_values(metric, inputs(metric, arrays))).tolist()
            for key in ("cosine_score", "dot_score", "euclidean_score", "manhattan_score", "pair_label"):
                if key in arrays:
                    values[key] = arrays[key].tolist()
    return out


# --------------------------------------------------------------------------------------------- step 2: MTEB side

def read_csv(path: Path, delimiter: str = ",") -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter))


def numbered(labels: list[str]) -> list[int]:
    order = {label: number for number, label in enumerate(sorted(set(labels)))}
    return [order[label] for label in labels]


def mteb_side(work: Path, data_dir: Path) -> dict[str, dict[str, float]]:
    import mteb
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.classification import AbsTaskClassification
    from mteb.abstasks.clustering_legacy import AbsTaskClusteringLegacy
    from mteb.abstasks.pair_classification import AbsTaskPairClassification
    from mteb.abstasks.text.bitext_mining import AbsTaskBitextMining
    from mteb.models.abs_encoder import AbsEncoder

    stored = np.load(work / "vectors.npz", allow_pickle=True)
    lookup = {text: row for row, text in enumerate(stored["texts"])}
    vectors = stored["vectors"]

    class StoredVectors(AbsEncoder):
        """specrun's vectors for each text MTEB asks for (a text specrun never embedded is an error)."""

        mteb_model_meta = None

        def __init__(self) -> None:
            self.asked = 0

        def encode(self, inputs, **kwargs):  # type: ignore[no-untyped-def]
            texts = [text for batch in inputs for text in batch["text"]]
            self.asked += len(texts)
            return vectors[[lookup[text] for text in texts]]

    def local(base: type, name: str, build) -> object:  # type: ignore[no-untyped-def]
        metadata = mteb.get_task(name).metadata
        langs = next(iter(metadata.eval_langs.values())) if isinstance(metadata.eval_langs, dict) else \
            metadata.eval_langs
        cls = type(f"Local{name}", (base,), {
            "metadata": metadata.model_copy(update={"name": f"Local{name}", "eval_langs": langs,
                                                    "dataset": {"path": "local/mirror", "revision": "local"}}),
            "load_data": lambda self, **kwargs: (setattr(self, "dataset", build()),
                                                 setattr(self, "data_loaded", True))})
        return cls()

    def banking() -> DatasetDict:
        train = read_csv(data_dir / "banking77" / "train.csv")
        test = read_csv(data_dir / "banking77" / "test.csv")
        order = {label: n for n, label in enumerate(sorted({row["category"] for row in train}))}
        return DatasetDict({split: Dataset.from_dict({"text": [r["text"] for r in rows],
                                                      "label": [order[r["category"]] for r in rows]})
                            for split, rows in (("train", train), ("test", test))})

    def tatoeba() -> DatasetDict:
        lines = [(data_dir / "tatoeba" / f"tatoeba.jpn-eng.{lang}").read_text(encoding="utf-8").split("\n")
                 for lang in ("jpn", "eng")]
        jpn, eng = (part[:-1] if part and part[-1] == "" else part for part in lines)
        return DatasetDict({"test": Dataset.from_dict({"sentence1": jpn, "sentence2": eng})})

    def jsick() -> DatasetDict:
        rows = [r for r in read_csv(data_dir / "jsick" / "jsick.tsv", "\t") if r["data"] == "test"]
        return DatasetDict({"test": Dataset.from_dict({
            "sentence1": [r["sentence_A_Ja"] for r in rows], "sentence2": [r["sentence_B_Ja"] for r in rows],
            "labels": [int(r["entailment_label_Ja"] == "entailment") for r in rows]})})

    def masakhanews() -> DatasetDict:
        rows = read_csv(data_dir / "masakhanews" / "eng" / "test.tsv", "\t")
        return DatasetDict({"test": Dataset.from_dict({"sentences": [[r["headline"] for r in rows]],
                                                       "labels": [numbered([r["category"] for r in rows])]})})

    tasks = {"banking77": local(AbsTaskClassification, "Banking77Classification", banking),
             "tatoeba": local(AbsTaskBitextMining, "Tatoeba", tatoeba),
             "jsick": local(AbsTaskPairClassification, "SprintDuplicateQuestions", jsick),
             "masakhanews": local(AbsTaskClusteringLegacy, "MasakhaNEWSClusteringS2S", masakhanews)}
    out = {}
    for name, task in tasks.items():
        model = StoredVectors()
        scores = task.evaluate(model, "test", encode_kwargs={"batch_size": 64})
        out[name] = {key: float(value) for key, value in next(iter(scores.values())).items()
                     if isinstance(value, (int, float))}
        print(f"{name}: MTEB asked for {model.asked} texts", file=sys.stderr)
    # MTEB's own AP and threshold code on specrun's per-pair scores: the measures, apart from the similarities
    per_run = json.loads((work / "per_run.json").read_text(encoding="utf-8"))["jsick-pairs"]
    labels = np.asarray(per_run["pair_label"], dtype=np.int64)
    on_scores = {function: tasks["jsick"]._compute_metrics_values(per_run[f"{function}_score"], labels, True)
                 for function in ("cosine", "dot", "euclidean", "manhattan")}
    out["jsick-scores"] = {"cosine_ap": on_scores["cosine"]["ap"],
                           "max_ap": max(values["ap"] for values in on_scores.values())}
    return out


def compare(work: Path, mteb_scores: dict[str, dict[str, float]]) -> list[dict[str, object]]:
    per_run = json.loads((work / "per_run.json").read_text(encoding="utf-8"))
    rows = []
    for name, pairs in PAIRS.items():
        spec_id = Path(SPECS[name.removesuffix("-scores")]).stem
        results = json.loads(next((work / "runs" / run_id(name.removesuffix("-scores"))).rglob("results.json"))
                             .read_text())
        for mteb_name, metric_id, tolerance in pairs:
            ours = results["scores"]["test"][metric_id]["value"]
            if name == "masakhanews":  # MTEB fits k-means once, seed 42: specrun's run 0
                ours = per_run[spec_id][metric_id][0]
            theirs = mteb_scores[name][mteb_name]
            what = "MTEB's code on specrun's scores" if name.endswith("-scores") else "MTEB end to end"
            rows.append({"spec": spec_id, "measure": metric_id, "compared": what, "specrun": ours, "mteb": theirs,
                         "difference": ours - theirs, "tolerance": tolerance,
                         "equal": abs(ours - theirs) <= tolerance, "published": PUBLISHED.get((name, mteb_name)),
                         "note": EXPLAINED.get(name, "")})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("side", choices=["specrun", "mteb"])
    parser.add_argument("--work", type=Path, required=True, help="folder shared by the two steps")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.side == "specrun":
        specrun_side(args.work, args.data_dir.resolve())
        return 0
    rows = compare(args.work, mteb_side(args.work, args.data_dir.resolve()))
    print(f"{'spec':<16} {'measure':<12} {'compared':<32} {'specrun':>13} {'MTEB':>13} {'difference':>10}  "
          "published")
    for row in rows:
        published = "" if row["published"] is None else f"{row['published']:.7f}"
        flag = "" if row["equal"] else ("  differs: see notes" if row["note"] else "  NOT EQUAL")
        print(f"{row['spec']:<16} {row['measure']:<12} {row['compared']:<32} {row['specrun']:>13.10f} "
              f"{row['mteb']:>13.10f} {row['difference']:>+10.2e}  {published}{flag}")
    for name, note in EXPLAINED.items():
        print(f"note, {Path(SPECS[name]).stem}: {note}")
    (args.work / "parity.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0 if all(row["equal"] or row["note"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
