"""How often specrun's intervals cover what they claim to cover, measured by simulation.

For each metric family a synthetic population whose true value is known (computed on 10^5-10^6 units by scipy or
scikit-learn, not by specrun), samples of the sizes specrun's specs have, and repetitions; every repetition goes
through specrun's own estimate code path (`metrics.estimate.resample`: the one resampling driver, the two-level
draws of fitted and random kinds) and then every interval method of `metrics.intervals`. Fitted and random kinds
run the protocol itself (`ClassificationProtocol.run`, `ClusteringProtocol.run`, `BitextMiningProtocol.run`) on
vectors drawn afresh each repetition, so the truth is the population value of the whole procedure.

Two truths are reported where they differ:
  expected    the statistic's expectation on n units drawn like these (what the benchmark's number is on average at
              its size; Monte Carlo over fresh samples). The intervals claim to cover this.
  population  the statistic on the whole population (n -> infinity). For a mean (accuracy, MRR, ...) the two are
              the same; a plug-in statistic (V-measure, NMI), a threshold or function chosen on the same units
              (best accuracy, max AP) or a mining over the units themselves is biased at size n, and only `basic`
              aims at the population value.

Per family, metric, size and method it prints coverage of the expected value with its Clopper-Pearson interval,
coverage of the population value, the mean width and the share of samples whose value lies outside its own
interval. `--part paired` does the same for `compare`'s paired difference (coverage of the true difference and
the calibration of P(A better) in deciles), `--part ranks` for the leaderboard's rank intervals, `--part suites`
for a suite's aggregate over two members scored on the same units (their draws independent, and shared).

    .venv/bin/python bench/coverage.py                      # everything, 1,000 repetitions (about an hour, 2 cores)
    .venv/bin/python bench/coverage.py --reps 200 --families sts clustering --json out.json
    .venv/bin/python bench/coverage.py --markdown out.json  # the tables of BENCHMARKS.md from a saved run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

if "--jobs" not in sys.argv or sys.argv[sys.argv.index("--jobs") + 1] != "1":
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread per worker: the workers are the parallelism
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

CONFIDENCE = 0.95
METHODS = ("percentile", "basic", "centred", "bca")

Arrays = dict[str, np.ndarray]


# ------------------------------------------------------------------------------------------------ populations


@dataclass
class Family:
    """A metric family: its metrics, the sizes to sample, what shipped spec each size mirrors, and a population.
    `sample(rng, n)` gives one sample's protocol outputs; `population_value(metric)` the truth at n -> infinity
    (None where the statistic has none); `expected_draws` how many fresh samples estimate the expected value."""

    name: str
    metrics: tuple[str, ...]
    sizes: tuple[int, ...]
    like: str
    build: Callable[[np.random.Generator], Any]
    sample: Callable[[Any, np.random.Generator, int], Arrays]
    population_value: Callable[[Any, str], float | None]
    expected_draws: int = 4000
    skip: frozenset[tuple[str, int]] = frozenset()  # (metric, size) pairs too slow to repeat (said in the output)
    state: Any = None

    def ready(self) -> Any:
        if self.state is None:
            self.state = self.build(np.random.default_rng([20261202, sum(map(ord, self.name))]))
        return self.state


def rows_of(columns: Arrays, rng: np.random.Generator, n: int) -> Arrays:
    """n units drawn with replacement from a population of 10^5-10^6 (as good as independent draws)."""
    index = rng.integers(0, len(next(iter(columns.values()))), n)
    return {key: values[index] for key, values in columns.items()}


# STS: BIOSSES-like gold (the mean of five 0-4 ratings, so many ties) against skewed cosines
def _sts_build(rng: np.random.Generator) -> Arrays:
    n = 1_000_000
    z = rng.normal(size=n)
    ratings = np.clip(np.round(2 + 1.1 * z[:, None] + rng.normal(0, 0.9, (n, 5))), 0, 4)
    return {"prediction": np.round(0.55 + 0.25 * np.tanh(0.9 * z + 0.55 * rng.normal(size=n)), 6),
            "gold": ratings.mean(axis=1)}


def _sts_truth(pop: Arrays, metric: str) -> float:
    from scipy import stats

    test = stats.pearsonr if metric == "pearson" else stats.spearmanr
    return float(test(pop["prediction"], pop["gold"]).statistic)


# classification with the predictions fixed: 10 imbalanced classes, per-class recall 0.55-0.95
def _classes_build(rng: np.random.Generator) -> Arrays:
    n, k = 1_000_000, 10
    priors = rng.dirichlet(np.full(k, 2.0))
    recall = rng.uniform(0.55, 0.95, k)
    gold = rng.choice(k, n, p=priors)
    wrong = (gold + rng.integers(1, k, n)) % k
    predicted = np.where(rng.random(n) < recall[gold], gold, wrong)
    return {"predicted_class": predicted.astype(float), "gold_class": gold.astype(float)}


def _classes_truth(pop: Arrays, metric: str) -> float:
    from sklearn import metrics

    y, p = pop["gold_class"], pop["predicted_class"]
    if metric == "accuracy":
        return float(metrics.accuracy_score(y, p))
    if metric == "ap_binary":
        return float(metrics.average_precision_score(y, p))
    name, average = metric.split("_")
    scorer = {"f1": metrics.f1_score, "precision": metrics.precision_score, "recall": metrics.recall_score}[name]
    return float(scorer(y, p, average=average, zero_division=0))


def _binary_build(rng: np.random.Generator) -> Arrays:
    n = 1_000_000
    gold = (rng.random(n) < 0.35).astype(float)
    right = rng.random(n) < np.where(gold == 1, 0.7, 0.85)
    return {"predicted_class": np.where(right, gold, 1 - gold), "gold_class": gold}


_binary_truth = _classes_truth


# clustering with the assignments fixed: K classes, each mostly in its own cluster
def _clusters_build(k: int, purity: float) -> Callable[[np.random.Generator], Arrays]:
    def build(rng: np.random.Generator) -> Arrays:
        n = 1_000_000
        priors = rng.dirichlet(np.full(k, 4.0))
        gold = rng.choice(k, n, p=priors)
        spill = rng.dirichlet(np.full(k, 0.5), k)  # where each class's strays go
        strays = np.empty(n, dtype=np.int64)
        for c in range(k):
            members = gold == c
            strays[members] = rng.choice(k, int(members.sum()), p=spill[c])
        cluster = np.where(rng.random(n) < purity, gold, strays)
        return {"cluster_id": cluster.astype(float), "gold_class": gold.astype(float)}
    return build


def _clusters_truth(pop: Arrays, metric: str) -> float:
    from sklearn import metrics

    scorer = {"v_measure": metrics.v_measure_score, "nmi": metrics.normalized_mutual_info_score,
              "ami": metrics.adjusted_mutual_info_score, "ari": metrics.adjusted_rand_score}[metric]
    return float(scorer(pop["gold_class"].astype(int), pop["cluster_id"].astype(int)))


# pair classification: 30 % positives, four similarity functions as four noisy views of one latent score
FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")


def _pairs_build(rng: np.random.Generator) -> Arrays:
    n = 1_000_000
    label = (rng.random(n) < 0.3).astype(float)
    z = 1.3 * label + rng.normal(size=n)
    out = {f"{f}_score": np.round(np.tanh(0.35 * (z + 0.35 * rng.normal(size=n)) + 0.3), 4) for f in FUNCTIONS}
    out["pair_label"] = label
    out["threshold_score"] = out["cosine_score"]  # a cosine protocol's: what its fixed thresholds cut
    threshold = _best_threshold(out["threshold_score"], label)
    out["accuracy_threshold"] = np.full(n, threshold[0])
    out["f1_threshold"] = np.full(n, threshold[1])
    return out


def _best_threshold(score: np.ndarray, label: np.ndarray) -> tuple[float, float]:
    """The population's best accuracy and best F1 thresholds, from scikit-learn's curves (score > t positive)."""
    from sklearn import metrics

    fpr, tpr, thresholds = metrics.roc_curve(label, score)
    positives, negatives = label.sum(), len(label) - label.sum()
    accuracy = (tpr * positives + (1 - fpr) * negatives) / len(label)
    precision, recall, f1_thresholds = metrics.precision_recall_curve(label, score)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.nan_to_num(2 * precision * recall / (precision + recall))[:-1]
    # roc_curve's threshold t means score >= t; the next lower distinct score makes it score > t'
    distinct = np.unique(score)
    below = lambda t: distinct[max(np.searchsorted(distinct, t) - 1, 0)]  # noqa: E731
    return float(below(thresholds[int(np.argmax(accuracy))])), float(below(f1_thresholds[int(np.argmax(f1))]))


def _pairs_truth(pop: Arrays, metric: str) -> float:
    from sklearn import metrics

    label = pop["pair_label"]

    def best(score: np.ndarray, what: str) -> float:
        if what == "ap":
            return float(metrics.average_precision_score(label, score))
        fpr, tpr, _ = metrics.roc_curve(label, score)
        if what == "accuracy":
            return float(np.max((tpr * label.sum() + (1 - fpr) * (len(label) - label.sum())) / len(label)))
        precision, recall, _ = metrics.precision_recall_curve(label, score)
        with np.errstate(invalid="ignore", divide="ignore"):
            return float(np.nanmax(2 * precision * recall / (precision + recall)))

    if metric == "pair_accuracy_at_threshold":
        return float(np.mean((pop["threshold_score"] > pop["accuracy_threshold"]) == (label == 1)))
    if metric == "pair_f1_at_threshold":
        return float(metrics.f1_score(label, pop["threshold_score"] > pop["f1_threshold"]))
    what = metric.removeprefix("pair_").removeprefix("best_").removeprefix("max_")
    if metric.startswith("pair_max_"):
        return max(best(pop[f"{f}_score"], what) for f in FUNCTIONS)
    return best(pop["cosine_score"], what)


# ranking: per-query measures of simulated candidate lists (protocols.ranking.rank_measures), averaged
RANKING = ("map", "mrr", "ndcg_at_10", "precision_at_1", "precision_at_5", "recall_at_10")
_RANKING_INPUTS = {"map": "ap", "mrr": "rr"}


def _ranking_build(rng: np.random.Generator) -> Arrays:
    from specrun.protocols.ranking import rank_measures

    queries, candidates = 100_000, 30
    columns: dict[str, list[float]] = {}
    relevant_counts = 1 + rng.binomial(4, 0.25, queries)
    difficulty = rng.normal(1.2, 0.8, queries)
    for q in range(queries):
        relevance = np.zeros(candidates)
        relevance[:relevant_counts[q]] = 1
        scores = rng.normal(size=candidates) + difficulty[q] * relevance
        measures = rank_measures(relevance[np.argsort(-scores, kind="stable")], int(relevant_counts[q]))
        for key, value in measures.items():
            columns.setdefault(key, []).append(value)
    return {key: np.asarray(values) for key, values in columns.items()
            if key in {_RANKING_INPUTS.get(m, m) for m in RANKING}}


def _ranking_truth(pop: Arrays, metric: str) -> float:
    return float(np.mean(pop[_RANKING_INPUTS.get(metric, metric)]))


# regression with the predictions fixed: skewed targets, heteroscedastic errors
def _regression_build(rng: np.random.Generator) -> Arrays:
    n = 1_000_000
    gold = 1 + rng.gamma(2.0, 1.5, n)
    predicted = 0.7 * gold + 1 + rng.normal(size=n) * (0.3 + 0.25 * gold)
    return {"predicted_value": predicted, "gold_value": gold}


def _regression_truth(pop: Arrays, metric: str) -> float:
    from scipy import stats
    from sklearn import metrics

    p, g = pop["predicted_value"], pop["gold_value"]
    return float({"rmse": lambda: np.sqrt(metrics.mean_squared_error(g, p)),
                  "mae": lambda: metrics.mean_absolute_error(g, p), "r2": lambda: metrics.r2_score(g, p),
                  "kendall_tau": lambda: stats.kendalltau(p, g).statistic,
                  "regression_spearman": lambda: stats.spearmanr(p, g).statistic}[metric]())


# summarization: 16 machine summaries per text, human scores 1-5, per-text correlations averaged over texts
def _summaries_build(rng: np.random.Generator) -> Arrays:
    from scipy import stats

    texts, summaries = 100_000, 16
    quality = rng.normal(size=(texts, summaries))
    human = np.clip(np.round(3 + quality + rng.normal(0, 0.7, quality.shape)), 1, 5)
    strength = rng.uniform(0.1, 1.2, (texts, 1))
    predicted = np.round(0.6 + 0.1 * (strength * quality + rng.normal(size=quality.shape)), 4)
    valid = (np.ptp(human, axis=1) > 0) & (np.ptp(predicted, axis=1) > 0)
    ranks_h, ranks_p = stats.rankdata(human, axis=1), stats.rankdata(predicted, axis=1)

    def rows_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nan_to_num((a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1)))

    return {"text_spearman": np.where(valid, rows_pearson(ranks_h, ranks_p), 0.0),
            "text_pearson": np.where(valid, rows_pearson(human, predicted), 0.0), "valid": valid.astype(float)}


def _summaries_truth(pop: Arrays, metric: str) -> float:
    values = pop["text_spearman" if metric == "summary_spearman" else "text_pearson"]
    return float(values[pop["valid"] > 0].mean())


# conditional STS: each sentence pair under two conditions, gold 1-5, predictions sharing a pair effect
def _conditional_build(rng: np.random.Generator) -> Arrays:
    n = 1_000_000
    base = rng.normal(size=n)
    gold_a = np.clip(np.round(3 + base + rng.normal(0, 0.8, n)), 1, 5)
    gold_b = np.clip(np.round(3 + base + rng.normal(0, 0.8, n)), 1, 5)
    pair = rng.normal(0, 0.6, n)
    prediction_a = np.round(0.5 + 0.08 * (gold_a + pair + rng.normal(0, 1.0, n)), 6)
    prediction_b = np.round(0.5 + 0.08 * (gold_b + pair + rng.normal(0, 1.0, n)), 6)
    return {"prediction_a": prediction_a, "prediction_b": prediction_b, "gold_a": gold_a, "gold_b": gold_b,
            "valid_a": np.ones(n), "valid_b": np.ones(n)}


def _conditional_truth(pop: Arrays, metric: str) -> float:
    from scipy import stats

    if metric == "conditional_spearman":
        return float(stats.spearmanr(np.r_[pop["prediction_a"], pop["prediction_b"]],
                                     np.r_[pop["gold_a"], pop["gold_b"]]).statistic)
    decided = pop["gold_a"] != pop["gold_b"]
    right = (pop["prediction_a"] - pop["prediction_b"]) * (pop["gold_a"] - pop["gold_b"]) > 0
    return float(right[decided].mean())


# the procedures: vectors drawn afresh, the protocol itself run on them
def _embedder(vectors: dict[str, np.ndarray]) -> Callable[[Sequence[str], str], np.ndarray]:
    return lambda texts, _field: np.stack([vectors[text] for text in texts])


@dataclass
class Mixture:
    """A Gaussian mixture: class means in d dimensions, class priors; and, for a benchmark whose fit split is
    fixed, that split (drawn once)."""

    means: np.ndarray
    priors: np.ndarray
    pool: tuple[np.ndarray, np.ndarray] | None = None

    def draw(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.choice(len(self.priors), n, p=self.priors)
        return self.means[labels] + rng.normal(size=(n, self.means.shape[1])), labels


def _mixture(k: int, d: int, spread: float, fixed_pool: bool = False) -> Callable[[np.random.Generator], Mixture]:
    def build(rng: np.random.Generator) -> Mixture:
        mix = Mixture(means=rng.normal(0, spread, (k, d)), priors=rng.dirichlet(np.full(k, 6.0)))
        if fixed_pool:
            mix.pool = _fit_pool(mix, rng)
        return mix
    return build


def _fit_pool(mix: Mixture, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    while True:
        fit_x, fit_y = mix.draw(rng, FIT_POOL * len(mix.priors))
        if len(set(fit_y.tolist())) == len(mix.priors):
            return fit_x, fit_y  # every label, as the protocol requires of both splits


FIT_PER_LABEL, FIT_POOL = 8, 60  # MTEB's 8 items per label per experiment, from a fit split of 60 per label


def _fitted_predictions(mix: Mixture, rng: np.random.Generator, test_x: np.ndarray,
                        test_y: np.ndarray) -> Arrays:
    """ClassificationProtocol.run on the benchmark's fit split (the mixture's fixed one, else a fresh one of 60
    per label): 10 experiments of 8 per label each, undersampled with a fresh seed."""
    from specrun.core.contracts import RunContext
    from specrun.core.types import Item
    from specrun.protocols.classification import ClassificationOptions, ClassificationProtocol

    fit_x, fit_y = mix.pool if mix.pool is not None else _fit_pool(mix, rng)
    vectors = {f"t{i}": v for i, v in enumerate(test_x)} | {f"f{i}": v for i, v in enumerate(fit_x)}
    items = [Item(id=f"t{i}", fields={"text": f"t{i}", "label": int(y)}) for i, y in enumerate(test_y)]
    fit = [Item(id=f"f{i}", fields={"text": f"f{i}", "label": int(y)}) for i, y in enumerate(fit_y)]
    options = ClassificationOptions(fit_split="train", samples_per_label=FIT_PER_LABEL, n_experiments=10,
                                    short_classes="take_what_there_is", seed=int(rng.integers(2**31)))
    return ClassificationProtocol().run(items, RunContext(_embedder(vectors), {"train": fit}), options).arrays


def _fitted_sample(mix: Mixture, rng: np.random.Generator, n: int) -> Arrays:
    while True:
        test_x, test_y = mix.draw(rng, n)
        if len(set(test_y.tolist())) == len(mix.priors):
            return _fitted_predictions(mix, rng, test_x, test_y)


def _fitted_truth(mix: Mixture, metric: str) -> float:
    """E over experiments (and fit splits, where they are drawn afresh) of the probe's value on a population of
    200,000 test items."""
    from sklearn import metrics

    rng = np.random.default_rng(7)
    test_x, test_y = mix.draw(rng, 200_000)
    values = []
    for _ in range(40):  # 40 x 10 experiments
        predicted = _fitted_predictions(mix, rng, test_x, test_y)["predicted_class"]
        for r in range(predicted.shape[1]):
            values.append(metrics.accuracy_score(test_y, predicted[:, r]) if metric == "accuracy" else
                          metrics.f1_score(test_y, predicted[:, r], average="macro"))
    return float(np.mean(values))


def _kmeans_sample(mix: Mixture, rng: np.random.Generator, n: int) -> Arrays:
    from specrun.core.contracts import RunContext
    from specrun.core.types import Item
    from specrun.protocols.clustering import ClusteringOptions, ClusteringProtocol

    x, y = mix.draw(rng, n)
    items = [Item(id=f"d{i}", fields={"text": f"d{i}", "label": int(label)}) for i, label in enumerate(y)]
    options = ClusteringOptions(n_runs=10, seed=int(rng.integers(2**31)))
    embed = _embedder({f"d{i}": v for i, v in enumerate(x)})
    return ClusteringProtocol().run(items, RunContext(embed), options).arrays


SET_SIZES, SET_LABELS = (200, 500), (8, 13)  # MTEB's legacy sets: a few hundred documents, about 10 labels each


def _sets_sample(alike: Mixture | None, rng: np.random.Generator, n: int) -> Arrays:
    """n sets through ClusteringProtocol.run with `sets` (MTEB's legacy per-set V-measure, one k-means run per
    set, as AbsTaskClusteringLegacy): each set 200-500 documents, drawn from one 10-label mixture (`alike`) or
    from a mixture of its own (8-12 labels, its own means and spread: sets unlike each other, as a task whose sets
    hold different topics)."""
    from specrun.core.contracts import RunContext
    from specrun.core.types import Item
    from specrun.protocols.clustering import ClusteringOptions, ClusteringProtocol

    items, vectors = [], {}
    for number in range(n):
        mix = alike or _mixture(int(rng.integers(*SET_LABELS)), 16, float(rng.uniform(0.5, 0.8)))(rng)
        while True:
            x, y = mix.draw(rng, int(rng.integers(SET_SIZES[0], SET_SIZES[1] + 1)))
            if len(np.unique(y)) > 1:
                break
        for i, (v, label) in enumerate(zip(x, y, strict=True)):
            vectors[f"s{number}d{i}"] = v
            items.append(Item(id=f"s{number}d{i}", fields={"text": f"s{number}d{i}", "label": int(label),
                                                           "set": number}))
    options = ClusteringOptions(sets="set", n_runs=1, seed=int(rng.integers(2**31)))
    return ClusteringProtocol().run(items, RunContext(_embedder(vectors)), options).arrays


# corpus reranking: each query's candidates ranked by a noisy score, graded qrels (some judged documents outside
# the candidates, some queries with no relevant document), measured by the kind's own `measures`
def _reranking_build(rng: np.random.Generator) -> Arrays:
    from specrun.core.corpus import SharedCorpus
    from specrun.protocols.corpus_reranking import measures

    queries, documents = 20_000, 5_000
    corpus = SharedCorpus.from_lists(ids=[f"d{i}" for i in range(documents)], texts=[""] * documents)
    ranked = np.full((queries, 100), -1, dtype=np.int64)
    qrels = []
    for q in range(queries):
        candidates = rng.choice(documents, int(rng.integers(20, 101)), replace=False)
        judged = candidates[:int(rng.integers(1, 6))]  # the first few candidates are judged, graded 0-2
        grades = rng.choice(3, len(judged), p=(0.2, 0.5, 0.3))
        outside = rng.choice(documents, int(rng.binomial(2, 0.3)))  # relevant, not among the candidates
        qrels.append({f"d{d}": int(g) for d, g in zip([*judged, *outside], [*grades, *[1] * len(outside)],
                                                         strict=True)})
        gain = np.zeros(len(candidates))
        gain[:len(judged)] = grades
        score = rng.normal(size=len(candidates)) + rng.gamma(2.0, 0.6) * gain
        ranked[q, :len(candidates)] = candidates[np.argsort(-score, kind="stable")]
    return measures(ranked, qrels, corpus)


def _bitext_sample(_: Any, rng: np.random.Generator, n: int) -> Arrays:
    from specrun.core.contracts import NoOptions, RunContext
    from specrun.core.types import Item
    from specrun.protocols.bitext_mining import BitextMiningProtocol

    targets = rng.normal(size=(n, 16))
    sources = targets + 0.75 * rng.normal(size=targets.shape)
    vectors = {f"s{i}": v for i, v in enumerate(sources)} | {f"t{i}": v for i, v in enumerate(targets)}
    items = [Item(id=f"b{i}", fields={"source": f"s{i}", "target": f"t{i}"}) for i in range(n)]
    return BitextMiningProtocol().run(items, RunContext(_embedder(vectors)), NoOptions()).arrays


# query groups (InstructIR's robustness@10): each group 2-5 instruction variants of one query, their nDCG@10 drawn
# around the group's own level (some variants fail outright); the statistic is the mean over groups of each
# group's lowest, resampled over queries with a group weighed by its first query (metrics.grouped)
def _groups_build(rng: np.random.Generator) -> Arrays:
    groups = 200_000
    sizes = rng.integers(2, 6, groups)
    level = np.repeat(rng.beta(2.0, 1.5, groups), sizes)
    values = np.clip(level + 0.15 * rng.normal(size=level.size), 0.0, 1.0)
    values[rng.random(level.size) < 0.1] = 0.0
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return {"ndcg_cut_10": values, "sizes": sizes, "starts": starts}


def _groups_sample(pop: Arrays, rng: np.random.Generator, n: int) -> Arrays:
    """n groups drawn with replacement, each with all its queries; a group drawn twice is two groups."""
    chosen = rng.integers(0, len(pop["sizes"]), n)
    sizes = pop["sizes"][chosen]
    offsets = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    rows = np.repeat(pop["starts"][chosen], sizes) + offsets
    return {"ndcg_cut_10": pop["ndcg_cut_10"][rows], "query_group": np.repeat(np.arange(n), sizes).astype(float)}


def _groups_truth(pop: Arrays, metric: str) -> float:
    return float(np.minimum.reduceat(pop["ndcg_cut_10"], pop["starts"]).mean())


def _none(_: Any, __: str) -> None:
    return None


FAMILIES = [
    Family("sts", ("pearson", "spearman"), (100, 1000, 5000), "BIOSSES 100, JSTS 1,457, SICK-R 9,927 pairs",
           _sts_build, rows_of, _sts_truth),
    Family("classification", ("accuracy", "f1_macro", "f1_weighted"), (100, 1000, 5000),
           "predictions fixed; Banking77 test 3,080", _classes_build, rows_of, _classes_truth),
    Family("classification_fitted", ("accuracy", "f1_macro"), (300, 3000),
           "10 logistic-regression experiments of 8 per label from one fixed fit split (two-level); Banking77 3,080",
           _mixture(5, 12, 0.55, fixed_pool=True), _fitted_sample, _fitted_truth, expected_draws=300),
    Family("classification_fitted_pools", ("accuracy", "f1_macro"), (300, 3000),
           "the same with a fresh fit split every time: the truth averages over fit splits too",
           _mixture(5, 12, 0.55), _fitted_sample, _fitted_truth, expected_draws=300),
    Family("classification_more", ("precision_macro", "recall_macro", "precision_weighted", "recall_weighted"),
           (100, 1000, 5000), "predictions fixed, as classification", _classes_build, rows_of, _classes_truth),
    Family("classification_binary", ("ap_binary", "accuracy", "f1_macro"), (100, 1000, 5000),
           "two classes, 35 % positives, predictions fixed", _binary_build, rows_of, _binary_truth),
    Family("clustering", ("v_measure", "nmi", "ami", "ari"), (100, 1000, 5000),
           "assignments fixed, 7 classes; MasakhaNEWS eng 7 labels", _clusters_build(7, 0.55), rows_of,
           _clusters_truth),
    Family("clustering77", ("v_measure", "nmi", "ari"), (3000,), "assignments fixed, 77 classes; BANKING77 3,080",
           _clusters_build(77, 0.62), rows_of, _clusters_truth, expected_draws=2000),
    Family("clustering_weak", ("v_measure", "nmi", "ami", "ari"), (1000,),
           "assignments fixed, 6 classes near chance; MasakhaNEWS headlines with the hashing adapter",
           _clusters_build(6, 0.05), rows_of, _clusters_truth),
    Family("clustering_kmeans", ("v_measure", "nmi", "ari"), (300, 1000),
           "10 MiniBatchKMeans runs (two-level), 7 classes", _mixture(7, 8, 1.1), _kmeans_sample, _none,
           expected_draws=300),
    Family("clustering_sets", ("v_measure",), (5, 10, 30),
           "n sets (legacy `sets`, one k-means run each) of 200-500 documents, each its own 8-12 labels",
           lambda rng: None, _sets_sample, _none, expected_draws=200),
    Family("clustering_sets_alike", ("v_measure",), (5, 10, 30),
           "n sets of 200-500 documents, all drawn from one 10-label mixture", _mixture(10, 16, 0.65),
           _sets_sample, _none, expected_draws=200),
    Family("pair_classification", ("pair_ap", "pair_best_accuracy", "pair_best_f1", "pair_max_ap",
                                   "pair_accuracy_at_threshold", "pair_f1_at_threshold"), (100, 1000, 5000),
           "30 % positives; JSICK test 1,986 pairs", _pairs_build, rows_of, _pairs_truth),
    Family("bitext_mining", ("accuracy", "f1_weighted", "precision_weighted", "recall_weighted"), (100, 1000),
           "nearest of n targets; Tatoeba 1,000 pairs", lambda rng: None, _bitext_sample, _none,
           expected_draws=1000),
    Family("bitext_mining_macro", ("f1_macro", "precision_macro", "recall_macro"), (100, 1000),
           "as bitext_mining, the macro averages", lambda rng: None, _bitext_sample, _none, expected_draws=1000),
    Family("ranking", RANKING, (20, 50, 200, 500), "per-query measures; QABot 20, 50-500 queries", _ranking_build,
           rows_of, _ranking_truth),
    Family("corpus_reranking", ("map_cut_1000", "mrr_cut_10", "ndcg_cut_10"), (50, 200),
           "trec measures of candidates ranked per query; MTEB's Reranking tasks", _reranking_build, rows_of,
           lambda pop, metric: float(np.mean(pop[metric]))),
    Family("query_groups", ("robustness_at_10",), (50, 200, 1000),
           "2-5 instruction variants a query group; InstructIR's robustness@10 over its query groups", _groups_build,
           _groups_sample, _groups_truth),
    Family("regression", ("rmse", "mae", "r2", "kendall_tau", "regression_spearman"), (100, 1000, 5000),
           "predictions fixed", _regression_build, rows_of, _regression_truth,
           skip=frozenset({("kendall_tau", 5000)})),
    Family("summarization", ("summary_spearman", "summary_pearson"), (50, 100, 500),
           "16 summaries a text; SummEval 100 texts", _summaries_build, rows_of, _summaries_truth),
    Family("conditional_sts", ("conditional_spearman", "pairwise_accuracy"), (100, 1000, 5000),
           "two conditions a pair; C-STS", _conditional_build, rows_of, _conditional_truth),
]
BY_NAME = {family.name: family for family in FAMILIES}


# ------------------------------------------------------------------------------------------------ the repetitions


@dataclass
class Settings:
    reps: int
    resamples: int
    bca_max: int  # bca is measured up to this many units (its jackknife costs n statistic evaluations)
    seed: int = 20261202
    expected_draws: int = 1_000_000  # at most this many fresh samples estimate an expected value (a quick run)


def _rng(settings: Settings, *parts: int | str) -> np.random.Generator:
    return np.random.default_rng([settings.seed, *(p if isinstance(p, int) else sum(map(ord, p)) for p in parts)])


def _expected(job: tuple[str, int, int, int, Settings]) -> tuple[str, int, dict[str, list[float]]]:
    """Point values of fresh samples (draws start..stop): their mean estimates the expected value."""
    from specrun.metrics import value

    name, n, start, stop, settings = job
    family = BY_NAME[name]
    state = family.ready()
    out: dict[str, list[float]] = {metric: [] for metric in family.metrics}
    for draw in range(start, stop):
        arrays = family.sample(state, _rng(settings, name, n, "expected", draw), n)
        for metric in family.metrics:
            with np.errstate(all="ignore"):
                out[metric].append(value(metric, arrays))  # NaN where undefined: counted, left out of the mean
    return name, n, out


def _repetitions(job: tuple[str, int, int, int, Settings]) -> tuple[str, int, list[dict[str, Any]]]:
    """Repetitions start..stop of one family and size: a fresh sample, every metric's resamples through specrun's
    estimate path, every method's interval."""
    from specrun.core.errors import MetricError
    from specrun.metrics.estimate import resample

    name, n, start, stop, settings = job
    family = BY_NAME[name]
    state = family.ready()
    rows = []
    for rep in range(start, stop):
        arrays = family.sample(state, _rng(settings, name, n, "sample", rep), n)
        for metric in family.metrics:
            if (metric, n) in family.skip:
                continue
            row: dict[str, Any] = {"metric": metric, "rep": rep}
            try:
                resampled = resample(metric, arrays, resamples=settings.resamples, seed=settings.seed + rep)
            except MetricError as exc:
                rows.append({**row, "undefined": exc.message})
                continue
            row["point"] = resampled.point
            for method in METHODS:
                if method == "bca" and n > settings.bca_max:
                    continue
                try:
                    row[method] = resampled.interval(method, CONFIDENCE)
                except MetricError:
                    row[method] = None  # the method cannot give an interval here (counted)
            rows.append(row)
    return name, n, rows


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, total, size):
        yield start, min(total, start + size)


