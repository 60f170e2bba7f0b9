"""`specrun import mteb` of the Clustering tasks whose dataset_transform does more than rename and explode: an
attribute it assigns (StackExchangeClustering.v2 embeds every sampled document), stratified_subsampling (`sample`),
solo labels dropped (`drop_rare`), splits joined (`source_splits`, SIB200ClusteringS2S as JMTEB(v2) takes it),
label texts split into paths (`split_text`, the kind's `missing_level: class`) and a plain train_test_split
(`sample: {method: train_test_split}`). The new pieces are checked against independent computations (datasets'
train_test_split called directly, MTEB's loops and numpy's label array written out); mteb itself is never
imported."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.import_subset import restricted
from specrun.mteb.importer import build_spec, refusals
from tests.conftest import run_cli, run_ok
from tests.mteb.snapshots import hub_snapshot

TARGETS = ["StackExchangeClustering.v2", "StackExchangeClusteringP2P.v2", "ArXivHierarchicalClusteringP2P",
           "ArXivHierarchicalClusteringS2S", "RedditClustering.v2", "RedditClusteringP2P.v2"]


def _spec(name: str, subset: str | None = None) -> dict[str, Any]:
    task = catalogue.task(name)
    return build_spec(restricted(task, subset) if subset else task, "2.26.24")


def test_the_tasks_import_and_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["import", "mteb", *TARGETS, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    for path in out.split():
        code, out2, err2 = run_cli(["validate", path], capsys)
        assert code == 0 and ": ok (" in out2 + err2, err2
    assert refusals(restricted(catalogue.task("SIB200ClusteringS2S"), "jpn_Jpan")) == []


def test_the_specs_say_what_mteb_s_transforms_do() -> None:
    split = _spec("StackExchangeClustering.v2")["splits"]["test"]
    assert split["sample"] == {"n": 2048, "stratify": "labels", "seed": 42, "method": "mteb_stratified"}
    (protocol,) = _spec("StackExchangeClustering.v2")["protocols"].values()
    assert "embed_fraction" not in protocol["options"]  # the transform sets max_fraction_of_documents_to_embed None
    assert _spec("StackExchangeClusteringP2P.v2")["splits"]["test"]["drop_rare"] == {"column": "labels",
                                                                                      "min_count": 2}
    arxiv = _spec("ArXivHierarchicalClusteringP2P")
    assert arxiv["splits"]["test"]["split_text"] == {"labels": {"sep": "."}}
    assert arxiv["splits"]["test"]["sample"] == {"n": 2048, "seed": 42, "method": "train_test_split"}
    (protocol,) = arxiv["protocols"].values()
    assert protocol["options"]["missing_level"] == "class" and protocol["options"]["embed_fraction"] == 0.04
    assert _spec("VGHierarchicalClusteringP2P")["splits"]["test"]["split_text"] == {"classes": {"sep": ",",
                                                                                             "max_parts": 2}}
    sib = _spec("SIB200ClusteringS2S", "jpn_Jpan")
    assert sib["splits"]["test"]["source_splits"] == ["train", "validation", "test"]
    assert "source_split" not in sib["splits"]["test"]
    (source,) = sib["sources"].values()
    assert source["columns"] == {"text": "text", "label": "category"} and source["config"] == "jpn_Jpan"
    assert source["splits"] == ["train", "validation", "test"]


def test_train_test_split_sample_is_datasets_own_draw() -> None:
    import datasets

    from specrun.data.sample import split_order

    table = datasets.Dataset.from_dict({"x": [f"row {i}" for i in range(500)]})
    theirs = table.train_test_split(test_size=120, seed=42)["test"]["x"]
    assert [f"row {i}" for i in split_order(500, 120, 42)] == theirs
    with pytest.raises(ValueError):
        split_order(100, 100, 42)  # datasets refuses a test part of every row


def test_drop_rare_drops_the_rows_mteb_s_solo_loop_pops() -> None:
    from specrun.data.items import RawRow
    from specrun.data.sample import rare_dropped
    from specrun.spec.sample import DropRare

    draw = random.Random(3)
    labels = [draw.choice("abcdefghijklmnop") for _ in range(40)] + ["solo1", "solo2"]
    draw.shuffle(labels)
    texts = [f"t{i}" for i in range(len(labels))]
    mine_labels, mine_texts = list(labels), list(texts)  # MTEB's loop, written out
    unique, counts = np.unique(mine_labels, return_counts=True)
    for solo in unique[np.where(counts == 1)]:
        loc = mine_labels.index(solo)
        mine_labels.pop(loc)
        mine_texts.pop(loc)
    rows = [RawRow("x", i + 1, str(i), {"labels": label, "text": text})
            for i, (label, text) in enumerate(zip(labels, texts, strict=True))]
    kept = rare_dropped(rows, DropRare(column="labels"), None, "test")  # type: ignore[arg-type]
    assert [raw.row["text"] for raw in kept] == mine_texts and len(mine_texts) < len(texts)


def test_missing_level_class_is_numpy_s_text_minus_one() -> None:
    from specrun.core.types import Item
    from specrun.protocols.clustering import level_numbers

    paths = [["cs", "AI"], ["hep-th"], ["cs", "LG"], ["math"], ["math", "-1"]]
    items = [Item(id=str(i), fields={"label": path}) for i, path in enumerate(paths)]
    levels, _ = level_numbers(items, "x", "class")
    theirs = np.array([path[1] if len(path) > 1 else -1 for path in paths])  # MTEB's list, as numpy makes it
    assert theirs.dtype.kind == "U" and all(theirs != -1)  # every item scored, '-1' a class
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(theirs, levels[:, 1]) == 1.0 and (levels[:, 1] >= 0).all()
    skipped, _ = level_numbers(items, "x")
    assert (skipped[:, 1] < 0).sum() == 2  # the default: items without the level sit out


def mteb_reference(vectors: np.ndarray, paths: list[list[str]]) -> tuple[float, int]:
    """ArXiv's transform and AbsTaskClustering written out: train_test_split(2048, seed 42) test part, Random(42)
    samples 4 %, then per level 10 runs of 16,384 draws, a missing level numpy's text '-1'."""
    import datasets
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.metrics import v_measure_score

    kept = datasets.Dataset.from_dict({"i": list(range(len(paths)))}).train_test_split(test_size=2048,
                                                                                     seed=42)["test"]["i"]
    rng = random.Random(42)
    order = [kept[i] for i in rng.sample(range(len(kept)), k=int(0.04 * len(kept)))]
    chosen = [paths[i] for i in order]
    scores = []
    for level in range(max(map(len, chosen))):
        gold = np.array([path[level] if len(path) > level else -1 for path in chosen])
        model = MiniBatchKMeans(n_clusters=np.unique(gold).size, batch_size=512, init="k-means++", n_init=1,
                                random_state=42)
        for _ in range(10):
            drawn = rng.choices(range(len(order)), k=16_384)
            scores.append(v_measure_score(gold[drawn], model.fit_predict(vectors[order][drawn])))
    return float(np.mean(scores)), len(order)


