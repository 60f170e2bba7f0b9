"""`specrun import mteb` of MTEB's Classification tasks (issue 46): AbsTaskClassification's probe as a
`classification` spec with the options of the hand-written specs/banking77.yaml (which equals MTEB's published
Banking77 to 1e-6), the fit split read beside the eval split; what the kind does not do refused by name. The slow
test runs the imported Banking77Classification on a local hub-style snapshot built from the BANKING77 CSVs."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.importer import coverage
from tests.conftest import SPECS, assert_one_line_error, run_cli
from tests.mteb.snapshots import hub_snapshot

PUBLISHED = Path("mteb-results") / "sentence-transformers__all-MiniLM-L6-v2" / \
    "8b3219a92973c328a8e22fadcfa821b5dc75636a"
LOGISTIC = "sklearn.linear_model._logistic.LogisticRegression"
# the options that change numbers (short_classes only turns an error into MTEB's behaviour)
NUMERIC_OPTIONS = ("fit_split", "classifier", "samples_per_label", "n_experiments", "seed", "max_iter", "k")


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], task: str) -> tuple[Path, dict[str, Any]]:
    code, out, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    path = Path(out.strip())
    return path, load_plain(path.read_text(encoding="utf-8"))


def test_banking77_imports_as_the_hand_written_spec_scores_it(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path, spec = _import(tmp_path, capsys, "Banking77Classification")
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert code == 0 and ": ok (" in out + err, err
    ours = load_plain((SPECS / "banking77.yaml").read_text(encoding="utf-8"))
    assert {name: m["mteb"] for name, m in spec["metrics"].items()} == \
        {name: m["mteb"] for name, m in ours["metrics"].items()}
    assert {name: m["metric"] for name, m in spec["metrics"].items()} == \
        {name: m["metric"] for name, m in ours["metrics"].items()}
    (protocol,) = spec["protocols"].values()
    (hand,) = ours["protocols"].values()
    assert protocol["kind"] == hand["kind"] == "classification"
    assert {key: protocol["options"].get(key) for key in NUMERIC_OPTIONS} == \
        {key: hand["options"].get(key) for key in NUMERIC_OPTIONS}
    task = catalogue.task("Banking77Classification")
    (source,) = spec["sources"].values()
    assert (source["type"], source["path"], source["revision"]) == \
        ("hf_dataset", task.dataset.path, task.dataset.revision)
    assert source["splits"] == ["test", "train"] and source["columns"] == {"text": "text", "label": "label"}
    assert spec["splits"]["train"]["evaluate"] is False and "evaluate" not in spec["splits"]["test"]
    assert spec["subset"]["splits"] == {"test": "all"}
    stats = task.stats["test"]
    assert spec["splits"]["test"]["expect"]["fields"] == {
        "text": {"unique": stats["text_statistics"]["unique_texts"],
                 "characters": stats["text_statistics"]["total_text_length"]},
        "label": {"label_counts": [40] * 77}}
    assert "expect" not in spec["splits"]["train"]


@pytest.mark.parametrize(("task", "reason"), [
    ("AmazonCounterfactualVNClassification", "class attribute(s) num_samples"),
    ("RuToxicOKMLCUPMultilabelClassification", "abstask AbsTaskMultilabelClassification"),
    ("MultiHateClassification", "a custom dataset_transform (class_encode_column(computed)"),
    ("SlovakParlaSentClassification", "a custom dataset_transform (train_test_split)"),
    ("ContractNLIReturnOfConfidentialInformationLegalBenchClassification", "task name longer than 64 characters")])
def test_a_classification_task_the_kind_cannot_say_is_refused_by_name(
        task: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert_one_line_error(code, err, contains=f"{task}: {reason}")
    assert not (tmp_path / "imported").exists()


def _plainly_importable(task: catalogue.Task) -> bool:
    """The catalogue's own facts, read apart from the importer: MTEB's plain AbsTaskClassification probe (default
    logistic regression, no attribute of its own, no cross-validation) on up to 600 subsets of a pinned dataset,
    no Python of its own but renames, stratified subsampling with stated arguments, and a class encoding of the
    label where every split read has the same labels in MTEB's statistics (fit and eval labels may differ: MTEB
    scores an unseen label as an error, as the kind's unmatched_labels: score does)."""
    attrs = task.attributes
    model = attrs.get("evaluator_model") or {}
    if (task.abstask != "AbsTaskClassification" or len(task.name) > 64 or not task.dataset.is_commit
            or set(task.dataset.options) - {"name"} or len(task.hf_subsets) > 600 or set(task.hooks) -
            {"dataset_transform"} or attrs.get("is_cross_validation") or set(attrs) - {
                "abstask_prompt", "evaluator", "evaluator_model", "input_column_name", "is_cross_validation",
                "label_column_name", "n_experiments", "n_splits", "samples_per_label", "train_split", "fast_loading"}
            or model.get("class") != LOGISTIC or model["params"]["solver"] != "lbfgs" or model["params"]["C"] != 1.0):
        return False
    transform = task.transform
    if "dataset_transform" in task.hooks and (transform is None or transform.kind != "known" or transform.explode
                                              or any(isinstance(value, dict) and value.get("expr") not in (
                                                  "self.seed", "self.metadata.eval_splits",
                                                  "self.label_column_name")
                                                  for call in transform.sampling for value in call.values())):
        return False
    if transform is None or not transform.class_encode:
        return True
    read = {*task.eval_splits, attrs["train_split"]}
    for subset in task.hf_subsets:
        stats = task.stats or {}
        if task.is_multilingual:
            stats = {split: (block or {}).get("hf_subset_descriptive_stats", {}).get(subset)
                     for split, block in stats.items()}
        found = [((stats.get(split) or {}).get("label_statistics") or {}).get("labels") for split in read]
        if not all(found) or len({frozenset(labels) for labels in found}) != 1:
            return False
    return True


