"""The clustering kind's `sets` option (MTEB's AbsTaskClusteringLegacy): each set of documents is clustered on its
own and the score is the mean of the sets' V-measures, equal to scikit-learn's MiniBatchKMeans + v_measure_score
computed directly per set and averaged; a set of one label scores 1 without k-means; the bootstrap draws the sets
as runs; the split's `explode_row` gives a row of lists its set id."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from sklearn import metrics as sk
from sklearn.cluster import MiniBatchKMeans

from specrun.core.contracts import RunContext
from specrun.core.errors import DataError
from specrun.core.types import Item
from specrun.metrics import estimate
from specrun.protocols.clustering import ClusteringOptions, ClusteringProtocol
from tests.conftest import assert_one_line_error, run_cli
from tests.protocols.test_kinds_cli import run as run_spec
from tests.protocols.test_kinds_cli import spec, write_jsonl


def _sets(seed: int) -> tuple[np.ndarray, list[Item], list[np.ndarray], np.ndarray]:
    """Five sets of 40-80 documents in 2-5 classes each (the last of one class), their vectors and labels."""
    rng = np.random.default_rng(seed)
    vectors, items, members, labels = [], [], [], []
    for number in range(5):
        size, classes = int(rng.integers(40, 80)), 1 if number == 4 else int(rng.integers(2, 6))
        gold = rng.integers(0, classes, size)
        members.append(np.arange(len(items), len(items) + size))
        for label in gold:
            vectors.append(rng.standard_normal(6) + 2.0 * label)
            items.append(Item(id=f"d{len(items)}", fields={"text": str(len(items)), "label": f"c{label}",
                                                             "set": number}))
            labels.append(label)
    return np.asarray(vectors, np.float32), items, members, np.asarray(labels)


@pytest.mark.parametrize("seed", range(3))
def test_the_score_is_the_mean_of_each_set_s_v_measure_as_scikit_learn_computes_it(seed: int) -> None:
    vectors, items, members, labels = _sets(seed)
    embedded: list[str] = []

    def embed(texts: list[str], _field: str) -> np.ndarray:
        embedded.extend(texts)
        return vectors[[int(t) for t in texts]]

    options = ClusteringOptions(sets="set", n_runs=1)
    out = ClusteringProtocol().run(items, RunContext(embed), options)
    expected = []
    for set_members in members:
        gold = labels[set_members]
        if len(set(gold)) == 1:  # MTEB: V-measure 1, nothing encoded
            expected.append(1.0)
            continue
        model = MiniBatchKMeans(n_clusters=len(set(gold)), batch_size=500, n_init="auto", compute_labels=True,
                                random_state=42).fit(vectors[set_members])
        expected.append(sk.v_measure_score(gold, model.labels_))
    assert out.arrays["cluster_id"].shape == (len(items), 5)
    score = estimate("v_measure", out.arrays, resamples=300, confidence=0.95, seed=1)
    assert score.value == pytest.approx(float(np.mean(expected)), abs=1e-12)
    assert score.runs == 5 and score.run_sd == pytest.approx(float(np.std(expected)), abs=1e-12)
    assert score.ci_low <= score.value <= score.ci_high and score.ci_low < score.ci_high
    assert set(embedded) == {str(i) for s in members[:4] for i in s}  # the one-label set is not embedded


def test_a_missing_set_field_and_options_of_another_procedure_are_one_line() -> None:
    items = [Item(id=str(i), fields={"text": str(i), "label": "ab"[i % 2], "set": i // 4}) for i in range(8)]
    with pytest.raises(DataError, match="item 0 has no field 'group'") as caught:
        ClusteringProtocol().validate_items(items, ClusteringOptions(sets="group"), "f")
    assert "\n" not in str(caught.value)
    ClusteringProtocol().validate_items(items, ClusteringOptions(sets="set"), "f")
    with pytest.raises(ValidationError, match="only for procedure: legacy"):
        ClusteringOptions(procedure="mteb2", sets="set")
    with pytest.raises(ValidationError, match="set sets or set_size"):
        ClusteringOptions(sets="set", set_size=4)


def _rows(seed: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    words = ["market", "bank", "goal", "match", "chip", "phone", "rain", "storm"]
    rows = []
    for _ in range(4):
        labels = [str(x) for x in rng.integers(0, 3, 30)]
        rows.append({"sentences": [" ".join(rng.choice(words[2 * int(x):2 * int(x) + 3], 4)) for x in labels],
                     "labels": labels})
    return rows


def test_explode_row_gives_each_row_of_lists_its_set_end_to_end(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    flat = [{"sentences": f"{word} {word}", "labels": word, "row": 0} for word in ("a", "b", "a", "b")]
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", flat)  # the helper fingerprints rows it can map
    path = spec(tmp_path, "clustering", {"text": "sentences", "label": "labels", "set": "row"},
                {"v_measure": "v_measure"}, options={"sets": "set", "n_runs": 1})
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", _rows(0))
    text = path.read_text(encoding="utf-8").replace("source_split: test\n",
                                                    "source_split: test\n    explode: [sentences, labels]\n"
                                                    "    explode_row: row\n", 1)
    assert text.count("    metric: v_measure\n") == 1  # the legacy import's interval, verified below
    text = text.replace("    metric: v_measure\n", "    metric: v_measure\n    interval: centred_t_runs\n")
    path.write_text(text, encoding="utf-8")
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(tmp_path / "data"), "--write"], capsys)
    assert code == 0, err
    results, arrays = run_spec(path, tmp_path, capsys)
    score = results.scores["test"]["v_measure"]
    assert arrays["cluster_id"].shape == (120, 4) and score.runs == 4 and score.n == 120
    each = [sk.v_measure_score(arrays["gold_class"][s * 30:(s + 1) * 30], arrays["cluster_id"][s * 30:(s + 1) * 30, s])
            for s in range(4)]
    assert score.value == pytest.approx(float(np.mean(each)), abs=1e-12)
    assert np.all(arrays["cluster_id"][30:, 0] == -1)
    assert score.interval == "centred_t_runs"  # run_spec's load_verified recomputed it from the predictions
    assert score.ci_low <= score.value <= score.ci_high


def test_explode_row_without_explode_is_refused_in_one_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", [{"sentences": "a b", "labels": "x"}] * 4)
    path = spec(tmp_path, "clustering", {"text": "sentences", "label": "labels"}, {"v_measure": "v_measure"})
    path.write_text(path.read_text(encoding="utf-8").replace("source_split: test\n",
                                                             "source_split: test\n    explode_row: row\n", 1),
                    encoding="utf-8")
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert_one_line_error(code, err, contains="explode_row: needs `explode`")


def _scored(items: list[Item], vectors: np.ndarray, options: ClusteringOptions) -> dict[str, np.ndarray]:
    def embed(texts: list[str], _field: str) -> np.ndarray:
        return vectors[[int(t) for t in texts]]

    return ClusteringProtocol().run(items, RunContext(embed), options).arrays


@pytest.mark.parametrize("seed", range(3))
def test_centred_t_runs_is_never_narrower_than_the_t_interval_over_the_sets(seed: int) -> None:
    """The legacy import's interval: the two-level bootstrap sees (S-1)/S of the variance between sets and reads
    it with normal quantiles (0.84 coverage at 5 sets unlike each other); centred_t_runs holds the Student-t
    interval over the sets' values, computed here with scipy directly, and the centred one."""
    from scipy import stats

    vectors, items, members, _ = _sets(seed)
    arrays = _scored(items, vectors, ClusteringOptions(sets="set", n_runs=1))
    score = estimate("v_measure", arrays, resamples=500, confidence=0.95, seed=3, interval="centred_t_runs")
    centred = estimate("v_measure", arrays, resamples=500, confidence=0.95, seed=3, interval="centred")
    each = [sk.v_measure_score(arrays["gold_class"][m], arrays["cluster_id"][m, s]) for s, m in enumerate(members)]
    half = stats.t.ppf(0.975, len(each) - 1) * np.std(each, ddof=1) / np.sqrt(len(each))
    assert score.value == centred.value == pytest.approx(float(np.mean(each)), abs=1e-12)
    assert score.interval == "centred_t_runs" and half > 0
    assert score.ci_low <= score.value - half + 1e-12 and score.ci_high >= score.value + half - 1e-12
    assert score.ci_low <= centred.ci_low and score.ci_high >= centred.ci_high
    assert score.ci_low <= score.value <= score.ci_high


