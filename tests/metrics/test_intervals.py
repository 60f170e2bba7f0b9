"""Each interval method against an independent computation on the same resamples: percentile, basic and BCa against
scipy.stats.bootstrap run on the data itself (its own draws, which the driver reproduces), centred against a
hand-made shift; every method's interval is the percentile interval of its plausible values; the centred interval
always holds the value, and a method that cannot give an interval says so in one line."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from specrun.core.contracts import MetricEntry
from specrun.core.errors import MetricError
from specrun.core.types import INTERVAL_METHODS
from specrun.metrics import BOOTSTRAP_BATCH, METRICS, estimate, unit_counts
from specrun.metrics.estimate import method_of, resample
from specrun.metrics.intervals import interval, plausible
from specrun.metrics.resampling import percentile_interval


def _sts(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = np.round(rng.random(n) * 4, 1)
    return {"prediction": gold + 1.5 * rng.standard_normal(n), "gold": gold}


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
@pytest.mark.parametrize("name", ["pearson", "spearman"])
@pytest.mark.parametrize("n, resamples, confidence, seed", [(30, 400, 0.95, 3), (150, 1000, 0.9, 20261006)])
def test_methods_equal_scipy_bootstrap_on_the_data(method: str, name: str, n: int, resamples: int,
                                                   confidence: float, seed: int) -> None:
    """scipy.stats.bootstrap given the two columns themselves (paired), its own rng: the same interval."""
    arrays = _sts(n, seed)

    def statistic(prediction: np.ndarray, gold: np.ndarray, axis: int = -1) -> np.ndarray:
        """scipy's pearsonr along the last axis (Spearman: of scipy's average ranks, as spearmanr computes it),
        held to spearmanr's and pearsonr's own value on the first row."""
        prediction, gold = np.broadcast_arrays(prediction, gold)
        first = (prediction.reshape(-1, prediction.shape[-1])[0], gold.reshape(-1, gold.shape[-1])[0])
        if name == "spearman":
            prediction, gold = stats.rankdata(prediction, axis=-1), stats.rankdata(gold, axis=-1)
        values = stats.pearsonr(prediction, gold, axis=-1).statistic
        own = {"pearson": stats.pearsonr, "spearman": stats.spearmanr}[name](*first).statistic
        assert np.ravel(values)[0] == pytest.approx(own, abs=1e-12)
        return values

    reference = stats.bootstrap((arrays["prediction"], arrays["gold"]), statistic, paired=True, vectorized=True,
                                n_resamples=resamples, confidence_level=confidence, method=method,
                                batch=BOOTSTRAP_BATCH, rng=np.random.default_rng(seed))
    score = estimate(name, arrays, resamples=resamples, confidence=confidence, seed=seed, interval=method)
    assert score.interval == method
    assert score.ci_low == pytest.approx(reference.confidence_interval.low, abs=1e-12)
    assert score.ci_high == pytest.approx(reference.confidence_interval.high, abs=1e-12)


def test_centred_is_the_percentile_interval_moved_onto_the_value() -> None:
    arrays = _sts(80, 5)
    resampled = resample("spearman", arrays, resamples=1000, seed=9)
    low, high = np.quantile(resampled.values, [0.025, 0.975])
    shift = resampled.point - np.median(resampled.values)
    got = resampled.interval("centred", 0.95)
    assert got == pytest.approx((low + shift, high + shift), abs=1e-12)
    assert got[0] <= resampled.point <= got[1]


@pytest.mark.parametrize("method", ["percentile", "basic", "centred"])
def test_an_interval_is_the_percentile_interval_of_its_plausible_values(method: str) -> None:
    """compare's P(A better) and the leaderboard's ranks read the plausible values: they must be the interval's."""
    values = np.random.default_rng(2).gamma(2.0, size=1000)
    got = interval(method, 1.3, values, 0.9)
    assert percentile_interval(plausible(method, 1.3, values), 0.9) == pytest.approx(got, abs=1e-12)


