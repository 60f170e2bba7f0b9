"""`specrun import mteb` for PairClassification tasks: MTEB's AbsTaskPairClassification as a `pair_classification`
spec (MTEB's columns before its renames, `explode` for a v1 split stored as one row of lists, max_ap/max_accuracy
mapped to the kind's metrics, `expect` from MTEB's statistics); what the kind cannot say refused by name; and an
imported spec run end to end on hub-style snapshots (one row of lists, and one pair per row) with the hashing
adapter, equal to scikit-learn's AP and a brute-force threshold search on the same vectors. mteb is never imported
and the hub is never asked."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.import_pair_classification import PAIR_METRICS, pair_refusal
from specrun.mteb.importer import coverage, refusals
from specrun.spec import load_spec
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.mteb.snapshots import hub_snapshot

ENG_V2 = ("SprintDuplicateQuestions", "TwitterSemEval2015", "TwitterURLCorpus")  # MTEB(eng, v2)'s members
WORDS = ["river", "bank", "money", "loan", "water", "fish", "boat", "city", "train", "ticket", "music", "guitar",
         "song", "dance", "phone", "screen", "battery", "charge", "network", "signal", "plan", "price", "bill"]


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str], *tasks: str) -> dict[str, Path]:
    out_dir = tmp_path / "imported"
    code, out, err = run_cli(["import", "mteb", *tasks, "-o", str(out_dir)], capsys)
    assert code == 0, err
    return dict(zip(tasks, map(Path, out.split()), strict=True))


def test_eng_v2_pair_tasks_import_as_pair_classification_specs(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    for name, path in imported(tmp_path, capsys, *ENG_V2, "TERRa.V2").items():
        task = catalogue.task(name)
        load_spec(path)
        spec = load_plain(path.read_text(encoding="utf-8"))
        (source,) = spec["sources"].values()
        assert (source["path"], source["revision"]) == (task.dataset.path, task.dataset.revision)
        (protocol,) = spec["protocols"].values()
        assert protocol["kind"] == "pair_classification" and "threshold_split" not in (protocol.get("options") or {})
        main = [m["mteb"] for m in spec["metrics"].values() if m["mteb"].get("main")]
        assert [(ref["task"], ref["score"]) for ref in main] == [(name, task.main_score)]
        assert {m["mteb"]["score"]: m["metric"] for m in spec["metrics"].values()} == {
            "max_ap": "pair_max_ap", "max_accuracy": "pair_max_accuracy", "max_f1": "pair_max_f1",
            "cosine_ap": "pair_ap"}
        if name == "TERRa.V2":  # MTEB's prompt types: the first text a document, the second a query
            assert protocol["roles"] == {"text1": "document", "text2": "query"}
            continue
        assert source["columns"] == {"text1": "sent1", "text2": "sent2", "label": "labels"}  # before the renames
        assert "roles" not in protocol
        stats = task.stats["test"]
        split = spec["splits"]["test"]
        assert split["explode"] == ["sent1", "sent2", "labels"]
        assert split["expect"]["n"] == stats["num_samples"]
        assert split["expect"]["fields"]["label"] == {"label_counts": sorted(
            (value["count"] for value in stats["labels_statistics"]["labels"].values()), reverse=True)}
        assert split["expect"]["fields"]["text2"]["unique"] == stats["text2_statistics"]["unique_texts"]


def test_max_accuracy_tasks_import_with_their_main_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = imported(tmp_path, capsys, "LegalBenchPC")["LegalBenchPC"]
    spec = load_plain(path.read_text(encoding="utf-8"))
    first = next(iter(spec["metrics"].values()))
    assert (first["metric"], first["mteb"]["score"], first["mteb"]["main"]) == ("pair_max_accuracy", "max_accuracy",
                                                                               True)


@pytest.mark.parametrize(("task", "reason"), [
    ("PubChemSMILESPC", "overrides load_data"),
    ("Assin2RTE", "a dataset_transform with sampling"),
    ("KorNLI", "a custom dataset_transform")])
def test_a_pair_task_the_kind_cannot_say_is_refused_by_name(task: str, reason: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert_one_line_error(code, err, contains=f"{task}: {reason}")
    assert not (tmp_path / "imported").exists()


def test_what_of_the_abstask_the_kind_cannot_say() -> None:
    task = catalogue.task("SprintDuplicateQuestions")
    assert pair_refusal(task) is None
    own = task.model_copy(update={"attributes": {**task.attributes, "samples": 10}})
    assert pair_refusal(own) == "class attribute(s) samples (the task's own, not the abstask's)"
    columns = task.model_copy(update={"attributes": {**task.attributes, "input1_column_name": {"a": "text"}}})
    assert (pair_refusal(columns) or "").startswith("input or label columns")
    three = task.model_copy(update={"stats": {"test": {"labels_statistics": {"labels": {"0": {}, "1": {}, "2": {}}}}}})
    assert pair_refusal(three) == "labels 0, 1, 2 in split 'test' (the kind's labels are 0 and 1)"
    assert set(PAIR_METRICS) >= {"max_ap", "max_accuracy", "max_f1", "cosine_f1", "dot_ap", "manhattan_accuracy"}


def test_the_active_pair_classification_tasks_that_import() -> None:
    tasks = [task for task in catalogue.active_text_tasks().values() if task.type == "PairClassification"]
    found = coverage(tasks)["PairClassification"]
    assert found["tasks"] == len(tasks) == 52
    assert found["imports"] == 41  # 11 refused: custom dataset_transforms (9), sampling (1), load_data (1)
    assert all(not refusals(task) for task in tasks if task.name in ENG_V2)


def pairs(count: int = 60, seed: int = 7) -> list[tuple[str, str, int]]:
    """Sentence pairs: a positive shares most of its words, a negative is drawn anew (a few repeat texts)."""
    rng = random.Random(seed)
    found = []
    for index in range(count):
        first = " ".join(rng.sample(WORDS, 6))
        if index % 3 == 0:
            words = first.split()
            second = " ".join(words[:4] + rng.sample(WORDS, 2))
            found.append((first, second, 1))
        else:
            found.append((first, " ".join(rng.sample(WORDS, 6)), 0))
    found.append(found[1])  # a pair twice, as real data holds
    return found


def snapshot(folder: Path, rows: list[tuple[str, str, int]], *, one_row: bool) -> None:
    """The hub repo as `datasets` reads it offline: README `configs:` and a test parquet with MTEB's columns
    sent1, sent2, labels; `one_row`: MTEB's v1 layout, the split as one row of lists."""
    import pyarrow as pa

    columns = {"sent1": [a for a, _, _ in rows], "sent2": [b for _, b, _ in rows], "labels": [y for _, _, y in rows]}
    hub_snapshot(folder, {"test": pa.table({key: [values] for key, values in columns.items()}) if one_row
                          else columns})