def test_centred_t_runs_plausible_values_give_its_interval_and_one_run_is_refused() -> None:
    from specrun.core.errors import MetricError
    from specrun.metrics import intervals
    from specrun.metrics.resampling import percentile_interval

    rng = np.random.default_rng(0)
    values, each = 0.6 + 0.02 * rng.standard_normal(1000), np.array([0.4, 0.5, 0.7, 0.8, 0.6])
    low, high = intervals.interval("centred_t_runs", 0.6, values, 0.95, each=each)
    spread = intervals.plausible("centred_t_runs", 0.6, values, each=each, confidence=0.95)
    assert percentile_interval(spread, 0.95) == pytest.approx((low, high), abs=1e-12)
    assert high - 0.6 >= intervals.t_half_width(each, 0.95) > 0.05
    with pytest.raises(MetricError, match="at least 2 runs"):
        intervals.interval("centred_t_runs", 0.6, values, 0.95, each=np.array([0.6]))


def test_a_set_of_one_document_and_a_set_of_one_label_score_1_as_mteb_and_the_run_completes() -> None:
    """MTEB scores a set of at most one label 1.0; a resample that draws none of such a set's documents, or one
    label of a small set, scores it so too, instead of failing the run as degenerate (r1: 281 of 1000)."""
    vectors, items, members, labels = _sets(1)
    items, members, labels = items[:sum(len(m) for m in members[:3])], members[:3], labels
    rng = np.random.default_rng(5)
    extra = [(3, "c0"), (4, "c1"), (4, "c1"), (4, "c1")]  # set 3: one document; set 4: three of one label
    for number, label in extra:
        items.append(Item(id=f"d{len(items)}", fields={"text": str(len(items)), "label": label, "set": number}))
    vectors = np.concatenate([vectors[:len(items) - len(extra)], rng.standard_normal((len(extra), 6))]).astype(
        np.float32)
    arrays = _scored(items, vectors, ClusteringOptions(sets="set", n_runs=1))
    expected = []
    for set_members in members:
        gold = labels[set_members]
        model = MiniBatchKMeans(n_clusters=len(set(gold)), batch_size=500, n_init="auto", compute_labels=True,
                                random_state=42).fit(vectors[set_members])
        expected.append(sk.v_measure_score(gold, model.labels_))
    expected += [1.0, 1.0]  # MTEB: len(set(labels)) <= 1
    for interval in ("centred", "centred_t_runs"):
        score = estimate("v_measure", arrays, resamples=1000, confidence=0.95, seed=7, interval=interval)
        assert score.value == pytest.approx(float(np.mean(expected)), abs=1e-12)
        assert score.runs == 5 and score.ci_low <= score.value <= score.ci_high
