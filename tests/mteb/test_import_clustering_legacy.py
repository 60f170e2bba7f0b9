"""`specrun import mteb` of MTEB's AbsTaskClusteringLegacy tasks: a `clustering` spec with `procedure: legacy` and
`sets`, each row of lists one set (`explode` + `explode_row`). An imported spec runs end to end on a hub-style
snapshot of rows of lists with the hashing adapter, equal to MTEB's legacy procedure written out here with
scikit-learn (per set MiniBatchKMeans(k, batch 500, n_init 'auto', random_state 42), V-measure, mean over sets;
mteb itself is never imported)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.import_clustering_legacy import legacy_refusal
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.mteb.test_import_clustering import rows_of_lists, write_snapshot

LEGACY = ["BuiltBenchClusteringP2P", "WikiCitiesClustering", "MasakhaNEWSClusteringS2S", "HUMESIB200ClusteringS2S",
          "RedditClustering-VN"]


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], *tasks: str) -> dict[str, Path]:
    code, out, err = run_cli(["import", "mteb", *tasks, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    return dict(zip(tasks, map(Path, out.split()), strict=True))


def test_every_active_legacy_clustering_task_imports_and_validates(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    active = [task for task in catalogue.active_text_tasks().values() if task.abstask == "AbsTaskClusteringLegacy"]
    assert len(active) == 21 and not [task.name for task in active if legacy_refusal(task)]
    for name, path in _import(tmp_path, capsys, *LEGACY).items():
        code, out, err = run_cli(["validate", str(path)], capsys)
        assert code == 0 and ": ok (" in out + err, err
        spec: dict[str, Any] = load_plain(path.read_text(encoding="utf-8"))
        (protocol,) = spec["protocols"].values()
        assert protocol["options"] == {"procedure": "legacy", "sets": "set", "n_runs": 1, "seed": 42}
        (source,) = spec["sources"].values()
        assert source["columns"] == {"text": "sentences", "label": "labels", "set": "mteb_set"}
        split = spec["splits"]["test"]
        assert split["explode"] == ["sentences", "labels"] and split["explode_row"] == "mteb_set"
        assert split["expect"]["n"] == catalogue.task(name).stats["test"]["num_samples"] or "subsets" in spec
        (metric,) = spec["metrics"].values()
        assert metric["metric"] == "v_measure" and metric["mteb"]["task"] == name


def test_a_legacy_task_with_an_evaluator_of_its_own_is_refused_in_one_line() -> None:
    task = catalogue.task("WikiCitiesClustering")
    other = task.model_copy(update={"attributes": {**task.attributes, "evaluator": "my.Evaluator"}})
    assert legacy_refusal(other) == "evaluator my.Evaluator (the task's own, not MTEB's ClusteringEvaluator)"
    columns = task.model_copy(update={"attributes": {**task.attributes, "label_column_name": "sentences"}})
    assert "not one column name of its own" in str(legacy_refusal(columns))


def test_a_non_text_legacy_task_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["import", "mteb", "CIFAR10Clustering", "-o", str(tmp_path / "imported")], capsys)
    assert_one_line_error(code, err, contains="CIFAR10Clustering: task type ImageClustering is not supported")


def legacy_reference(vectors: np.ndarray, rows: list[dict[str, list[str]]]) -> tuple[float, float]:
    """AbsTaskClusteringLegacy written out: per row, MiniBatchKMeans(k = its labels, batch 500, n_init 'auto',
    random_state 42) and V-measure; the mean and standard deviation over the rows."""
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.metrics import v_measure_score

    scores, start = [], 0
    for row in rows:
        labels = row["labels"]
        chosen = vectors[start:start + len(labels)]
        start += len(labels)
        model = MiniBatchKMeans(n_clusters=len(set(labels)), batch_size=500, n_init="auto", compute_labels=True,
                                random_state=42).fit(chosen)
        scores.append(v_measure_score(labels, model.labels_))
    return float(np.mean(scores)), float(np.std(scores))


def test_an_imported_legacy_spec_runs_on_a_snapshot_of_rows_of_lists(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    path = _import(tmp_path, capsys, "WikiCitiesClustering")["WikiCitiesClustering"]
    rows, texts, _ = rows_of_lists(sets=5, per_set=100)
    write_snapshot(tmp_path / "data" / "wikicitiesclustering", rows)
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(tmp_path / "data"), "--write"], capsys)
    assert code == 0, err
    results = run_ok([str(path), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing", "-q",
                      "--output", str(tmp_path / "out")], capsys)
    vectors = np.asarray(HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32))
    score = results.scores["test"]["v_measure"]
    mean, sd = legacy_reference(vectors, rows)
    assert score.value == pytest.approx(mean, abs=1e-9) and score.run_sd == pytest.approx(sd, abs=1e-9)
    assert score.runs == 5 and score.n == len(texts) == 500
    assert score.ci_low <= score.value <= score.ci_high
