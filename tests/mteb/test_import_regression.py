"""`specrun import mteb` of MTEB's Regression tasks: AbsTaskRegression's LinearRegression as a `regression` spec.
MTEB fits each experiment on n_samples (2,048) rows drawn stratified by binned value (pandas' qcut, datasets'
train_test_split with seed 42 + experiment), which the kind draws as `draw: binned`: both active tasks (fit
splits of 164,037 rows per subset) import so. A task whose fit split is no larger than n_samples fits every
experiment on the whole split, which the kind says as `n_samples: all`. Both paths run end to end here on one of
them made small (its statistics and n_samples shrunk), checked against MTEB's computation written out on the
hashing vectors (bench/mteb_parity_regression_import.py runs MTEB's own task class)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.import_subset import restricted
from specrun.mteb.importer import coverage, refusals, spec_text
from specrun.protocols.regression import RegressionOptions, subsamples
from tests.conftest import run_cli

TASK, SUBSET = "RuSciBenchYearPublRegression", "yearpubl_en"
TOPICS = ["graphs", "proteins", "glaciers", "markets", "lasers", "soils", "poems", "bridges"]


def _small_task(train: int, test: int, n_samples: int = 2048) -> catalogue.Task:
    """The task restricted to one subset, its statistics saying the subset's splits hold train and test rows."""
    task = catalogue.task(TASK)
    stats = copy.deepcopy(task.stats)
    for split, rows in (("train", train), ("test", test)):
        stats[split]["hf_subset_descriptive_stats"][SUBSET]["num_samples"] = rows
    attributes = task.attributes | {"n_samples": n_samples}
    return restricted(task.model_copy(update={"stats": stats, "attributes": attributes}), SUBSET)


def _rows(count: int, offset: int) -> list[dict[str, Any]]:
    return [{"text": f"a study of {TOPICS[n % 8]} number {n + offset} from year {2007 + (n * 7) % 16}",
             "value": float(2007 + (n * 7) % 16)} for n in range(count)]


def _snapshot(folder: Path, splits: dict[str, list[dict[str, Any]]]) -> None:
    """The subset's hub config, as `datasets` reads it offline."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / SUBSET).mkdir(parents=True)
    for split, rows in splits.items():
        pq.write_table(pa.Table.from_pylist(rows), folder / SUBSET / f"{split}.parquet")
    (folder / "README.md").write_text(f"---\nconfigs:\n- config_name: {SUBSET}\n  data_files:\n" + "".join(
        f"  - split: {split}\n    path: {SUBSET}/{split}.parquet\n" for split in splits) + "---\n", encoding="utf-8")


def _mteb_draw(fit: list[dict[str, Any]], n_samples: int, seed: int) -> list[int]:
    """AbsTaskRegression._undersample_data and stratified_subsampling, written out: the rows tagged with their
    position, the values cut into 10 quantile bins, datasets' stratified train_test_split's test part."""
    import datasets
    import pandas as pd

    indexed = datasets.Dataset.from_list(fit).add_column("__idx__", list(range(len(fit))))
    binned = pd.qcut(indexed["value"], q=10, labels=False, duplicates="drop")
    with_bins = indexed.add_column("value_binned_for_stratification", binned.tolist()).cast_column(
        "value_binned_for_stratification", datasets.ClassLabel(names=np.unique(binned).tolist()))
    kept = with_bins.train_test_split(test_size=n_samples, seed=seed,
                                      stratify_by_column="value_binned_for_stratification")["test"]
    return list(kept["__idx__"])


def _reference(fit: list[dict[str, Any]], test: list[dict[str, Any]], draws: list[list[int]] | None = None) -> float:
    """AbsTaskRegression: LinearRegression on each experiment's fit rows (every row where n_samples covers them),
    scipy's kendalltau of its predictions against the values, the mean over the experiments."""
    from scipy.stats import kendalltau
    from sklearn.linear_model import LinearRegression

    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    fit_x, test_x = (np.asarray(adapter.encode_group([r["text"] for r in rows], 32)) for rows in (fit, test))
    values = np.array([r["value"] for r in fit])
    taus = [kendalltau([r["value"] for r in test],
                       LinearRegression().fit(fit_x[rows], values[rows]).predict(test_x)).statistic
            for rows in (draws or [list(range(len(fit)))])]
    return float(np.mean(taus))


