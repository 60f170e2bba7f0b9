"""`specrun import mteb` of MTEB's Regression tasks: AbsTaskRegression's LinearRegression as a `regression` spec.
MTEB fits each experiment on n_samples (2,048) rows drawn stratified by binned value, which the kind does not
draw: both active tasks (fit splits of 164,037 rows per subset) are refused by name. A task whose fit split is no
larger than n_samples fits every experiment on the whole split, which the kind says as `n_samples: all`; that path
runs end to end here on one of them made small (its statistics shrunk), checked against MTEB's computation
written out on the hashing vectors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from specrun.mteb import catalogue
from specrun.mteb.import_subset import restricted
from specrun.mteb.importer import coverage, refusals, spec_text
from tests.conftest import assert_one_line_error, run_cli

TASK, SUBSET = "RuSciBenchYearPublRegression", "yearpubl_en"
TOPICS = ["graphs", "proteins", "glaciers", "markets", "lasers", "soils", "poems", "bridges"]


def _small_task(train: int, test: int) -> catalogue.Task:
    """The task restricted to one subset, its statistics saying the subset's splits hold train and test rows."""
    task = catalogue.task(TASK)
    stats = copy.deepcopy(task.stats)
    for split, rows in (("train", train), ("test", test)):
        stats[split]["hf_subset_descriptive_stats"][SUBSET]["num_samples"] = rows
    return restricted(task.model_copy(update={"stats": stats}), SUBSET)


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


def _reference(fit: list[dict[str, Any]], test: list[dict[str, Any]]) -> float:
    """AbsTaskRegression with n_samples >= the fit rows: LinearRegression on every fit row (each experiment the
    same), scipy's kendalltau of its predictions against the values."""
    from scipy.stats import kendalltau
    from sklearn.linear_model import LinearRegression

    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    fit_x, test_x = (np.asarray(adapter.encode_group([r["text"] for r in rows], 32)) for rows in (fit, test))
    model = LinearRegression().fit(fit_x, [r["value"] for r in fit])
    return float(kendalltau([r["value"] for r in test], model.predict(test_x)).statistic)


def test_a_fit_split_within_n_samples_imports_as_one_fit_on_all_of_it(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    task = _small_task(train=120, test=40)
    assert refusals(task) == []
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    path = spec_dir / "task.yaml"
    path.write_text(spec_text(task, "2.26.24"), encoding="utf-8")
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    (protocol,) = spec["protocols"].values()
    assert (protocol["kind"], protocol["options"]) == ("regression", {"fit_split": "train", "n_samples": "all",
                                                                      "n_experiments": 1})
    assert {name: (m["metric"], m["mteb"]["score"], m["mteb"]["subset"]) for name, m in spec["metrics"].items()} == \
        {"kendall_tau": ("kendall_tau", "kendalltau", SUBSET)}
    (source,) = spec["sources"].values()
    assert (source["config"], source["columns"]) == (SUBSET, {"text": "text", "target": "value"})
    fit, test = _rows(120, 0), _rows(40, 1000)
    _snapshot(tmp_path / "data" / spec["id"], {"train": fit, "test": test})
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(tmp_path / "data"), "--write"], capsys)
    assert code == 0, err
    code, out, err = run_cli([str(path), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing",
                              "--output", str(tmp_path / "runs"), "-q"], capsys)
    assert code == 0, err
    score = json.loads(Path(out.strip()).read_text(encoding="utf-8"))["scores"]["test"]["kendall_tau"]
    assert score["n"] == 40
    assert score["value"] == pytest.approx(_reference(fit, test), abs=1e-12)


def test_a_fit_split_larger_than_n_samples_is_refused_by_name(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert refusals(_small_task(train=2049, test=40)) == [
        "n_samples 2,048 < the 2,049 rows of fit split 'train' (MTEB draws them stratified by binned value, "
        "datasets' train_test_split with seed 42 + experiment; the kind does not)"]
    code, _, err = run_cli(["import", "mteb", TASK, "-o", str(tmp_path / "imported")], capsys)
    assert_one_line_error(code, err, contains=f"{TASK}: n_samples 2,048 < the 328,074 rows of fit split 'train'")
    assert not (tmp_path / "imported").exists()


def test_the_active_regression_tasks_that_import() -> None:
    tasks = [task for task in catalogue.load().tasks.values() if task.type == "Regression" and task.is_active_text]
    found = coverage(tasks)["Regression"]
    assert (found["tasks"], found["imports"]) == (len(tasks), 0) == (2, 0)
