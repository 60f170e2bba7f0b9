"""`specrun import mteb` of MTEB's Clustering tasks: AbsTaskClustering (MTEB 2.x) as a `clustering` spec with
`procedure: mteb2` whose options are the task's class attributes, a v2 layout of rows of lists read with the split's
`explode`; what the kind does not say refused by name. An imported spec runs end to end on a hub-style snapshot of
rows of lists with the hashing adapter, equal to MTEB's procedure written out here with scikit-learn (mteb itself
is never imported)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.importer import coverage
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.mteb.snapshots import hub_snapshot

# members of MTEB(eng, v2) and JMTEB(v2) that import
TARGETS = ["BiorxivClusteringP2P.v2", "MedrxivClusteringP2P.v2", "MedrxivClusteringS2S.v2",
           "TwentyNewsgroupsClustering.v2", "LivedoorNewsClustering.v2", "MewsC16JaClustering"]
# MTEB's class attribute -> the mteb2 procedure's option
OPTION_OF = {"n_clusters": "n_runs", "max_documents_per_cluster": "draws", "max_depth": "max_depth",
             "max_document_to_embed": "embed_documents", "max_fraction_of_documents_to_embed": "embed_fraction"}


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], *tasks: str) -> dict[str, Path]:
    code, out, err = run_cli(["import", "mteb", *tasks, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    return dict(zip(tasks, map(Path, out.split()), strict=True))


def test_the_benchmark_members_import_with_mteb_s_attributes(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    paths = _import(tmp_path, capsys, *TARGETS)
    for name, path in paths.items():
        code, out, err = run_cli(["validate", str(path)], capsys)
        assert code == 0 and ": ok (" in out + err, err
        spec: dict[str, Any] = load_plain(path.read_text(encoding="utf-8"))
        task = catalogue.task(name)
        (protocol,) = spec["protocols"].values()
        options = protocol["options"]
        assert protocol["kind"] == "clustering" and options["procedure"] == "mteb2" and options["seed"] == 42
        assert options.get("batch_size", 512) == task.attributes["k_mean_batch_size"]
        for attribute, option in OPTION_OF.items():
            assert options.get(option) == task.attributes[attribute], (name, attribute)
        (source,) = spec["sources"].values()
        assert (source["path"], source["revision"]) == (task.dataset.path, task.dataset.revision)
        assert source["columns"] == {"text": "sentences", "label": "labels"}
        split = spec["splits"]["test"]
        assert split.get("explode") == (task.transform.explode if task.transform and task.transform.explode
                                        else None)
        assert split["expect"]["n"] == task.stats["test"]["num_samples"]
        labels = task.stats["test"]["labels_statistics"]["labels"]
        assert split["expect"]["fields"]["label"]["label_counts"] == \
            sorted((value["count"] for value in labels.values()), reverse=True)
        (metric,) = spec["metrics"].values()
        assert metric["metric"] == "v_measure"
        assert {key: metric["mteb"][key] for key in ("task", "split", "score", "main")} == \
            {"task": name, "split": "test", "score": "v_measure", "main": True}
        assert "mteb 1.x" in metric["mteb"]["caveat"]
    medrxiv = load_plain(paths["MedrxivClusteringP2P.v2"].read_text(encoding="utf-8"))
    assert medrxiv["splits"]["test"]["explode"] == ["labels", "sentences"]


@pytest.mark.parametrize(("task", "reason"), [
    ("TenKGnadClusteringP2P.v2", "a custom dataset_transform (_convert_to_fast)"),
    ("MLSUMClusteringS2S.v2", "overrides load_data"),
    ("SNLHierarchicalClusteringP2P", "label paths of several levels"),
    ("SwednClusteringP2P", "2 eval splits (MTEB's task seeds one Random"),
    ("WikiClusteringP2P.v2", "14 hf_subsets (MTEB's task seeds one Random")])
def test_a_clustering_task_the_kind_cannot_say_is_refused_by_name(
        task: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert_one_line_error(code, err, contains=f"{task}: {reason}")
    assert not (tmp_path / "imported").exists()


def test_the_active_clustering_tasks_that_import() -> None:
    tasks = [task for task in catalogue.active_text_tasks().values() if task.type == "Clustering"]
    counts = coverage(tasks)["Clustering"]
    # 22 with MTEB 2.x's procedure alone; then 21 legacy per-set tasks, 19 by sampling, solo labels and label paths
    assert (counts["tasks"], counts["imports"]) == (83, 62)
    assert "abstask AbsTaskClusteringLegacy" not in counts and counts["custom dataset_transform"] == 13


TOPICS = {"cardiology": "heart artery pressure beat", "oncology": "tumour cancer cell growth",
          "neurology": "brain nerve memory signal", "dermatology": "skin rash itch lesion"}


def rows_of_lists(sets: int = 5, per_set: int = 100) -> tuple[list[dict[str, list[str]]], list[str], list[str]]:
    """MTEB's v2 layout before its transform chains it: each row a set of documents (`sentences`, `labels`
    lists); and the documents chained, as MTEB reads them."""
    draw = random.Random(7)
    rows = []
    for number in range(sets):
        labels = [draw.choice(sorted(TOPICS)) for _ in range(per_set)]
        texts = [f"set {number} doc {i}: " + " ".join(draw.sample([*TOPICS[label].split(), "the", "a", "study"], 4))
                 for i, label in enumerate(labels)]
        rows.append({"sentences": texts, "labels": labels})
    return rows, [t for row in rows for t in row["sentences"]], [label for row in rows for label in row["labels"]]


def write_snapshot(target: Path, rows: list[dict[str, list[str]]]) -> None:
    """A hub dataset repo as `datasets` reads it offline: README `configs:` and the test split's parquet."""
    hub_snapshot(target, {"test": {"sentences": [row["sentences"] for row in rows],
                                   "labels": [row["labels"] for row in rows]}})