def test_the_active_classification_tasks_that_import() -> None:
    tasks = [task for task in catalogue.load().tasks.values() if task.type == "Classification" and task.is_active_text]
    found = coverage(tasks)["Classification"]
    assert found["tasks"] == len(tasks) == 353
    # 251 before several hf_subsets, sampling, class encoding, evaluated fit splits and unseen eval labels
    assert found["imports"] == sum(_plainly_importable(task) for task in tasks) == 328


def banking77_snapshot(data_dir: Path, target: Path) -> dict[str, int]:
    """MTEB's mteb/banking77 as `datasets` reads it offline: README `configs:` and train/test parquet with MTEB's
    columns `text` and integer `label`; the hub numbers the intents in their names' case-insensitive order
    (`Refund_not_showing_up` among the r's), which the test checks against MTEB's per-label training counts."""
    rows = {}
    for split in ("train", "test"):
        with (data_dir / "banking77" / f"{split}.csv").open(encoding="utf-8", newline="") as handle:
            rows[split] = list(csv.DictReader(handle))
    names = sorted({row["category"] for row in rows["train"]}, key=str.lower)
    hub_snapshot(target, {split: {"text": [row["text"] for row in found],
                                  "label": [names.index(row["category"]) for row in found]}
                          for split, found in rows.items()})
    train_counts: dict[str, int] = {}
    for row in rows["train"]:
        label = str(names.index(row["category"]))
        train_counts[label] = train_counts.get(label, 0) + 1
    return train_counts


@pytest.mark.slow  # the real model on 3,080 test and about 616 fit queries
def test_imported_banking77_equals_mteb_published(tmp_path: Path, data_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _import(tmp_path, capsys, "Banking77Classification")
    snapshot = tmp_path / "data"
    counts = banking77_snapshot(data_dir, snapshot / "banking77classification")
    labels = catalogue.task("Banking77Classification").stats["train"]["label_statistics"]["labels"]
    assert counts == {label: value["count"] for label, value in labels.items()}  # all 77 ids agree
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(snapshot), "--write"], capsys)
    assert code == 0, err
    # at batch size 64, as test_task_families_real's run of specs/banking77.yaml: the same texts, so the session
    # cache holds one encode of BANKING77 for both (the published figures hold at either batch size)
    code, out, err = run_cli([str(path), "--data-dir", str(snapshot), "--output", str(tmp_path / "runs"), "-q",
                              "--batch-size", "64"], capsys)
    assert code == 0, err
    results = json.loads(Path(out.strip()).read_text(encoding="utf-8"))
    (entry,) = json.loads((data_dir / PUBLISHED / "Banking77Classification.json").read_text(
        encoding="utf-8"))["scores"]["test"]
    accuracy = results["scores"]["test"]["accuracy"]
    assert accuracy["n"] == 3080
    assert accuracy["value"] == pytest.approx(entry["accuracy"], abs=1e-6)
    assert accuracy["value"] == pytest.approx(0.8004221, abs=1e-6)
    assert results["scores"]["test"]["f1_macro"]["value"] == pytest.approx(entry["f1"], abs=1e-6)
    assert results["scores"]["test"]["f1_weighted"]["value"] == pytest.approx(entry["f1_weighted"], abs=1e-6)