def best_accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    """Every threshold between two distinct scores, tried one by one (MTEB's search, written plainly)."""
    values = np.unique(scores)
    return max(float(np.mean((scores > (low + high) / 2) == (labels == 1)))
               for low, high in itertools.pairwise(values))


def reference(rows: list[tuple[str, str, int]]) -> dict[str, float]:
    from sklearn.metrics import average_precision_score

    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    left = np.asarray(adapter.encode_group([a for a, _, _ in rows], 32), dtype=np.float64)
    right = np.asarray(adapter.encode_group([b for _, b, _ in rows], 32), dtype=np.float64)
    labels = np.array([y for _, _, y in rows])
    cosine = (left * right).sum(1) / np.linalg.norm(left, axis=1) / np.linalg.norm(right, axis=1)
    scores = {"cosine": cosine, "dot": (left * right).sum(1), "euclidean": -np.linalg.norm(left - right, axis=1),
              "manhattan": -np.abs(left - right).sum(1)}
    ap = {name: float(average_precision_score(labels, values)) for name, values in scores.items()}
    return {"cosine_ap": ap["cosine"], "max_ap": max(ap.values()),
            "max_accuracy": max(best_accuracy(values, labels) for values in scores.values())}


@pytest.mark.parametrize("one_row", [True, False], ids=["v1 one row of lists", "one pair per row"])
def test_an_imported_pair_spec_runs_on_a_local_snapshot(one_row: bool, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main

    spec = imported(tmp_path, capsys, "SprintDuplicateQuestions")["SprintDuplicateQuestions"]
    rows = pairs()
    data = tmp_path / "data"
    snapshot(data / "sprintduplicatequestions", rows, one_row=one_row)
    assert main(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    expected: dict[str, Any] = reference(rows)
    scores = results.scores["test"]
    for name, value in expected.items():
        assert scores[name].value == pytest.approx(value, abs=1e-9), name
    assert scores["max_ap"].n == len(rows)