def measure(families: Sequence[Family], settings: Settings, jobs: int,
            sizes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Every family's repetitions and expected values, in `jobs` processes; returns the summary."""
    import multiprocessing

    work: list[tuple[Callable[..., Any], tuple[str, int, int, int, Settings]]] = []
    for family in families:
        for n in sizes.get(family.name, family.sizes):
            draws = min(family.expected_draws, settings.expected_draws)
            work += [(_expected, (family.name, n, a, b, settings)) for a, b in _chunks(draws, 100)]
            work += [(_repetitions, (family.name, n, a, b, settings)) for a, b in _chunks(settings.reps, 25)]
    expected: dict[tuple[str, int], dict[str, list[float]]] = {}
    reps: dict[tuple[str, int], list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}
    started = shown = time.time()
    context = multiprocessing.get_context("fork")
    with context.Pool(jobs) as pool:
        results = [pool.apply_async(_timed, (function, job)) for function, job in work]
        for done, result in enumerate(results, start=1):
            (name, n, out), elapsed = result.get()
            seconds[name] = seconds.get(name, 0.0) + elapsed
            if isinstance(out, dict):
                for metric, values in out.items():
                    expected.setdefault((name, n), {}).setdefault(metric, []).extend(values)
            else:
                reps.setdefault((name, n), []).extend(out)
            if time.time() - shown > 30 or done == len(work):
                shown = time.time()
                print(f"{done}/{len(work)} jobs, {shown - started:.0f} s", file=sys.stderr, flush=True)
    population = {}
    for family in families:  # the population values, in this process (one population per family)
        state = family.ready()
        population[family.name] = {metric: family.population_value(state, metric) for metric in family.metrics}
    report = summarise(families, sizes, expected, reps, population, settings, time.time() - started)
    report["cpu_seconds"] = {name: round(value, 1) for name, value in seconds.items()}
    return report


def _timed(function: Callable[[Any], Any], job: Any) -> tuple[Any, float]:
    started = time.process_time()
    return function(job), time.process_time() - started


def _binomial(k: int, n: int) -> tuple[float, float]:
    from scipy import stats

    ci = stats.binomtest(k, n).proportion_ci(CONFIDENCE)
    return float(ci.low), float(ci.high)


def summarise(families: Sequence[Family], sizes: dict[str, tuple[int, ...]],
              expected: dict[tuple[str, int], dict[str, list[float]]],
              reps: dict[tuple[str, int], list[dict[str, Any]]],
              population: dict[str, dict[str, float | None]], settings: Settings, seconds: float) -> dict[str, Any]:
    from specrun.metrics import METRICS

    table = []
    for family in families:
        for n in sizes.get(family.name, family.sizes):
            for metric in family.metrics:
                if (metric, n) in family.skip:
                    table.append({"family": family.name, "metric": metric, "n": n, "skipped": True})
                    continue
                rows = [row for row in reps[(family.name, n)] if row["metric"] == metric]
                defined = [row for row in rows if "point" in row]
                every = np.asarray(expected[(family.name, n)][metric])
                points = every[np.isfinite(every)]
                truth = float(np.mean(points))
                pop = population[family.name][metric]
                entry: dict[str, Any] = {
                    "family": family.name, "metric": metric, "n": n, "reps": len(rows),
                    "undefined": len(rows) - len(defined), "expected": truth,
                    "expected_draws": len(every), "expected_undefined": int(len(every) - len(points)),
                    "expected_se": float(np.std(points) / np.sqrt(len(points))), "population": pop,
                    "sd": float(np.std(points)), "default": METRICS[metric].interval, "methods": {}}
                for method in METHODS:
                    got = [row for row in defined if row.get(method) is not None]
                    if not got:
                        continue
                    low = np.array([row[method][0] for row in got])
                    high = np.array([row[method][1] for row in got])
                    point = np.array([row["point"] for row in got])
                    k = int(np.sum((low <= truth) & (truth <= high)))
                    result = {"coverage": k / len(got), "coverage_ci": _binomial(k, len(got)), "n_intervals": len(got),
                              "failed": sum(1 for row in defined if method in row and row[method] is None),
                              "width": float(np.mean(high - low)),
                              "outside": float(np.mean((point < low) | (point > high))),
                              "below": float(np.mean(truth < low)), "above": float(np.mean(truth > high))}
                    if pop is not None:
                        result["coverage_population"] = float(np.mean((low <= pop) & (pop <= high)))
                    entry["methods"][method] = result
                table.append(entry)
    return {"settings": {"reps": settings.reps, "resamples": settings.resamples, "confidence": CONFIDENCE,
                         "bca_max": settings.bca_max, "seed": settings.seed}, "seconds": round(seconds, 1),
            "families": {f.name: f.like for f in families}, "table": table}


# ------------------------------------------------------------------------------------------------ compare and ranks


@dataclass
class PairedCase:
    """Two systems on the same units, B's quality on a grid so that the true difference A - B takes values on
    both sides of 0; each repetition picks one grid point at random. Two grids: a wide one (true differences
    spread over several standard errors of the paired difference) and a narrow one (all within about two)."""

    name: str
    metric: str
    n: int
    build: Callable[[np.random.Generator, np.ndarray], tuple[Arrays, list[Arrays], list[float]]]
    grids: dict[str, np.ndarray]
    state: dict[str, Any] = field(default_factory=dict)

    def ready(self, grid: str) -> tuple[Arrays, list[Arrays], list[float]]:
        if grid not in self.state:
            self.state[grid] = self.build(np.random.default_rng([20261202, sum(map(ord, self.name))]),
                                          self.grids[grid])
        return self.state[grid]


GRID = 21
PAIRED_POPULATION = 300_000


def _paired_sts(rng: np.random.Generator, grid: np.ndarray) -> tuple[Arrays, list[Arrays], list[float]]:
    from scipy import stats

    n = PAIRED_POPULATION
    z = rng.normal(size=n)
    gold = np.clip(np.round(2 + 1.1 * z[:, None] + rng.normal(0, 0.9, (n, 5))), 0, 4).mean(axis=1)
    shared, own_a, own_b = rng.normal(size=(3, n))
    a = {"prediction": np.tanh(0.9 * z + 0.55 * (0.7 * shared + 0.71 * own_a)), "gold": gold}
    bs, deltas = [], []
    truth_a = stats.pearsonr(a["prediction"], gold).statistic
    for noise in grid:
        b = {"prediction": np.tanh(0.9 * z + noise * (0.7 * shared + 0.71 * own_b)), "gold": gold}
        bs.append(b)
        deltas.append(float(truth_a - stats.pearsonr(b["prediction"], gold).statistic))
    return a, bs, deltas


def _paired_accuracy(rng: np.random.Generator, grid: np.ndarray) -> tuple[Arrays, list[Arrays], list[float]]:
    n, k = PAIRED_POPULATION, 10
    gold = rng.integers(0, k, n)
    difficulty = rng.random(n)
    wrong = ((gold + 1 + rng.integers(0, k - 1, n)) % k).astype(float)
    own = rng.random(n)
    a_right = difficulty < 0.78
    a = {"predicted_class": np.where(a_right, gold, wrong), "gold_class": gold.astype(float)}
    bs, deltas = [], []
    for p in grid:
        b_right = np.where(own < 0.7, difficulty < p, rng.random(n) < p)  # B shares A's hard items, mostly
        bs.append({"predicted_class": np.where(b_right, gold, wrong), "gold_class": gold.astype(float)})
        deltas.append(float(a_right.mean() - b_right.mean()))
    return a, bs, deltas


def _paired_v_measure(rng: np.random.Generator, grid: np.ndarray) -> tuple[Arrays, list[Arrays], list[float]]:
    from sklearn import metrics

    n, k = PAIRED_POPULATION, 7
    gold = rng.integers(0, k, n)
    noise, stray, own = rng.random(n), rng.integers(0, k, n), rng.random(n)
    a = {"cluster_id": np.where(noise < 0.6, gold, stray).astype(float), "gold_class": gold.astype(float)}
    truth_a = metrics.v_measure_score(gold, a["cluster_id"].astype(int))
    bs, deltas = [], []
    for p in grid:  # B shares A's noise on 80 % of the documents
        right = np.where(own < 0.8, noise < p, rng.random(n) < p)
        b = {"cluster_id": np.where(right, gold, stray).astype(float), "gold_class": gold.astype(float)}
        bs.append(b)
        deltas.append(float(truth_a - metrics.v_measure_score(gold, b["cluster_id"].astype(int))))
    return a, bs, deltas


PAIRED = [PairedCase("sts_pearson", "pearson", 100, _paired_sts,
                     {"wide": np.linspace(0.4, 0.72, GRID), "narrow": np.linspace(0.45, 0.66, GRID)}),
          PairedCase("classification_accuracy", "accuracy", 1000, _paired_accuracy,
                     {"wide": np.linspace(0.74, 0.82, GRID), "narrow": np.linspace(0.765, 0.795, GRID)}),
          PairedCase("clustering_v_measure", "v_measure", 1000, _paired_v_measure,
                     {"wide": np.linspace(0.52, 0.68, GRID), "narrow": np.linspace(0.57, 0.63, GRID)})]


def _paired_reps(job: tuple[str, str, int, int, Settings]) -> list[dict[str, Any]]:
    """compare's paired difference (compare.paired_difference, the metric's own interval method) on repetitions
    start..stop; each repetition a random grid point."""
    from specrun.board import paired_difference
    from specrun.metrics import METRICS

    name, grid, start, stop, settings = job
    case = next(c for c in PAIRED if c.name == name)
    a, bs, deltas = case.ready(grid)
    out = []
    for rep in range(start, stop):
        rng = _rng(settings, name, grid, "paired", rep)
        g = int(rng.integers(GRID))
        index = rng.integers(0, len(next(iter(a.values()))), case.n)
        arrays_a = {key: values[index] for key, values in a.items()}
        arrays_b = {key: values[index] for key, values in bs[g].items()}
        method = METRICS[case.metric].interval
        d = paired_difference("test", case.metric, case.metric, METRICS[case.metric].direction, arrays_a, arrays_b,
                              settings.resamples, CONFIDENCE, settings.seed + rep, case.n, method)
        out.append({"delta": deltas[g], "low": d.ci_low, "high": d.ci_high, "a_better": d.a_better,
                    "difference": d.difference, "grid": g})
    return out


def _expected_difference(job: tuple[str, str, int, Settings]) -> list[float]:
    """The expected observed difference A - B at this size at one grid point (Monte Carlo over 400 draws)."""
    from specrun.metrics import value

    name, grid, g, settings = job
    case = next(c for c in PAIRED if c.name == name)
    a, bs, _ = case.ready(grid)
    rng = _rng(settings, name, grid, "expected-difference", g)
    total = 0.0
    draws = min(400, settings.expected_draws)
    for _ in range(draws):
        index = rng.integers(0, len(next(iter(a.values()))), case.n)
        total += value(case.metric, {k: v[index] for k, v in a.items()}) - value(
            case.metric, {k: v[index] for k, v in bs[g].items()})
    return [total / draws]


def measure_paired(settings: Settings, jobs: int) -> list[dict[str, Any]]:
    """Coverage of the expected difference, and P(A better) against the share of cases where A is truly better
    (its expected value above B's), by decile, for each case and grid."""
    import multiprocessing

    from specrun.metrics import METRICS

    context = multiprocessing.get_context("fork")
    summary = []
    with context.Pool(jobs) as pool:
        for case in PAIRED:
            for grid in case.grids:
                expected = [v for part in pool.map(_expected_difference, [(case.name, grid, g, settings)
                                                                         for g in range(GRID)]) for v in part]
                reps = [row for chunk in pool.map(_paired_reps, [(case.name, grid, a, b, settings)
                                                                 for a, b in _chunks(settings.reps, 50)])
                        for row in chunk]
                truth = np.array([expected[row["grid"]] for row in reps])
                low, high = np.array([r["low"] for r in reps]), np.array([r["high"] for r in reps])
                better = np.array([r["a_better"] for r in reps])
                truly = truth > 0 if METRICS[case.metric].direction == "higher" else truth < 0
                k = int(np.sum((low <= truth) & (truth <= high)))
                deciles = []
                for d in range(10):
                    chosen = (better >= d / 10) & ((better < (d + 1) / 10) if d < 9 else (better <= 1))
                    if chosen.any():
                        deciles.append({"decile": d, "count": int(chosen.sum()),
                                        "mean_p": float(better[chosen].mean()),
                                        "share_a_better": float(truly[chosen].mean())})
                spread = float(np.std(truth) / np.mean(high - low) * 3.92)
                summary.append({"case": case.name, "grid": grid, "metric": case.metric, "n": case.n,
                                "reps": len(reps), "method": METRICS[case.metric].interval,
                                "coverage": k / len(reps), "coverage_ci": _binomial(k, len(reps)),
                                "differences_in_standard_errors": spread, "deciles": deciles})
    return summary


def _ranks_case(rng: np.random.Generator, truths: Sequence[float], n: int) -> list[Arrays]:
    """Models of the given accuracies on one set of n items, sharing which items are hard."""
    k = 10
    gold = rng.integers(0, k, n)
    difficulty = rng.random(n)
    wrong = ((gold + 1 + rng.integers(0, k - 1, n)) % k).astype(float)
    models = []
    for p in truths:
        right = np.where(rng.random(n) < 0.6, difficulty < p, rng.random(n) < p)
        models.append({"predicted_class": np.where(right, gold, wrong), "gold_class": gold.astype(float)})
    return models


RANK_TRUTHS = (0.82, 0.815, 0.80, 0.78, 0.75, 0.70)  # true accuracies: two near-ties, a gap, spread


def _ranks_reps(job: tuple[int, int, int, Settings]) -> list[list[bool]]:
    """The leaderboard's rank intervals (leaderboard.rank_board) of six models on n items: per model, whether
    its interval holds its true rank."""
    from specrun.board import rank_board
    from specrun.metrics import METRICS

    n, start, stop, settings = job
    metric = METRICS["accuracy"]
    true_rank = 1 + np.sum(np.array(RANK_TRUTHS)[None, :] > np.array(RANK_TRUTHS)[:, None], axis=1)
    out = []
    for rep in range(start, stop):
        models = _ranks_case(_rng(settings, "ranks", n, rep), RANK_TRUTHS, n)
        ranking = rank_board(metric.statistic, [[m[key] for key in metric.inputs] for m in models],
                             direction="higher", resamples=settings.resamples, confidence=CONFIDENCE,
                             seed=settings.seed + rep, n_runs=1)
        out.append([bool(lo <= t <= hi) for lo, hi, t in zip(ranking.rank_low, ranking.rank_high, true_rank,
                                                              strict=True)])
    return out


def measure_ranks(settings: Settings, jobs: int) -> list[dict[str, Any]]:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    summary = []
    with context.Pool(jobs) as pool:
        for n in (300, 1000, 3000):
            covered = np.array([row for chunk in pool.map(_ranks_reps, [(n, a, b, settings)
                                                                         for a, b in _chunks(settings.reps, 50)])
                                for row in chunk])
            summary.append({"n": n, "reps": len(covered), "truths": list(RANK_TRUTHS),
                            "coverage_per_model": [float(c) for c in covered.mean(axis=0)],
                            "all_models_covered": float(covered.all(axis=1).mean())})
    return summary


# ------------------------------------------------------------------------------------------------ suites


@dataclass
class SuiteCase:
    """Two suite members scored on the same n units (two metrics of one set of pairs, as JSICK's relatedness
    Spearman and entailment AP in suites/japanese.yaml): `sample(rng, n)` gives both members' arrays."""

    name: str
    metrics: tuple[str, str]
    n: int
    sample: Callable[[np.random.Generator, int], tuple[Arrays, Arrays]]


def _correlated_means(rho: float) -> Callable[[np.random.Generator, int], tuple[Arrays, Arrays]]:
    """Per-unit scores of two members correlated `rho` (a mean over units, so their values correlate `rho` too)."""
    def sample(rng: np.random.Generator, n: int) -> tuple[Arrays, Arrays]:
        x = rng.standard_normal((n, 2)) @ np.linalg.cholesky(np.array([[1.0, rho], [rho, 1.0]])).T
        return {"ap": 0.6 + 0.2 * x[:, 0]}, {"ap": 0.4 + 0.2 * x[:, 1]}
    return sample


def _spearman_and_ap(rng: np.random.Generator, n: int) -> tuple[Arrays, Arrays]:
    """One model's cosine on n pairs, scored against a relatedness gold (Spearman) and an entailment label (AP)."""
    latent = rng.standard_normal(n)
    gold = latent + 0.6 * rng.standard_normal(n)
    score = latent + 0.8 * rng.standard_normal(n)
    label = (gold + 0.5 * rng.standard_normal(n) > 0.8).astype(float)
    return {"prediction": score, "gold": gold}, {"cosine_score": score, "pair_label": label}


SUITE_CASES = [SuiteCase("means_rho_0.35", ("map", "map"), 300, _correlated_means(0.35)),
               SuiteCase("means_rho_0.85", ("map", "map"), 300, _correlated_means(0.85)),
               SuiteCase("spearman_and_ap", ("spearman", "pair_ap"), 300, _spearman_and_ap)]


def _suite_expected(job: tuple[str, int, int, Settings]) -> list[tuple[float, float]]:
    """Both members' values on fresh samples (draws start..stop): the truth and the members' correlation."""
    from specrun.metrics import value

    name, start, stop, settings = job
    case = next(c for c in SUITE_CASES if c.name == name)
    out = []
    for draw in range(start, stop):
        a, b = case.sample(_rng(settings, name, "suite-expected", draw), case.n)
        out.append((value(case.metrics[0], a), value(case.metrics[1], b)))
    return out


def _suite_reps(job: tuple[str, int, int, Settings]) -> list[dict[str, Any]]:
    """The suite's Mean (task) interval (board.joint: joint_draws, aggregate_interval) on repetitions
    start..stop, the two members drawn independently (two units keys) and sharing one draw (one key)."""
    from specrun.board import MemberUnits, aggregate_interval, aggregate_method, joint_draws
    from specrun.metrics import METRICS

    name, start, stop, settings = job
    case = next(c for c in SUITE_CASES if c.name == name)
    method = aggregate_method([METRICS[m].interval for m in case.metrics])
    out = []
    for rep in range(start, stop):
        arrays = case.sample(_rng(settings, name, "suite", rep), case.n)
        row = {}
        for mode, keys in (("independent", ("a", "b")), ("shared", ("units", "units"))):
            units = [MemberUnits(i, case.metrics[i], arrays[i], keys[i], 1.0, "") for i in (0, 1)]
            draws = joint_draws(units, resamples=settings.resamples, seed=settings.seed + rep)
            row[mode] = aggregate_interval("mean_task", draws, CONFIDENCE, method)[1:]
        out.append(row)
    return out


def measure_suites(settings: Settings, jobs: int) -> list[dict[str, Any]]:
    """Coverage of the expected Mean (task) of two members on the same units, independent draws vs shared."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    summary = []
    with context.Pool(jobs) as pool:
        for case in SUITE_CASES:
            draws = min(4000, settings.expected_draws)
            values = np.array([v for part in pool.map(_suite_expected, [(case.name, a, b, settings)
                                                                        for a, b in _chunks(draws, 250)])
                               for v in part])
            truth = float(values.mean())  # the mean of the two members' expected values
            reps = [row for chunk in pool.map(_suite_reps, [(case.name, a, b, settings)
                                                            for a, b in _chunks(settings.reps, 50)]) for row in chunk]
            entry: dict[str, Any] = {"case": case.name, "metrics": list(case.metrics), "n": case.n,
                                     "reps": len(reps), "expected": truth,
                                     "correlation": float(np.corrcoef(values[:, 0], values[:, 1])[0, 1])}
            for mode in ("independent", "shared"):
                low, high = (np.array([r[mode][i] for r in reps]) for i in (0, 1))
                k = int(np.sum((low <= truth) & (truth <= high)))
                entry[mode] = {"coverage": k / len(reps), "coverage_ci": _binomial(k, len(reps)),
                               "width": float(np.mean(high - low))}
            summary.append(entry)
    return summary


# ------------------------------------------------------------------------------------------------ output


def markdown(report: dict[str, Any]) -> str:
    """The figures as BENCHMARKS.md shows them: per family, metric and size the coverage of each method (the
    metric's own, `auto`, in bold; `out x`: share of samples whose value lay outside the interval), the width of
    the metric's own interval and its coverage of the population value where that differs from the expected."""
    from specrun.metrics import METRICS

    s = report["settings"]
    lines = [f"{s['reps']} repetitions of each, {s['resamples']} resamples, {s['confidence']:.0%} intervals; bca "
             f"measured up to {s['bca_max']} units. Coverage of the expected value at that size (Clopper-Pearson 95% "
             "interval of the metric's own method in brackets); pop.: the own method's coverage of the population "
             "value, where that differs from the expected one by more than a tenth of a standard deviation.", ""]
    if report.get("table"):
        lines += ["| family | metric | n | percentile | basic | centred | bca | own: coverage CI | width | pop. |",
                  "| --- | --- | ---: | --- | --- | --- | --- | --- | ---: | --- |"]
        for entry in report["table"]:
            if entry.get("skipped"):
                lines.append(f"| {entry['family']} | {entry['metric']} | {entry['n']} | not repeated (too slow) "
                             "| | | | | | |")
                continue
            own = METRICS[entry["metric"]].interval
            cells = []
            for method in ("percentile", "basic", "centred", "bca"):
                m = entry["methods"].get(method)
                if m is None:
                    cells.append("")
                    continue
                text = f"{m['coverage']:.3f}" + (f" (out {m['outside']:.2f})" if m["outside"] > 0 else "") + (
                    f" ({m['failed']} undefined)" if m["failed"] else "")
                cells.append(f"**{text}**" if method == own else text)
            m = entry["methods"][own]
            differs = entry["population"] is not None and abs(entry["population"] - entry["expected"]) > 0.1 * entry[
                "sd"]
            pop = f"{m['coverage_population']:.3f}" if differs and "coverage_population" in m else ""
            lines.append(f"| {entry['family']} | {entry['metric']} | {entry['n']} | {' | '.join(cells)} | "
                         f"[{m['coverage_ci'][0]:.3f}, {m['coverage_ci'][1]:.3f}] | {m['width']:.4f} | {pop} |")
    if report.get("paired"):
        lines += ["", "| compare | n | true differences (sd / standard error) | method | coverage of the difference | "
                      "P(A better) by decile: mean P -> share truly better (count) |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for case in report["paired"]:
            deciles = "; ".join(f"{d['mean_p']:.2f}->{d['share_a_better']:.2f} ({d['count']})"
                                for d in case["deciles"])
            spread = case["differences_in_standard_errors"]
            lines.append(f"| {case['case']} | {case['n']} | {case['grid']} ({spread:.1f}) | {case['method']} | "
                         f"{case['coverage']:.3f} [{case['coverage_ci'][0]:.3f}, "
                         f"{case['coverage_ci'][1]:.3f}] | {deciles} |")
    if report.get("suites"):
        lines += ["", "| suite: two members on the same units | metrics | n | members' correlation | independent draws "
                      "| shared draws |", "| --- | --- | --- | --- | --- | --- |"]
        for row in report["suites"]:
            cells = [f"{row[m]['coverage']:.3f} [{row[m]['coverage_ci'][0]:.3f}, {row[m]['coverage_ci'][1]:.3f}], "
                     f"width {row[m]['width']:.4f}" for m in ("independent", "shared")]
            lines.append(f"| {row['case']} | {' + '.join(row['metrics'])} | {row['n']} | {row['correlation']:.2f} | "
                         f"{cells[0]} | {cells[1]} |")
    if report.get("ranks"):
        lines += ["", "| ranks: items | true accuracies | coverage of each model's true rank | all six covered |",
                  "| --- | --- | --- | --- |"]
        for row in report["ranks"]:
            lines.append(f"| {row['n']} | {', '.join(map(str, row['truths']))} | "
                         f"{', '.join(f'{c:.3f}' for c in row['coverage_per_model'])} | "
                         f"{row['all_models_covered']:.3f} |")
    return "\n".join(lines) + "\n"


def merged(paths: Sequence[str]) -> dict[str, Any]:
    """Saved reports as one: their tables, compare and rank rows in order (the settings of the first)."""
    reports = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            reports.append(json.load(handle))
    out = dict(reports[0])
    for key in ("table", "paired", "ranks", "suites"):
        out[key] = [row for report in reports for row in report.get(key, [])]
    order = list(BY_NAME)  # the families in their own order; a renamed one (a second seed) after its own
    out["table"].sort(key=lambda e: (order.index(e["family"].split(" ")[0]) if e["family"].split(" ")[0] in order
                                     else len(order), e["family"], e["n"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1000, help="repetitions per family and size (default 1000)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000, as specs)")
    parser.add_argument("--families", nargs="*", choices=sorted(BY_NAME), help="default: every family")
    parser.add_argument("--sizes", nargs="*", type=int, help="only these sizes (default: each family's own)")
    parser.add_argument("--part", choices=("intervals", "paired", "ranks", "suites", "all"), default="all")
    parser.add_argument("--bca-max", type=int, default=1000, help="measure bca up to this many units")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=Settings.seed, help="the repetitions' seed (default: the figures')")
    parser.add_argument("--expected-draws", type=int, default=Settings.expected_draws,
                        help="at most this many fresh samples per expected value (default: each family's own, "
                             "300-4,000; fewer for a quick run)")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--markdown", metavar="REPORT", nargs="+",
                        help="print the tables of saved reports (one after the other, as one) and stop")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(merged(args.markdown)), end="")
        return
    settings = Settings(reps=args.reps, resamples=args.resamples, bca_max=args.bca_max, seed=args.seed,
                        expected_draws=args.expected_draws)
    families = [BY_NAME[name] for name in args.families] if args.families else FAMILIES
    sizes = {f.name: tuple(n for n in f.sizes if n in args.sizes) for f in families} if args.sizes else {}
    started = time.time()
    report: dict[str, Any] = {}
    if args.part in ("intervals", "all"):
        report = measure(families, settings, args.jobs, sizes)
    if args.part in ("paired", "all"):
        report["paired"] = measure_paired(settings, args.jobs)
    if args.part in ("ranks", "all"):
        report["ranks"] = measure_ranks(settings, args.jobs)
    if args.part in ("suites", "all"):
        report["suites"] = measure_suites(settings, args.jobs)
    report.setdefault("settings", {"reps": settings.reps, "resamples": settings.resamples,
                                   "confidence": CONFIDENCE, "bca_max": settings.bca_max, "seed": settings.seed})
    report["total_seconds"] = round(time.time() - started, 1)
    report["command"] = " ".join(["bench/coverage.py", *sys.argv[1:]])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
    print(markdown(report), end="")
    print(f"{report['total_seconds']:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
