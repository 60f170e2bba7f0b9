"""Metrics against scipy's own functions and hand-worked values; the bootstrap against a plain numpy loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from specrun.core.errors import MetricError
from specrun.metrics import METRICS, clear_recent, estimate, unit_counts, value
from specrun.search.cosine import cosine_rows


def test_hand_worked_example() -> None:
    # ranks of gold [1, 3, 2, 4]: d = [0, 1, -1, 0], sum d^2 = 2, rho = 1 - 6*2/(4*15) = 0.8
    prediction = np.array([0.1, 0.2, 0.3, 0.4])
    gold = np.array([1.0, 3.0, 2.0, 4.0])
    arrays = {"prediction": prediction, "gold": gold}
    assert value("spearman", arrays) == pytest.approx(0.8, abs=1e-12)
    # centred: x = [-1.5, -.5, .5, 1.5]/10, y = [-1.5, .5, -.5, 1.5]; r = (2.25-.25-.25+2.25)/5 = 0.8
    assert value("pearson", arrays) == pytest.approx(0.8, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.floats(-1, 1, allow_nan=False)), min_size=3, max_size=60))
def test_equal_to_scipy_with_ties(pairs: list[tuple[int, float]]) -> None:
    gold = np.array([p[0] for p in pairs], dtype=float)
    prediction = np.round(np.array([p[1] for p in pairs]), 1)  # rounding makes ties
    if np.ptp(gold) == 0 or np.ptp(prediction) == 0:
        return
    arrays = {"prediction": prediction, "gold": gold}
    assert value("spearman", arrays) == pytest.approx(stats.spearmanr(prediction, gold).statistic, abs=1e-9)
    assert value("pearson", arrays) == pytest.approx(stats.pearsonr(prediction, gold).statistic, abs=1e-9)


@pytest.mark.parametrize("offset", [1e5, 1e6, 3e6, -1e7])
def test_pearson_is_shift_free(offset: float) -> None:
    """Gold on a large offset (years, prices): the one-pass sums lost digits (r moved in the 7th digit at 1e5)
    and read 1e6 + s as a constant input (a bad-input hunt). Centred first, r is scipy's on every resample."""
    rng = np.random.default_rng(3)
    prediction, gold = rng.normal(size=80), rng.normal(size=80)
    gold = gold + 0.5 * prediction
    index = rng.integers(0, 80, size=(20, 80))
    gold = gold + offset
    shifted = METRICS["pearson"].statistic(prediction, gold, weights=unit_counts(index, 80))
    for row in range(20):
        assert shifted[row] == pytest.approx(stats.pearsonr(prediction[index[row]], gold[index[row]]).statistic,
                                             abs=1e-12)


@pytest.mark.parametrize("name, reference", [
    ("spearman", lambda p, g: stats.spearmanr(p, g).statistic),
    ("pearson", lambda p, g: stats.pearsonr(p, g).statistic),
])
def test_count_weighted_form_equals_scipy_on_each_resample(name: str, reference) -> None:
    """What the bootstrap computes from unit counts equals scipy on the materialised resample, ties included."""
    rng = np.random.default_rng(0)
    prediction = np.round(rng.normal(size=60), 1)
    gold = rng.integers(0, 5, size=60).astype(float)
    index = rng.integers(0, 60, size=(40, 60))
    batch = METRICS[name].statistic(prediction, gold, weights=unit_counts(index, 60))
    assert batch.shape == (40,)
    for row in range(40):
        assert batch[row] == pytest.approx(reference(prediction[index[row]], gold[index[row]]), abs=1e-12)


def test_mean_metrics_weighted_by_counts() -> None:
    values = np.array([0.0, 0.5, 1.0])
    index = np.array([[0, 0, 2], [1, 1, 1]])
    np.testing.assert_allclose(METRICS["map"].statistic(values, weights=unit_counts(index, 3)), [1 / 3, 0.5])


def test_bootstrap_interval_is_seeded_and_agrees_with_a_plain_loop() -> None:
    rng = np.random.default_rng(1)
    gold = rng.uniform(0, 4, 200)
    prediction = gold + rng.normal(0, 1.5, 200)
    arrays = {"prediction": prediction, "gold": gold}
    first = estimate("spearman", arrays, resamples=2000, confidence=0.95, seed=7)
    clear_recent()  # drawn again, not the draws the process kept
    assert first == estimate("spearman", arrays, resamples=2000, confidence=0.95, seed=7)
    assert first != estimate("spearman", arrays, resamples=2000, confidence=0.95, seed=8)
    assert first.ci_low < first.value < first.ci_high and first.n == 200
    loop_rng = np.random.default_rng(123)
    values = []
    for _ in range(2000):
        index = loop_rng.integers(0, 200, 200)
        values.append(stats.spearmanr(prediction[index], gold[index]).statistic)
    low, high = np.percentile(values, [2.5, 97.5])
    assert first.ci_low == pytest.approx(low, abs=0.02) and first.ci_high == pytest.approx(high, abs=0.02)


@pytest.mark.parametrize("name", ["pearson", "spearman"])
def test_constant_prediction_is_an_error(name: str) -> None:
    with pytest.raises(MetricError, match="prediction is constant"):
        estimate(name, {"prediction": np.full(10, 0.5), "gold": np.arange(10.0)}, resamples=100,
                 confidence=0.95, seed=0)


@pytest.mark.parametrize("name", ["pearson", "spearman"])
def test_nan_prediction_is_an_error(name: str) -> None:
    prediction = np.arange(10.0)
    prediction[3] = np.nan
    with pytest.raises(MetricError, match="non-finite"):
        estimate(name, {"prediction": prediction, "gold": np.arange(10.0)}, resamples=100, confidence=0.95, seed=0)


def test_degenerate_resamples_are_an_error() -> None:
    # three units, two of them equal: some resamples are constant, so the interval is undefined
    with pytest.raises(MetricError, match="degenerate"):
        estimate("pearson", {"prediction": np.array([0.1, 0.1, 0.9]), "gold": np.array([1.0, 1.0, 3.0])},
                 resamples=1000, confidence=0.95, seed=0)


def test_cosine_rows_against_a_direct_formula() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(20, 8)), rng.normal(size=(20, 8))
    expected = [float(x @ y / np.sqrt((x @ x) * (y @ y))) for x, y in zip(a, b, strict=True)]
    np.testing.assert_allclose(cosine_rows(a, b), expected, rtol=0, atol=1e-12)
    assert cosine_rows(a[:1], a[:1])[0] == 1.0  # identical vectors: exactly 1, so identical pairs tie


def test_bootstrap_speed_shape_for_10k_pairs() -> None:
    """Behaviour, not seconds: 1000 resamples over 10,000 pairs run through the vectorised path."""
    rng = np.random.default_rng(3)
    gold = rng.uniform(0, 5, 10_000)
    result = estimate("spearman", {"prediction": gold + rng.normal(0, 1, 10_000), "gold": gold}, resamples=1000,
                      confidence=0.95, seed=0)
    assert result.ci_low < result.value < result.ci_high and result.n == 10_000


def test_batches_depend_only_on_the_set_of_texts() -> None:
    from specrun.encoders.batching import batches_by_length

    texts = ["bb", "a", "cc", "ddd", "e"]
    shuffled = ["e", "ddd", "cc", "a", "bb"]
    as_sets = [[{t[i] for i in batch} for batch in batches_by_length(t, 2)] for t in (texts, shuffled)]
    assert as_sets[0] == as_sets[1] == [{"ddd", "bb"}, {"cc", "a"}, {"e"}]