def test_an_imported_arxiv_spec_runs_on_a_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:

    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    code, out, err = run_cli(["import", "mteb", "ArXivHierarchicalClusteringS2S", "-o", str(tmp_path / "i")], capsys)
    assert code == 0, err
    spec = Path(out.split()[0])
    draw = random.Random(5)
    words = {"cs": "graph network learning", "math": "prime group ring", "physics": "quark field energy"}
    labels = [draw.choice(["cs.AI", "cs.LG", "math", "math.NT", "physics"]) for _ in range(2100)]
    texts = [f"doc {i} " + " ".join(draw.sample([*words[label.split('.')[0]].split(), "on", "a"], 3))
             for i, label in enumerate(labels)]
    folder = tmp_path / "data" / load_plain(spec.read_text())["id"]
    hub_snapshot(folder, {"test": {"sentences": [texts[:1000], texts[1000:]],
                                   "labels": [labels[:1000], labels[1000:]]}})
    code, _, err = run_cli(["fingerprint", str(spec), "--data-dir", str(tmp_path / "data"), "--write"], capsys)
    assert code == 0, err
    results = run_ok([str(spec), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing", "-q",
                      "--output", str(tmp_path / "out")], capsys)
    vectors = np.asarray(HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 64))
    value, n = mteb_reference(vectors, [label.split(".") for label in labels])
    score = results.scores["test"]["v_measure"]
    assert score.n == n == 81 and score.value == pytest.approx(value, abs=1e-9)
