"""An imported Regression spec (MTEB's binned draw of its fit rows) beside MTEB 2.x's own task class, on the same
local hub snapshot and model.

MTEB is never a dependency: run this with the side environment's Python and specrun's source on the path,
    cd bench && PYTHONPATH=../src HF_DATASETS_OFFLINE=1 /work/mteb-venv/bin/python mteb_parity_regression_import.py \
        [--train 2600] [--test 200] [--model DIR]
It writes a hub-style snapshot of RuSciBenchYearPublRegression's subset yearpubl_en (README `configs:`, train and
test parquet, columns `text` and `value`): synthetic sentences whose topic words drift with a year from 2007 to
2022 (no dataset is bundled for this type), more fit rows than MTEB's n_samples (2,048), so that each experiment
draws. Then:
  - the drawn rows: MTEB's own AbsTaskRegression._undersample_data on its loaded train split, experiment by
    experiment, against the regression kind's `subsamples` with the imported spec's options (same rows, same
    order);
  - the scores, with all-MiniLM-L6-v2: `specrun import mteb`'s spec restricted to the subset (the importer's
    `restricted`), rmse, mae and r2 added beside its kendall_tau, fingerprinted on the snapshot and run with
    `--model`; and MTEB's real task class (mteb.get_task, that subset), its dataset path pointed at the snapshot,
    loaded by its own load_data and scored by AbsTaskRegression.evaluate (10 experiments of 2,048 rows, seed 42 +
    experiment, LinearRegression) on SentenceTransformerEncoderWrapper.
Prints both numbers per measure (kendalltau, the main score; rmse; mae; r2; not mse: MTEB's is the mean of each
experiment's, which no mean of rmse gives) and their difference; exit 1 when a draw differs or the main score by
more than 1e-6. The errors differ by about 1e-6 relative: specrun's encoder and MTEB's wrapper give float32 vectors
equal only to their last bits, and scikit-learn's LinearRegression fits float32 vectors in float32, which moves
each prediction by about that much, not their order (sentence-transformers' own vectors of the fit texts encoded
in one call or in two move this MAE by 2e-6 alone). On the same vectors the numbers are equal (the tests compare
the spec's run with MTEB's computation written out on the hashing vectors to 1e-12).
Figures in BENCHMARKS.md."""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
from pathlib import Path

import yaml
from mteb_parity_cli import bundled_model, specrun

TASK, SUBSET = "RuSciBenchYearPublRegression", "yearpubl_en"
EXTRA = {"rmse": ("lower", [0.0, 1.0e6]), "mae": ("lower", [0.0, 1.0e6]), "r2": ("higher", [-1.0e6, 1.0])}
ERAS = [["a survey of", "notes on", "early results on", "a first look at"],
        ["a study of", "an analysis of", "experiments with", "a model of"],
        ["deep learning for", "a neural approach to", "transformers for", "large models of"]]
TOPICS = ["graphs", "proteins", "glaciers", "markets", "lasers", "soils", "poems", "bridges", "rivers", "engines"]


