"""`specrun import mteb` of dataset_transforms that subsample (stratified_subsampling, as a split's `sample:`) or
class-encode the label, of eval labels the fit never saw (unmatched_labels: score) and of a fit split MTEB also
evaluates (read twice); and an imported sampled spec run on a hub-style snapshot with the hashing adapter, its
rows those datasets' train_test_split keeps. mteb is never imported and the hub is never asked."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.benchmark_import import member_tasks
from specrun.mteb.import_sampling import unsaid_steps
from specrun.mteb.importer import build_spec, refusals
from tests.conftest import run_cli, run_ok
from tests.mteb.snapshots import hub_snapshot

SAMPLE = {"n": 2048, "stratify": "label", "seed": 42, "method": "mteb_stratified"}


def _member(benchmark: str, task: str) -> catalogue.Task:
    return next(found for found in member_tasks(catalogue.load(), benchmark) if found.name == task)


def test_toxic_conversations_imports_with_mteb_s_sample_on_test_only(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["import", "mteb", "ToxicConversationsClassification", "-o", str(tmp_path)], capsys)
    assert code == 0, err
    spec = load_plain(Path(out.strip()).read_text(encoding="utf-8"))
    assert spec["splits"]["test"]["sample"] == SAMPLE
    assert list(spec["splits"]["test"]) == ["source", "source_split", "sample", "expect"]
    assert "sample" not in spec["splits"]["train"]
    assert spec["splits"]["test"]["expect"]["n"] == 2048  # MTEB's statistics: taken after the draw


@pytest.mark.parametrize("benchmark", ["MTEB(eng, v2)", "JMTEB(v2)"])
def test_massive_intent_scores_labels_the_fit_lacks_as_mteb(benchmark: str) -> None:
    task = _member(benchmark, "MassiveIntentClassification")
    assert refusals(task) == []
    options = build_spec(task, "2.26.24")["protocols"]["probe"]["options"]
    assert options["unmatched_labels"] == "score" and options["fit_split"] == "train"


def test_sib200_class_encodes_and_fits_on_the_train_split_it_also_evaluates() -> None:
    task = _member("JMTEB(v2)", "SIB200Classification")
    assert task.transform is not None and task.transform.class_encode == ["category"]
    assert refusals(task) == [] and unsaid_steps(task) == []
    spec = build_spec(task, "2.26.24")
    assert spec["protocols"]["probe"]["options"]["fit_split"] == "train_fit"
    assert spec["splits"]["train_fit"] == {"source": "sib200classification", "source_split": "train",
                                           "evaluate": False}
    assert "evaluate" not in spec["splits"]["train"] and "unmatched_labels" not in spec["protocols"]["probe"]
    assert spec["sources"]["sib200classification"]["splits"] == ["train", "validation", "test"]
    assert spec["sources"]["sib200classification"]["columns"] == {"text": "text", "label": "category"}


def test_class_encode_where_a_split_lacks_a_label_is_refused() -> None:
    """DatasetDict.class_encode_column numbers each split's own labels: one label short shifts the ids."""
    task = _member("JMTEB(v2)", "SIB200Classification")
    stats = {split: {**block, "hf_subset_descriptive_stats": {"jpn_Jpan": {
        **block["hf_subset_descriptive_stats"]["jpn_Jpan"],
        "label_statistics": {"labels": {str(i): {"count": 1} for i in range(6 if split == "test" else 7)}}}}}
        for split, block in (task.stats or {}).items()}
    short = task.model_copy(update={"stats": stats})
    assert any("class_encode" in reason and "same labels in every split" in reason for reason in refusals(short))


def test_a_sample_size_computed_in_python_is_refused() -> None:
    task = _member("MTEB(eng, v2)", "ToxicConversationsClassification")
    assert task.transform is not None
    transform = task.transform.model_copy(update={"sampling": [{"seed": {"expr": "self.seed"},
                                                                "n_samples": {"expr": "n_samples"}}]})
    reasons = refusals(task.model_copy(update={"transform": transform}))
    assert any("stratified_subsampling with a computed n" in reason for reason in reasons)


def snapshot(folder: Path, splits: dict[str, list[dict]]) -> None:
    """The hub repo as `datasets` reads it offline: README `configs:` and one parquet per split."""
    hub_snapshot(folder, {split: {"text": [row["text"] for row in rows], "label": [row["label"] for row in rows]}
                          for split, rows in splits.items()})


def test_an_imported_sampled_spec_runs_on_mteb_s_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from datasets import ClassLabel, Value, load_dataset

    from specrun.data import load_split
    from specrun.plan import make_plan
    from specrun.spec import load_spec

    rng = random.Random(5)
    words = [f"w{index}" for index in range(300)]

    def rows(count: int) -> list[dict]:
        return [{"text": " ".join(rng.sample(words, 8)) + f" {index}", "label": int(rng.random() < 0.1)}
                for index in range(count)]

    data = tmp_path / "data"
    snapshot(data / "toxicconversationsclassification", {"train": rows(400), "test": rows(2300)})
    code, out, err = run_cli(["import", "mteb", "ToxicConversationsClassification", "-o", str(tmp_path / "i")],
                             capsys)
    assert code == 0, err
    spec = Path(out.strip())
    assert run_cli(["fingerprint", str(spec), "--data-dir", str(data), "--write"], capsys)[0] == 0
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    assert results.scores["test"]["accuracy"].n == 2048
    # MTEB's stratified_subsampling of the same snapshot, written out with datasets
    dataset = load_dataset(str(data / "toxicconversationsclassification"), cache_dir=str(tmp_path / "hf"))
    names = sorted({str(x) for split in dataset.values() for x in split["label"]})
    dataset = dataset.cast_column("label", Value("string")).cast_column("label", ClassLabel(names=names))
    kept = dataset["test"].train_test_split(test_size=2048, seed=42, stratify_by_column="label")["test"]["text"]
    items = load_split(make_plan(load_spec(spec)), "test", data).items
    assert [item.fields["text"] for item in items] == kept