def _imported(task: catalogue.Task, folder: Path) -> tuple[Path, dict[str, Any]]:
    folder.mkdir()
    path = folder / "task.yaml"
    path.write_text(spec_text(task, "2.26.24"), encoding="utf-8")
    return path, load_plain(path.read_text(encoding="utf-8"))


def _run(path: Path, spec: dict[str, Any], splits: dict[str, list[dict[str, Any]]], tmp_path: Path,
         capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The spec run end to end with the hashing adapter on a snapshot of the splits: its kendall_tau score."""
    _snapshot(tmp_path / "data" / spec["id"], splits)
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(tmp_path / "data"), "--write"], capsys)
    assert code == 0, err
    code, out, err = run_cli([str(path), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing",
                              "--output", str(tmp_path / "runs"), "-q"], capsys)
    assert code == 0, err
    return json.loads(Path(out.strip()).read_text(encoding="utf-8"))["scores"]["test"]["kendall_tau"]


def test_a_fit_split_within_n_samples_imports_as_one_fit_on_all_of_it(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    task = _small_task(train=120, test=40)
    assert refusals(task) == []
    path, spec = _imported(task, tmp_path / "specs")
    (protocol,) = spec["protocols"].values()
    assert (protocol["kind"], protocol["options"]) == ("regression", {"fit_split": "train", "n_samples": "all",
                                                                      "n_experiments": 1})
    assert {name: (m["metric"], m["mteb"]["score"], m["mteb"]["subset"]) for name, m in spec["metrics"].items()} == \
        {"kendall_tau": ("kendall_tau", "kendalltau", SUBSET)}
    (source,) = spec["sources"].values()
    assert (source["config"], source["columns"]) == (SUBSET, {"text": "text", "target": "value"})
    fit, test = _rows(120, 0), _rows(40, 1000)
    score = _run(path, spec, {"train": fit, "test": test}, tmp_path, capsys)
    assert score["n"] == 40
    assert score["value"] == pytest.approx(_reference(fit, test), abs=1e-12)


def test_a_fit_split_larger_than_n_samples_imports_as_mteb_s_binned_draw(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    task = _small_task(train=300, test=40, n_samples=64)
    assert refusals(task) == []
    path, spec = _imported(task, tmp_path / "specs")
    (protocol,) = spec["protocols"].values()
    assert protocol["options"] == {"fit_split": "train", "n_samples": 64, "n_experiments": 10, "seed": 42,
                                   "draw": "binned", "bins": 10}
    fit, test = _rows(300, 0), _rows(40, 1000)
    draws = [_mteb_draw(fit, 64, 42 + run) for run in range(10)]
    ours = subsamples(np.array([r["value"] for r in fit]), RegressionOptions(**protocol["options"]))
    assert [drawn.tolist() for drawn in ours] == draws  # the same rows in the same order, experiment by experiment
    assert len({tuple(sorted(d)) for d in draws}) == 10
    score = _run(path, spec, {"train": fit, "test": test}, tmp_path, capsys)
    assert score["n"] == 40
    assert score["value"] == pytest.approx(_reference(fit, test, draws), abs=1e-12)


def test_the_active_regression_tasks_import_with_the_binned_draw(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    tasks = [task for task in catalogue.load().tasks.values() if task.type == "Regression" and task.is_active_text]
    found = coverage(tasks)["Regression"]
    assert (found["tasks"], found["imports"]) == (len(tasks), len(tasks)) == (2, 2)
    code, _, err = run_cli(["import", "mteb", TASK, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    (written,) = (tmp_path / "imported").glob("*.yaml")
    (protocol,) = load_plain(written.read_text(encoding="utf-8"))["protocols"].values()
    assert protocol["options"]["draw"] == "binned" and protocol["options"]["n_samples"] == 2048
