"""An imported BitextMining spec beside MTEB 2.x's own task class, on the same local hub snapshot and model.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    PYTHONPATH=src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python bench/mteb_parity_bitext_import.py \
        [--rows 300] [--model DIR] [--data-dir ../shared/data]
It writes a hub-style snapshot of MTEB's Tatoeba (fast-loading: one default config whose rows carry `lang`) from the
LASER files in <data-dir>/tatoeba/ (the first --rows lines of deu-eng and of fra-eng; sentence1 the other
language, sentence2 English, as the hub data), then scores each subset twice with all-MiniLM-L6-v2:
  - specrun: `specrun import mteb`'s spec of Tatoeba restricted to that subset (the importer's own `restricted`,
    as a benchmark taking one subset gets it), fingerprinted on the snapshot and run with `--model`;
  - MTEB: its real Tatoeba class (mteb.get_task, both subsets), its dataset path pointed at the snapshot, loaded by
    its own fast_load and scored by AbsTaskBitextMining.evaluate on SentenceTransformerEncoderWrapper.
Prints both numbers per measure (f1, the main score; accuracy; precision; recall) and their difference; exit 1
when one differs by more than 1e-6. Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from mteb_parity_cli import ROOT, bundled_model, specrun

TASK = "Tatoeba"
SUBSETS = ("deu-eng", "fra-eng")
SCORES = ("f1", "accuracy", "precision", "recall")  # MTEB's keys; the imported spec names its metrics the same


def write_snapshot(data_dir: Path, folder: Path, rows: int) -> None:
    """MTEB's tatoeba-bitext-mining layout: README `configs:` and one test parquet, columns sentence1, sentence2,
    lang."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table: dict[str, list[str]] = {"sentence1": [], "sentence2": [], "lang": []}
    for subset in SUBSETS:
        other = subset.split("-")[0]
        lines = {side: (data_dir / "tatoeba" / f"tatoeba.{subset}.{side}").read_text(encoding="utf-8").splitlines()
                 for side in (other, "eng")}
        table["sentence1"] += lines[other][:rows]
        table["sentence2"] += lines["eng"][:rows]
        table["lang"] += [subset] * rows
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.table(table), folder / "data" / "test.parquet")
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                      "    path: data/test.parquet\n---\n", encoding="utf-8")


def specrun_scores(work: Path, data: Path, model: str, subset: str) -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "src"))
    from specrun.mteb.catalogue import load
    from specrun.mteb.import_subset import restricted
    from specrun.mteb.importer import spec_text

    catalogue = load()
    spec = work / f"specs-{subset}" / "tatoeba.yaml"
    spec.parent.mkdir()
    spec.write_text(spec_text(restricted(catalogue.task(TASK), subset), catalogue.provenance.mteb_version),
                    encoding="utf-8")
    cache = str(work / "cache")
    specrun("fingerprint", str(spec), "--data-dir", str(data), "--cache-dir", cache, "--write")
    path = specrun(str(spec), "--data-dir", str(data), "--model", model, "--cache-dir", cache,
                   "--output", str(work / f"runs-{subset}"), "-q")
    scores = json.loads(Path(path.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]
    return {name: float(scores[name]["value"]) for name in SCORES} | {"n": scores["f1"]["n"]}


def mteb_scores(snapshot: Path, model: str) -> dict[str, dict[str, float]]:
    import datasets
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    datasets.disable_progress_bars()
    task = mteb.get_task(TASK, hf_subsets=list(SUBSETS))
    revision = task.metadata.dataset["revision"]
    task.metadata.dataset = {"path": str(snapshot), "revision": revision}  # the local copy, read as the hub's
    task.load_data()
    found = task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test",
                          encode_kwargs={"batch_size": 32})
    return {subset: {name: float(found[subset][name]) for name in SCORES} for subset in SUBSETS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300, help="lines of each language pair (default 300)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    args.model = args.model or bundled_model()
    worst = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # no earlier run's rows for a folder like this
        write_snapshot(args.data_dir, work / "data" / "tatoeba", args.rows)
        theirs = mteb_scores(work / "data" / "tatoeba", args.model)
        for subset in SUBSETS:
            ours = specrun_scores(work, work / "data", args.model, subset)
            print(f"{TASK} {subset} ({ours.pop('n')} pairs):")
            for name in SCORES:
                difference = ours[name] - theirs[subset][name]
                worst = max(worst, abs(difference))
                print(f"  {name:10s} specrun {ours[name]:.10f}  mteb {theirs[subset][name]:.10f}  "
                      f"difference {difference:.1e}")
    print(f"largest difference {worst:.1e}")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