def mteb2_reference(vectors: np.ndarray, labels: list[str], fraction: float) -> float:
    """AbsTaskClustering's procedure, written out: Random(42) samples the documents embedded, then 10 runs each
    draw 16,384 of them with replacement and fit MiniBatchKMeans(k, batch 512, k-means++, n_init 1, seed 42)."""
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.metrics import v_measure_score

    rng = random.Random(42)
    order = rng.sample(range(len(labels)), k=int(fraction * len(labels)))
    chosen, gold = vectors[order], np.array([labels[i] for i in order])
    model = MiniBatchKMeans(n_clusters=len(set(gold)), batch_size=512, init="k-means++", n_init=1, random_state=42)
    scores = []
    for _ in range(10):
        drawn = rng.choices(range(len(order)), k=16_384)
        scores.append(v_measure_score(gold[drawn], model.fit_predict(chosen[drawn])))
    return float(np.mean(scores))


def test_an_imported_spec_runs_on_a_snapshot_of_rows_of_lists(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    path = _import(tmp_path, capsys, "MedrxivClusteringP2P.v2")["MedrxivClusteringP2P.v2"]
    rows, texts, labels = rows_of_lists()
    write_snapshot(tmp_path / "data" / "medrxivclusteringp2p.v2", rows)
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(tmp_path / "data"), "--write"], capsys)
    assert code == 0, err
    results = run_ok([str(path), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing", "-q",
                      "--output", str(tmp_path / "out")], capsys)
    vectors = np.asarray(HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32))
    score = results.scores["test"]["v_measure"]
    assert score.n == int(0.04 * len(texts)) == 20  # the documents embedded
    assert score.value == pytest.approx(mteb2_reference(vectors, labels, 0.04), abs=1e-9)
    assert results.statistics["test"].n == len(texts)  # 5 rows of 100 documents, exploded
