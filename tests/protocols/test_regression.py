"""Regression and SentEval's supervised STS probe against scikit-learn fitted directly, and the regression
measures against scikit-learn and scipy on the repeated items each resample stands for."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk
from sklearn.linear_model import LinearRegression

from specrun.core.contracts import RunContext
from specrun.core.errors import DataError
from specrun.core.types import Item
from specrun.metrics import estimate
from specrun.metrics.regression import kendall_tau, mae, r2, regression_spearman, rmse
from specrun.protocols.regression import RegressionOptions, RegressionProtocol, subsamples
from specrun.protocols.sts import StsOptions, StsProtocol, pair_features


def embedded(n: int, seed: int, prefix: str) -> tuple[list[Item], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    vectors = {f"{prefix}{i}": rng.standard_normal(5) for i in range(n)}
    items = [Item(id=f"{prefix}{i}", fields={"text": f"{prefix}{i}", "target": float(vectors[f"{prefix}{i}"][0]
                                                                                     + rng.normal(0, 0.1))})
             for i in range(n)]
    return items, vectors


@pytest.mark.parametrize("n_samples, runs, draw", [("all", 1, "uniform"), (15, 3, "uniform"), (15, 3, "binned")])
def test_regression_predictions_equal_linear_regression_fitted_directly(n_samples: object, runs: int,
                                                                        draw: str) -> None:
    fit, vectors = embedded(40, 0, "f")
    test, more = embedded(12, 1, "t")
    vectors |= more
    options = RegressionOptions(fit_split="train", n_samples=n_samples, n_experiments=runs,  # type: ignore[arg-type]
                                draw=draw, bins=3)  # type: ignore[arg-type]
    embed = lambda texts, _field: np.stack([vectors[t] for t in texts])  # noqa: E731
    out = RegressionProtocol().run(test, RunContext(embed, {"train": fit}), options)
    x = np.stack([vectors[i.id] for i in fit])
    y = np.array([i.fields["target"] for i in fit])
    for run, chosen in enumerate(subsamples(y, options)):
        model = LinearRegression().fit(x[chosen], y[chosen])
        np.testing.assert_allclose(out.arrays["predicted_value"][:, run],
                                   model.predict(np.stack([vectors[i.id] for i in test])), atol=1e-10)
    score = estimate("rmse", out.arrays, resamples=50, confidence=0.9, seed=2)
    per_run = [np.sqrt(sk.mean_squared_error(out.arrays["gold_value"], out.arrays["predicted_value"][:, r]))
               for r in range(runs)]
    assert score.value == pytest.approx(np.mean(per_run), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_measures_equal_scikit_learn_and_scipy_on_repeated_items(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 25))
    gold, predicted = np.round(rng.random(n) * 5, 1), rng.random((n, 2)) * 5
    weights = rng.integers(0, 3, (3, n)).astype(float)
    weights[:, :2] += 1
    references = [(rmse, lambda g, p: np.sqrt(sk.mean_squared_error(g, p))), (mae, sk.mean_absolute_error),
                  (r2, sk.r2_score), (regression_spearman, lambda g, p: stats.spearmanr(p, g).statistic),
                  (kendall_tau, lambda g, p: stats.kendalltau(p, g).statistic)]
    for ours, theirs in references:
        got = ours(predicted, gold, weights)
        for b in range(3):
            index = np.repeat(np.arange(n), weights[b].astype(int))
            for r in range(2):
                assert got[b, r] == pytest.approx(theirs(gold[index], predicted[index, r]), abs=1e-10)


@pytest.mark.parametrize("pairwise", [True, False])
def test_kendall_tau_is_scipy_s_to_the_last_bit_with_ties_and_repeats(pairwise: bool,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The pairwise counts (small sets) and scipy on the repeated items (large ones) give scipy's own bits, ties in
    either variable, a constant run (NaN, as scipy) and a resample of one item included."""
    from specrun.metrics import regression

    monkeypatch.setattr(regression, "PAIRWISE_ITEMS", 10**6 if pairwise else 0)
    rng = np.random.default_rng(11)
    for trial in range(40):
        n = int(rng.integers(2, 50))
        gold = np.round(rng.random(n) * 5, trial % 2)
        predicted = np.round(rng.random((n, 3)) * 4, 1 + trial % 3)
        predicted[:, 2] = predicted[0, 2] if trial % 4 == 0 else predicted[:, 2]
        weights = rng.integers(0, 4, (5, n)).astype(float)
        weights[0] = 0
        weights[0, int(rng.integers(n))] = 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns on its NaN cases
            got = kendall_tau(predicted, gold, weights)
            for b in range(5):
                index = np.repeat(np.arange(n), weights[b].astype(int))
                expected = [stats.kendalltau(predicted[index, r], gold[index]).statistic for r in range(3)]
                np.testing.assert_array_equal(got[b], expected)


def test_a_constant_fit_target_is_one_line() -> None:
    fit, _ = embedded(10, 0, "f")
    fit = [Item(id=i.id, fields={**i.fields, "target": 2.0}) for i in fit]
    with pytest.raises(DataError, match=r"every target is 2\.0"):
        RegressionProtocol().validate_items(fit, RegressionOptions(fit_split="train"), "f", {"train": fit})


def test_the_supervised_sts_probe_is_senteval_s_features_and_a_linear_regression() -> None:
    rng = np.random.default_rng(4)
    vectors = {f"s{i}": rng.standard_normal(4) for i in range(120)}

    def pairs(start: int, count: int) -> list[Item]:
        return [Item(id=f"p{i}", fields={"text1": f"s{i}", "text2": f"s{i + 60}",
                                         "gold": float(vectors[f"s{i}"] @ vectors[f"s{i + 60}"])})
                for i in range(start, start + count)]

    fit, test = pairs(0, 40), pairs(40, 20)
    embed = lambda texts, _field="": np.stack([vectors[t] for t in texts])  # noqa: E731
    out = StsProtocol().run(test, RunContext(embed, {"train": fit}), StsOptions(fit_split="train"))
    features = pair_features(embed([i.fields["text1"] for i in fit]), embed([i.fields["text2"] for i in fit]))
    model = LinearRegression().fit(features, [i.fields["gold"] for i in fit])
    expected = model.predict(pair_features(embed([i.fields["text1"] for i in test]),
                                           embed([i.fields["text2"] for i in test])))
    np.testing.assert_allclose(out.arrays["prediction"], expected, atol=1e-10)
    zero_shot = StsProtocol().run(test, RunContext(embed), StsOptions())
    assert not np.allclose(zero_shot.arrays["prediction"], expected)
    assert {text for _, text in StsProtocol().texts(test, StsOptions(fit_split="train"), {"train": fit})} == \
        {f"s{i}" for i in range(120)}


def test_experiments_that_would_all_fit_the_same_regression_are_refused() -> None:
    fit, _ = embedded(10, 0, "f")
    options = RegressionOptions(fit_split="train", n_samples=20, n_experiments=3)
    with pytest.raises(DataError, match="every experiment would fit the same regression"):
        RegressionProtocol().validate_items(fit, options, "f", {"train": fit})


def test_a_binned_draw_datasets_refuses_is_one_line() -> None:
    """Ten fit items in ten quantile bins: a bin of one item, which datasets' stratified split refuses."""
    fit, _ = embedded(10, 0, "f")
    options = RegressionOptions(fit_split="train", n_samples=5, n_experiments=2, draw="binned", bins=10)
    with pytest.raises(DataError, match=r"^binned draw of 5 fit items \(seed 42\): .*least populated class"):
        RegressionProtocol().validate_items(fit, options, "f", {"train": fit})