def test_the_clustering_case_the_issue_met() -> None:
    """77 classes, 3,000 documents, 62 % in their own cluster: every resample's V-measure lies above the value (a
    plug-in of a sample with duplicates), so the percentile interval leaves the value out; the centred one (the
    auto default of the clustering measures) holds it, and BCa says in one line that it cannot be computed."""
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 77, 3000)
    clusters = np.where(rng.random(3000) < 0.62, gold, rng.integers(0, 77, 3000))
    arrays = {"cluster_id": clusters.astype(float), "gold_class": gold.astype(float)}
    resampled = resample("v_measure", arrays, resamples=400, seed=1)
    low, _ = resampled.interval("percentile", 0.95)
    assert resampled.point < low  # the broken promise, reproduced
    assert np.all(resampled.values > resampled.point)
    for name in ("v_measure", "nmi"):
        score = estimate(name, arrays, resamples=400, confidence=0.95, seed=1)
        assert score.interval == "centred" and score.ci_low <= score.value <= score.ci_high
    with pytest.raises(MetricError) as caught:
        resampled.interval("bca", 0.95)
    assert "BCa interval is undefined" in caught.value.one_line() and "\n" not in caught.value.one_line()


def test_auto_is_the_metric_s_declared_method_and_every_declared_method_exists() -> None:
    for name, metric in METRICS.items():
        assert metric.interval in INTERVAL_METHODS, name
        assert method_of(name, "auto") == metric.interval
        assert method_of(name, "basic") == "basic"
    # the methods bench/coverage.py chose (BENCHMARKS.md): centred where a resample's duplicates bias the statistic
    centred = {"v_measure", "nmi", "ami", "ari", "f1_macro", "f1_weighted", "precision_macro", "precision_weighted",
               "recall_macro", "multilabel_f1_macro",  # by analogy with f1_macro: not yet in bench/coverage.py
               "pair_max_ap", "pair_max_accuracy", "pair_max_f1",
               *(f"pair_best_{what}{suffix}" for what in ("accuracy", "f1")
                 for suffix in ("", "_dot", "_euclidean", "_manhattan"))}
    assert {name for name, metric in METRICS.items() if metric.interval == "centred"} == centred
    assert {metric.interval for name, metric in METRICS.items() if name not in centred} == {"percentile"}


def test_an_unknown_method_is_one_line() -> None:
    with pytest.raises(MetricError) as caught:
        interval("student", 0.5, np.arange(10.0), 0.9)
    assert "unknown interval method 'student'" in caught.value.one_line()


def test_a_metric_entry_with_an_unknown_method_is_refused_at_registration() -> None:
    from specrun.core.contracts import CHECKS

    entry = MetricEntry(("prediction",), lambda x, weights: x.sum(), interval="student")
    assert any("interval must be one of" in problem for problem in CHECKS["metric"](entry, ()))


def test_bca_jackknife_counts_units_of_a_jackknife_sample() -> None:
    """unit_counts of (batch, n - 1) indices (scipy's jackknife samples) counts each unit of n."""
    index = np.array([[1, 2, 3], [0, 2, 3]])
    np.testing.assert_array_equal(unit_counts(index, 4), [[0, 1, 1, 1], [1, 0, 1, 1]])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(12, 60), seed=st.integers(0, 2**31 - 1), skew=st.floats(0.3, 3.0))
def test_the_centred_interval_holds_its_value_on_any_data(n: int, seed: int, skew: float) -> None:
    rng = np.random.default_rng(seed)
    arrays = {"rr": rng.gamma(skew, size=n) / (1 + rng.gamma(skew, size=n)), "prediction": rng.random(n),
              "gold": rng.random(n)}
    for name in ("mrr", "pearson"):
        low, high = resample(name, arrays, resamples=200, seed=seed).interval("centred", 0.95)
        assert low <= METRICS[name].statistic(*[arrays[k] for k in METRICS[name].inputs],
                                              weights=np.ones(n)) <= high
