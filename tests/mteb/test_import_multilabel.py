"""`specrun import mteb` of MTEB's MultilabelClassification tasks: AbsTaskMultilabelClassification's
k-nearest-neighbour probe as a `multilabel_classification` spec with MTEB's options; what the kind cannot say (a draw
MTEB's one Generator carries across subsets, an evaluated split it cuts to max_eval_samples, a fit split that is
evaluated) refused by name. End to end on a hub-style snapshot with the hashing adapter, checked against MTEB's
algorithm written out here; parity with MTEB's own class and the real model: bench/mteb_parity_multilabel_import.py."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.importer import coverage
from tests.conftest import ROOT, assert_one_line_error, run_cli
from tests.mteb.snapshots import hub_snapshot

FIXTURE = ROOT / "tests" / "protocols" / "multilabel"


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], task: str) -> tuple[Path, dict[str, Any]]:
    code, out, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    path = Path(out.strip())
    return path, load_plain(path.read_text(encoding="utf-8"))


def _rows(split: str) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in (FIXTURE / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]
    return [*found, {"text": f"an unrelated note of the {split} split", "labels": []}]  # MTEB's rows without labels


def _snapshot(folder: Path) -> None:
    """CEDRClassification's layout: README `configs:`, train and test parquet, `text` and a list `label`."""

    hub_snapshot(folder, {split: {"text": [r["text"] for r in rows], "label": [r["labels"] for r in rows]}
                          for split in ("train", "test") for rows in [_rows(split)]})


def _mteb_reference() -> dict[str, float]:
    """MTEB's AbsTaskMultilabelClassification._evaluate_subset written out on the hashing vectors: one Generator
    seeded 42 shuffles a fresh index list per experiment (`_undersample_data_indices`), MultiLabelBinarizer fitted
    on the evaluated labels, KNeighborsClassifier(5), subset accuracy and macro F1 averaged over 10 experiments."""
    from sklearn.metrics import f1_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MultiLabelBinarizer

    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    fit, test = _rows("train"), _rows("test")
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    fit_x, test_x = (np.asarray(adapter.encode_group([r["text"] for r in rows], 32)) for rows in (fit, test))
    rng = np.random.default_rng(42)
    binarizer = MultiLabelBinarizer()
    y_test = binarizer.fit_transform([r["labels"] for r in test])
    accuracy, f1 = [], []
    for _ in range(10):
        order = list(np.arange(len(fit)))
        rng.shuffle(order)
        taken: defaultdict[str, int] = defaultdict(int)
        chosen = []
        for i in order:
            if any(taken[label] < 8 for label in fit[i]["labels"]):
                chosen.append(i)
                for label in fit[i]["labels"]:
                    taken[label] += 1
        model = KNeighborsClassifier(n_neighbors=5).fit(
            fit_x[chosen], binarizer.transform([fit[i]["labels"] for i in chosen]))
        accuracy.append(model.score(test_x, y_test))
        f1.append(f1_score(y_test, model.predict(test_x), average="macro"))
    return {"multilabel_accuracy": float(np.mean(accuracy)), "multilabel_f1_macro": float(np.mean(f1))}


def test_a_plain_task_imports_with_mtebs_probe_and_runs_as_its_algorithm(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path, spec = _import(tmp_path, capsys, "CEDRClassification")
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert code == 0 and ": ok (" in out + err, err
    (protocol,) = spec["protocols"].values()
    assert protocol["kind"] == "multilabel_classification"
    assert protocol["options"] == {"fit_split": "train", "samples_per_label": 8, "n_experiments": 10, "k": 5,
                                   "seed": 42}
    assert {name: (m["mteb"]["score"], m["mteb"].get("main", False)) for name, m in spec["metrics"].items()} == {
        "multilabel_accuracy": ("accuracy", True), "multilabel_f1_macro": ("f1", False), "lrap": ("lrap", False),
        "hamming": ("hamming", False)}
    (source,) = spec["sources"].values()
    assert source["splits"] == ["test", "train"] and source["columns"] == {"text": "text", "labels": "label"}
    assert spec["splits"]["train"]["evaluate"] is False
    assert spec["splits"]["test"]["expect"]["n"] == catalogue.task("CEDRClassification").stats["test"]["num_samples"]
    _snapshot(tmp_path / "data" / "cedrclassification")
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(tmp_path / "data"), "--write"], capsys)
    assert code == 0, err
    code, out, err = run_cli([str(path), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing",
                              "--output", str(tmp_path / "runs"), "-q"], capsys)
    assert code == 0, err
    scores = json.loads(Path(out.strip()).read_text(encoding="utf-8"))["scores"]["test"]
    assert scores["multilabel_accuracy"]["n"] == 31
    for name, value in _mteb_reference().items():
        assert scores[name]["value"] == pytest.approx(value, abs=1e-12), name


@pytest.mark.parametrize(("task", "reason"), [
    ("EmotionAnalysisPlus.v2", "30 hf_subsets drawn from one Generator"),
    ("VABBMultiLabelClassification.v2", "max_eval_samples 3000 < the 3,235 rows of eval split 'test'"),
    ("EmitClassification", "a custom dataset_transform")])
def test_a_multilabel_task_the_kind_cannot_say_is_refused_by_name(
        task: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert_one_line_error(code, err, contains=f"{task}: {reason}")
    assert not (tmp_path / "imported").exists()


def test_the_active_multilabel_tasks_that_import() -> None:
    tasks = [task for task in catalogue.load().tasks.values()
             if task.type == "MultilabelClassification" and task.is_active_text]
    found = coverage(tasks)["MultilabelClassification"]
    assert (found["tasks"], found["imports"]) == (len(tasks), 5) == (13, 5)