def rows(count: int, rng: random.Random, offset: int) -> list[dict]:
    """A year from 2007 to 2022 and a sentence whose opening words lean to the era of that year."""
    out = []
    for n in range(count):
        year = rng.randint(2007, 2022)
        era = min(2, max(0, (year - 2007) // 6 + rng.choice([-1, 0, 0, 0, 1])))
        out.append({"text": f"{rng.choice(ERAS[era])} {rng.choice(TOPICS)} and {rng.choice(TOPICS)}, "
                            f"paper {n + offset}", "value": float(year)})
    return out


def write_snapshot(folder: Path, train: int, test: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(20261006)
    (folder / SUBSET).mkdir(parents=True)
    for split, count, offset in (("train", train, 0), ("test", test, train)):
        pq.write_table(pa.Table.from_pylist(rows(count, rng, offset)), folder / SUBSET / f"{split}.parquet")
    (folder / "README.md").write_text(f"---\nconfigs:\n- config_name: {SUBSET}\n  data_files:\n" + "".join(
        f"  - split: {split}\n    path: {SUBSET}/{split}.parquet\n" for split in ("train", "test")) + "---\n",
        encoding="utf-8")


def imported_spec(work: Path) -> Path:
    """The importer's spec of the subset, with rmse, mae and r2 beside kendall_tau (no `mteb:` counterpart)."""
    from specrun.mteb import catalogue
    from specrun.mteb.import_subset import restricted
    from specrun.mteb.importer import spec_text

    spec = yaml.safe_load(spec_text(restricted(catalogue.task(TASK), SUBSET), catalogue.load().provenance.mteb_version))
    for name, (direction, bounds) in EXTRA.items():
        spec["metrics"][name] = {"metric": name, "protocol": "probe", "label": name, "direction": direction,
                                 "range": bounds}
    path = work / "specs" / f"{spec['id']}.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def specrun_draws(spec: Path, train: Path) -> list[list[int]]:
    import numpy as np
    import pyarrow.parquet as pq

    from specrun.protocols.regression import RegressionOptions, subsamples

    (protocol,) = yaml.safe_load(spec.read_text(encoding="utf-8"))["protocols"].values()
    values = np.asarray(pq.read_table(train).column("value").to_pylist(), dtype=np.float64)
    return [drawn.tolist() for drawn in subsamples(values, RegressionOptions(**protocol["options"]))]


def specrun_scores(work: Path, spec: Path, model: str) -> dict[str, float]:
    cache = str(work / "cache")
    specrun("fingerprint", str(spec), "--data-dir", str(work / "data"), "--cache-dir", cache, "--write")
    found = specrun(str(spec), "--data-dir", str(work / "data"), "--model", model, "--cache-dir", cache,
                    "--output", str(work / "runs"), "-q")
    scores = json.loads(Path(found.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]
    out = {name: float(scores[name]["value"]) for name in ("kendall_tau", *EXTRA)}
    return out | {"n": scores["kendall_tau"]["n"]}


def mteb_task_and_draws(snapshot: Path) -> tuple[object, list[list[int]]]:
    import datasets
    import mteb

    datasets.disable_progress_bars()
    task = mteb.get_task(TASK, hf_subsets=[SUBSET])
    task.metadata.dataset = {"path": str(snapshot), "revision": task.metadata.dataset["revision"]}
    task.load_data()
    train = task.dataset[SUBSET][task.train_split]
    return task, [list(task._undersample_data(train, run)[2]) for run in range(task.n_experiments)]


def mteb_scores(task: object, model: str) -> dict[str, float]:
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    found = task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test",
                          encode_kwargs={"batch_size": 32})[SUBSET]
    return {name: float(found[name]) for name in ("kendalltau", "rmse", "mae", "r2")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=2600, help="fit rows, above n_samples 2,048 (default 2600)")
    parser.add_argument("--test", type=int, default=200, help="evaluated rows (default 200)")
    parser.add_argument("--model", help="model folder (default: the bundled all-MiniLM-L6-v2)")
    args = parser.parse_args()
    model = args.model or bundled_model()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # no earlier run's rows for a folder like this
        snapshot = work / "data" / TASK.lower()
        write_snapshot(snapshot, args.train, args.test)
        spec = imported_spec(work)
        task, theirs_drawn = mteb_task_and_draws(snapshot)
        ours_drawn = specrun_draws(spec, snapshot / SUBSET / "train.parquet")
        same = sum(a == b for a, b in zip(ours_drawn, theirs_drawn, strict=True))
        print(f"{TASK} {SUBSET}: drawn fit rows identical (same rows, same order) in {same}/{len(theirs_drawn)} "
              f"experiments of {len(theirs_drawn[0])} rows from {args.train}")
        theirs = mteb_scores(task, model)
        ours = specrun_scores(work, spec, model)
    print(f"scores on {ours.pop('n')} evaluated texts:")
    worst = 0.0
    for mteb_name, name in (("kendalltau", "kendall_tau"), ("rmse", "rmse"), ("mae", "mae"), ("r2", "r2")):
        difference = ours[name] - theirs[mteb_name]
        worst = max(worst, abs(difference))
        print(f"  {mteb_name:10s} specrun {ours[name]:.12f}  mteb {theirs[mteb_name]:.12f}  "
              f"difference {difference:.1e}")
    main_score = abs(ours["kendall_tau"] - theirs["kendalltau"])
    print(f"largest difference {worst:.1e}; main score (kendalltau) {main_score:.1e}")
    return 0 if main_score <= 1e-6 and same == len(theirs_drawn) else 1


if __name__ == "__main__":
    raise SystemExit(main())
