"""Leaderboard with honest ranks: rank intervals from a joint paired bootstrap, checked against a plain loop and
against `specrun compare`; refusals (different items, tampered runs); the three outputs, the page in a real
browser (Chromium via selenium)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from specrun.board import Leaderboard, check_same_items, rank_board, rank_overall
from specrun.core.errors import CompareError
from specrun.metrics import METRICS, unit_counts
from specrun.results.verify import load_verified
from tests.conftest import ROOT, SPECS, assert_one_line_error, files_under, run_cli

BIOSSES = str(SPECS / "biosses.yaml")
ODD_PROMPT = '<b>|x</b> "q" '
RUNS = {  # folder -> run flags: five model configurations, two names of the same weights made distinct
    "st": [],
    "tf16": ["--adapter", "transformers", "--max-length", "16"],
    "ha": ["--adapter", "hashing", "--prompt", "a: "],
    "hb": ["--adapter", "hashing", "--prompt", "b: "],
    "odd": ["--adapter", "hashing", "--prompt", ODD_PROMPT],
}


# ------------------------------------------------------------------------------------------ independent reference


def loop_indices(n: int, resamples: int, seed: int) -> list[np.ndarray]:
    """Resample indices as scipy.stats.bootstrap draws them (batches of 250 from default_rng(seed))."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    while len(out) < resamples:
        out.extend(rng.integers(0, n, (min(250, resamples - len(out)), n)))
    return out


def plain_statistic(metric: str, arrays: dict[str, np.ndarray], i: np.ndarray) -> float:
    if metric == "spearman":
        return float(stats.spearmanr(arrays["prediction"][i], arrays["gold"][i]).statistic)
    if metric == "pearson":
        return float(stats.pearsonr(arrays["prediction"][i], arrays["gold"][i]).statistic)
    return float(np.mean(arrays[METRICS[metric].inputs[0]][i]))


def plain_statistics(metric: str, arrays: dict[str, np.ndarray], indices: list[np.ndarray]) -> np.ndarray:
    """plain_statistic of each resample, on the drawn items themselves (the product weights counts instead):
    scipy's average ranks and Pearson's formula, a row per resample. 12,000 calls of scipy's own took 3 s; the
    first resample is held to scipy's value."""
    drawn = np.stack(indices)
    if metric not in ("spearman", "pearson"):
        return np.mean(arrays[METRICS[metric].inputs[0]][drawn], axis=1)
    x, y = arrays["prediction"][drawn], arrays["gold"][drawn]
    if metric == "spearman":
        x, y = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    x, y = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    values = np.sum(x * y, axis=1) / np.sqrt(np.sum(x * x, axis=1) * np.sum(y * y, axis=1))
    assert values[0] == pytest.approx(plain_statistic(metric, arrays, indices[0]), abs=1e-12)
    return values


def plain_ranking(metric: str, models: list[dict[str, np.ndarray]], *, resamples: int, seed: int,
                  confidence: float, higher: bool = True) -> dict[str, list]:
    """The leaderboard's per-spec numbers by plain loops: one resample, one model, one pair at a time (each
    model's statistics drawn at once)."""
    n = len(next(iter(models[0].values())))
    sign = 1 if higher else -1
    indices = loop_indices(n, resamples, seed)
    scores = np.column_stack([sign * plain_statistics(metric, a, indices) for a in models]).tolist()
    count = len(models)
    ranks = [[1 + sum(1 for o in range(count) if row[o] > row[m]) for m in range(count)] for row in scores]
    alpha = (1 - confidence) / 2
    observed = [sign * plain_statistic(metric, a, np.arange(n)) for a in models]
    best = max(range(count), key=lambda m: (observed[m], -m))
    low, high, d_low, d_high = [], [], [], []
    for m in range(count):
        column = [r[m] for r in ranks]
        low.append(math.floor(np.percentile(column, 100 * alpha) + 1e-9))
        high.append(math.ceil(np.percentile(column, 100 * (1 - alpha)) - 1e-9))
        diffs = [row[best] - row[m] for row in scores]
        d_low.append(float(np.percentile(diffs, 100 * alpha)))
        d_high.append(float(np.percentile(diffs, 100 * (1 - alpha))))
    better = [[sum(1 for row in scores if row[i] > row[j]) / resamples for j in range(count)] for i in range(count)]
    return {"low": low, "high": high, "better": better, "best": best, "d_low": d_low, "d_high": d_high,
            "scores": scores}


# ------------------------------------------------------------------------------------------ the core, synthetic


def sts_models(count: int, n: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    gold = rng.normal(size=n)
    return [{"prediction": gold + rng.normal(scale=1.0 + 0.15 * m, size=n), "gold": gold} for m in range(count)]


@pytest.mark.parametrize(("metric", "higher"), [("spearman", True), ("pearson", False)])
def test_rank_intervals_equal_a_plain_loop(metric: str, higher: bool) -> None:
    models = sts_models(5, 60)
    inputs = [[a["prediction"], a["gold"]] for a in models]
    got = rank_board(METRICS[metric].statistic, inputs, direction="higher" if higher else "lower", resamples=600,
                     confidence=0.9, seed=7)  # 600: two full batches of 250 and a part
    want = plain_ranking(metric, models, resamples=600, seed=7, confidence=0.9, higher=higher)
    assert got.rank_low.tolist() == want["low"] and got.rank_high.tolist() == want["high"]
    assert got.best == want["best"]
    np.testing.assert_allclose(got.better, want["better"], atol=1e-12)
    np.testing.assert_allclose(got.diff_low, want["d_low"], atol=1e-9)
    np.testing.assert_allclose(got.diff_high, want["d_high"], atol=1e-9)
    assert (got.separable == (np.array(want["d_low"]) > 0)).all()
    assert (got.rank_low <= got.rank).all() and (got.rank <= got.rank_high).all()


def test_models_tied_but_for_rounding_share_their_ranks_and_neither_beats_the_other() -> None:
    """Two models with one score on a resample (an exact tie: 0.0 apart in scipy's sums) came out 1e-16 apart in
    another order of the sums, and one 'beat' the other: P(better) and the ranks moved with rounding. A difference
    within intervals.ROUNDING is a tie, in the ranks, the shares and compare's P(A better). Here B = 3A + 7, whose
    Pearson with the gold is A's exactly, and A's only to the last bits in floating point."""
    from specrun.board import paired_difference

    rng = np.random.default_rng(5)
    gold = rng.normal(size=50)
    prediction = gold + rng.normal(size=50)
    scaled = 3 * prediction + 7
    statistic = METRICS["pearson"].statistic
    weights = unit_counts(np.random.default_rng(1).integers(0, 50, (200, 50)), 50)
    assert np.any(statistic(prediction, gold, weights=weights) != statistic(scaled, gold, weights=weights))
    board = rank_board(statistic, [[prediction, gold], [scaled, gold]], direction="higher", resamples=200,
                       confidence=0.9, seed=1)
    assert board.better.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert board.rank_low.tolist() == board.rank_high.tolist() == [1, 1]
    difference = paired_difference("test", "pearson", "pearson", "higher", {"prediction": prediction, "gold": gold},
                                   {"prediction": scaled, "gold": gold}, resamples=200, confidence=0.9, seed=1,
                                   n=50)
    assert difference.a_better == 0.0
    # Borda too (a review found its points still split on rounding: 1 and 2 where 1.5 each), and a relative
    # tolerance: rmse-sized values tie at their own rounding, tiny ones are not all ties
    from specrun.board import borda_points, min_ranks

    a = 0.8413
    assert borda_points(np.array([a, np.nextafter(a, 1), 0.5])).tolist() == [1.5, 1.5, 0.0]
    assert min_ranks(np.array([1e4, 1e4 + 1e-9, 3.0])).tolist() == [1, 1, 3]
    assert min_ranks(np.array([2e-13, 1e-13, 3e-13])).tolist() == [2, 3, 1]
    assert borda_points(np.array([-np.inf, -np.inf, 0.1])).tolist() == [0.5, 0.5, 2.0]


@pytest.mark.parametrize("method", ["basic", "centred", "bca"])
def test_a_board_reads_the_resamples_as_compare_does_for_every_method(method: str) -> None:
    """Under the metric's interval method, the difference to the best and P(i better than j) are compare's own
    (paired_difference on the same runs' arrays), and the ranks come from each model's plausible scores."""
    from specrun.board import paired_difference
    from specrun.metrics.intervals import plausible

    rng = np.random.default_rng(4)
    gold = rng.integers(0, 12, 300)
    models = [{"cluster_id": np.where(rng.random(300) < p, gold, rng.integers(0, 12, 300)).astype(float),
               "gold_class": gold.astype(float)} for p in (0.6, 0.55, 0.4)]
    statistic = METRICS["v_measure"].statistic
    inputs = [[m["cluster_id"], m["gold_class"]] for m in models]
    got = rank_board(statistic, inputs, direction="higher", resamples=300, confidence=0.9, seed=3, method=method,
                     n_runs=1)
    for i in range(3):
        for j in range(3):
            if i == j:
                continue
            d = paired_difference("test", "v", "v_measure", "higher", models[i], models[j], 300, 0.9, 3, 300,
                                  method)
            assert got.better[i, j] == pytest.approx(d.a_better, abs=1e-12), (i, j)
            if i == got.best:
                assert (got.diff_low[j], got.diff_high[j]) == pytest.approx((d.ci_low, d.ci_high), abs=1e-12)
    observed = np.array([float(np.mean(statistic(*x, weights=np.ones(300)))) for x in inputs])
    raw = np.stack([np.concatenate([np.atleast_1d(np.mean(statistic(*x, weights=w), axis=-1))
                                    for w in [unit_counts(i, 300) for i in loop_indices(300, 300, 3)]])
                    for x in inputs], axis=1)
    np.testing.assert_allclose(got.scores, plausible(method, observed, raw), atol=1e-12)


def test_ties_share_the_best_rank() -> None:
    same = {"ap": np.linspace(0, 1, 40)}
    worse = {"ap": np.linspace(0, 1, 40) * 0.5}
    got = rank_board(METRICS["map"].statistic, [[same["ap"]], [worse["ap"]], [same["ap"]]], direction="higher",
                     resamples=300, confidence=0.95, seed=1)
    assert got.rank.tolist() == [1, 3, 1] and got.rank_low.tolist() == [1, 3, 1]  # "1 1 3": competition ranking
    assert got.best == 0 and not got.separable[2] and got.separable[1]
    assert got.better[0, 2] == 0 and got.better[2, 0] == 0  # a tie is nobody's win


def plain_overall(observed: list[np.ndarray], scores: list[np.ndarray], *, confidence: float,
                  spec_counts: list[list[int]] | None) -> dict[str, list]:
    """Borda (absent = below every present model, absent ones tied) and mean, one resample at a time."""
    specs, count = len(observed), len(observed[0])
    resamples = min(len(s) for s in scores)

    def borda(values: list[np.ndarray], weights: list[int]) -> list[float]:
        points = [0.0] * count
        for s in range(specs):
            key = [(1, values[s][m]) if np.isfinite(observed[s][m]) else (0, 0.0) for m in range(count)]
            for m in range(count):
                below = sum(1 for o in range(count) if key[o] < key[m])
                tied = sum(1 for o in range(count) if o != m and key[o] == key[m])
                points[m] += weights[s] * (below + 0.5 * tied)
        return points

    per_b = [borda([scores[s][b] for s in range(specs)], spec_counts[b] if spec_counts else [1] * specs)
             for b in range(resamples)]
    alpha = (1 - confidence) / 2
    ranks = [[1 + sum(1 for o in range(count) if row[o] > row[m]) for m in range(count)] for row in per_b]
    low = [math.floor(np.percentile([r[m] for r in ranks], 100 * alpha) + 1e-9) for m in range(count)]
    high = [math.ceil(np.percentile([r[m] for r in ranks], 100 * (1 - alpha)) - 1e-9) for m in range(count)]
    return {"borda": borda(observed, [1] * specs), "low": low, "high": high}


@pytest.mark.parametrize("resample_specs", [False, True])
def test_borda_across_specs_equals_a_plain_loop(resample_specs: bool) -> None:
    rng = np.random.default_rng(3)
    observed, scores = [], []
    for s in range(3):
        base = rng.normal(size=4)
        spread = rng.normal(scale=0.6, size=(200, 4)) + base
        if s == 1:  # model 3 has no run on spec 1
            base, spread = base.copy(), spread.copy()
            base[3] = np.nan
            spread[:, 3] = np.nan
        observed.append(base)
        scores.append(spread)
    seeds = [11, 12, 13]
    got = rank_overall(observed, scores, ["higher"] * 3, confidence=0.9, resample_specs=resample_specs, seeds=seeds)
    counts = None
    if resample_specs:
        spec_rng = np.random.default_rng(seeds)
        counts = [np.bincount(spec_rng.integers(0, 3, 3), minlength=3).tolist() for _ in range(200)]
    want = plain_overall(observed, scores, confidence=0.9, spec_counts=counts)
    assert got.borda.tolist() == want["borda"]
    assert got.borda_low.tolist() == want["low"] and got.borda_high.tolist() == want["high"]
    assert got.mean is not None and got.mean_rank is not None and np.isnan(got.mean[3]) and got.mean_rank[3] == 0
    assert got.mean[:3] == pytest.approx(np.mean(np.stack(observed)[:, :3], axis=0))


# ------------------------------------------------------------------------------------------ real runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Path]:
    """Five configurations on BIOSSES, each in its own --output root (same model name, distinct runs)."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("board-runs")
    paths = {}
    for name, flags in RUNS.items():
        assert main([BIOSSES, "--data-dir", str(data_dir), "-q", "--output", str(out / name), *flags]) == 0
        paths[name] = next((out / name).rglob("results.json"))
    return paths


@pytest.fixture(scope="module")
def board(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Leaderboard]:
    from specrun.cli import main

    out = tmp_path_factory.mktemp("board")
    folders = [str(p.parent.parent.parent) for p in runs.values()]
    assert main(["leaderboard", *folders, str(runs["st"]), "-o", str(out), "--title", "BIOSSES board"]) == 0
    return out, Leaderboard.model_validate_json((out / "leaderboard.json").read_text())


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_cli_writes_three_files_and_labels_tell_runs_apart(runs: dict[str, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["leaderboard", *(str(p) for p in runs.values()), "-o", str(tmp_path)], capsys)
    assert code == 0, err
    assert out.splitlines() == [str(tmp_path / f"leaderboard.{ext}") for ext in ("md", "json", "html")]
    assert files_under(tmp_path) == ["leaderboard.html", "leaderboard.json", "leaderboard.md"]
    board = Leaderboard.model_validate_json((tmp_path / "leaderboard.json").read_text())
    labels = [m.label for m in board.models]
    assert len(set(labels)) == 5 and all(label.startswith("sentence-transformers/all-MiniLM-L6-v2 (") for label in
                                         labels)
    # the fewest fields that tell them apart: adapter, then prompt; max length etc. are in the models' entries
    # what the user set is named whenever runs differ in it: the truncation is not hidden behind the adapter
    assert "sentence-transformers/all-MiniLM-L6-v2 (adapter transformers, no prompt, max length 16)" in labels
    assert 'sentence-transformers/all-MiniLM-L6-v2 (adapter hashing, prompt "a: ", max length 512)' in labels
    entry = next(m for m in board.models if m.adapter == "transformers")
    assert entry.max_length == 16 and entry.prompt is None


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_board_ranks_equal_the_plain_loop_on_the_runs(runs: dict[str, Path],
                                                      board: tuple[Path, Leaderboard]) -> None:
    _, result = board
    verified = [load_verified(p) for p in runs.values()]
    spec = result.specs[0]
    assert spec.spec_id == "biosses" and spec.seed == verified[0].results.provenance.uncertainty.seed
    for b in spec.boards:
        metric = verified[0].results.metrics[b.metric].metric
        arrays = [v.units[(b.split, "zero_shot")][1] for v in verified]
        want = plain_ranking(metric, arrays, resamples=spec.resamples, seed=spec.seed, confidence=spec.confidence)
        row_of = {row.results: row for row in b.rows}
        assert set(row_of) == {str(v.path) for v in verified}
        for m, v in enumerate(verified):
            row = row_of[str(v.path)]
            assert (row.rank_low, row.rank_high) == (want["low"][m], want["high"][m])
            assert row.score == v.results.scores[b.split][b.metric].value
            assert row.ci_low == v.results.scores[b.split][b.metric].ci_low
            assert row.diff_low == pytest.approx(want["d_low"][m], abs=1e-9)
        assert b.best == row_of[str(verified[want["best"]].path)].model
        # the others whose interval to the best reaches 0: never the best itself (a new-user trial read "best X,
        # not separable from it: 1" where X was the one)
        assert b.best not in b.not_separable
        assert b.not_separable == [row.model for row in b.rows if not row.separable_from_best and row.model != b.best]


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_two_models_agree_with_compare(runs: dict[str, Path], tmp_path: Path) -> None:
    from specrun.board import build_leaderboard
    from specrun.board.compare import compare

    a, b = runs["tf16"], runs["ha"]
    build_leaderboard([a, b], tmp_path, title=None, console=None)
    result = Leaderboard.model_validate_json((tmp_path / "leaderboard.json").read_text())
    for board in result.specs[0].boards:
        best, other = board.rows[0], board.rows[1]
        _, _, differences = compare(Path(best.results), Path(other.results))
        d = next(d for d in differences if (d.split, d.metric) == (board.split, board.metric))
        assert other.diff_to_best == pytest.approx(d.difference, abs=1e-12)
        assert (other.diff_low, other.diff_high) == pytest.approx((d.ci_low, d.ci_high), abs=1e-12)
        assert board.better[0][1] == d.a_better
        assert other.separable_from_best == (d.ci_low > 0)


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_markdown_is_gfm_and_escapes_labels(board: tuple[Path, Leaderboard]) -> None:
    from markdown_it import MarkdownIt

    out, result = board
    text = (out / "leaderboard.md").read_text()
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert html.count("<table>") == 1 + sum(1 + (b.headline and len(b.rows) > 1) for s in result.specs
                                            for b in s.boards)
    assert "<b>" not in html and "&lt;b&gt;|x&lt;/b&gt;" in html  # the odd prompt is text, its '|' no column
    widths = set()
    for block in re.split(r"\n\n", text):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if rows:
            widths.add(len({len(re.findall(r"(?<!\\)\|", row)) for row in rows}))
    assert widths == {1}


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_html_is_self_contained(board: tuple[Path, Leaderboard]) -> None:
    out, result = board
    page = (out / "leaderboard.html").read_text()
    assert not re.search(r"https?://|<link|\bsrc=|@import|url\(", page)
    assert "<b>|x</b>" not in page and "&lt;b&gt;|x&lt;/b&gt;" in page
    assert page.count('class="forest"') == sum(len(s.boards) for s in result.specs)
    assert "How to read this" in page


# ------------------------------------------------------------------------------------------ refusals


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_different_items_are_refused_in_one_line(runs: dict[str, Path], tmp_path: Path, data_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "biosses.yaml"
    spec.write_text(Path(BIOSSES).read_text(encoding="utf-8").replace("    test: all", "    test: 60"))
    code, out, err = run_cli([str(spec), "--data-dir", str(data_dir), "--output", str(tmp_path / "c"), "-q",
                              "--adapter", "hashing"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["leaderboard", str(runs["st"]), out.strip(), "-o", str(tmp_path / "out")], capsys)
    line = assert_one_line_error(code, err, contains="used different versions of the spec")
    assert str(runs["st"]) in line and out.strip() in line
    assert not (tmp_path / "out").exists()
    # the same spec version but other items (results edited, or data behind an unpinned source): still refused
    first, other = load_verified(runs["st"]), load_verified(Path(out.strip()))
    same_spec = other.results.model_copy(update={"provenance": other.results.provenance.model_copy(
        update={"spec_sha256": first.results.provenance.spec_sha256})})
    with pytest.raises(CompareError, match="evaluated different items"):
        check_same_items(first, replace(other, results=same_spec))


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_different_unit_ids_are_refused(runs: dict[str, Path]) -> None:
    a, b = load_verified(runs["st"]), load_verified(runs["ha"])
    (key, (ids, arrays)), = b.units.items()
    swapped = replace(b, units={key: ([ids[1], ids[0], *ids[2:]], arrays)})
    with pytest.raises(CompareError, match=r"different units \(split test, unit 1: biosses-001 vs biosses-000\)"):
        check_same_items(a, swapped)


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_tampered_and_garbage_runs_are_refused(runs: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cases = {}
    edited = tmp_path / "edited"
    shutil.copytree(runs["hb"].parent, edited)
    text = (edited / "predictions.jsonl").read_text()
    (edited / "predictions.jsonl").write_text(text.replace('"gold":2.2', '"gold":2.3', 1))
    cases[edited / "results.json"] = "that results.json pins"
    score = tmp_path / "score"
    shutil.copytree(runs["hb"].parent, score)
    data = json.loads((score / "results.json").read_text())
    data["scores"]["test"]["spearman_zero_shot"]["value"] += 0.05
    (score / "results.json").write_text(json.dumps(data))
    cases[score / "results.json"] = "refusing edited results"
    garbage = tmp_path / "garbage" / "results.json"
    garbage.parent.mkdir()
    garbage.write_text("{not json")
    cases[garbage] = "not a specrun results file"
    for path, message in cases.items():
        code, out, err = run_cli(["leaderboard", str(runs["st"]), str(path), "-o", str(tmp_path / "out")], capsys)
        assert_one_line_error(code, err, contains=message)
        assert out == "" and not (tmp_path / "out").exists()


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_same_configuration_twice_and_missing_paths_are_refused(runs: dict[str, Path], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(runs["ha"].parent, copy)
    code, _, err = run_cli(["leaderboard", str(runs["ha"]), str(copy), "-o", str(tmp_path / "out")], capsys)
    line = assert_one_line_error(code, err, contains="runs of the same model configuration")
    assert str(copy / "results.json") in line and str(runs["ha"]) in line
    code, _, err = run_cli(["leaderboard", str(tmp_path / "nowhere"), "-o", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="no such results file or folder")
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(["leaderboard", str(tmp_path / "empty"), "-o", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="no results.json below this folder")


@pytest.mark.slow  # the real-model runs of the module fixture: the full suite runs it
def test_across_specs_with_a_missing_model(runs: dict[str, Path], tmp_path: Path, data_dir: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(Path(BIOSSES).read_text(encoding="utf-8").replace("id: biosses", "id: biosses_small")
                    .replace("    test: all", "    test: 60"))
    small = {}
    for name in ("ha", "hb"):
        code, out, err = run_cli([str(spec), "--data-dir", str(data_dir), "--output", str(tmp_path / name), "-q",
                                  *RUNS[name]], capsys)
        assert code == 0, err
        small[name] = out.strip()
    code, _, err = run_cli(["leaderboard", str(runs["ha"]), str(runs["hb"]), str(runs["st"]), *small.values(),
                            "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    result = Leaderboard.model_validate_json((tmp_path / "out" / "leaderboard.json").read_text())
    assert result.overall.specs == ["biosses", "biosses_small"]
    by_model = {r.model: r for r in result.overall.rows}
    # observed Borda from the headline boards: below + half the ties, absent models below every present one
    expected = dict.fromkeys(by_model, 0.0)
    for spec_board in result.specs:
        rows = spec_board.boards[0].rows
        absent = [m for m in by_model if m not in {r.model for r in rows}]
        for r in rows:
            expected[r.model] += sum(1 for o in rows if o.rank > r.rank) + 0.5 * sum(
                1 for o in rows if o is not r and o.rank == r.rank) + len(absent)
        for m in absent:
            expected[m] += 0.5 * (len(absent) - 1)
    assert {m: r.borda for m, r in by_model.items()} == expected
    st = next(r for m, r in by_model.items() if "adapter sentence-transformers" in m)
    assert st.specs == 1 and st.mean is None and st.mean_rank is None
    assert all(r.mean is not None for r in by_model.values() if r is not st)


# ------------------------------------------------------------------------------------------ a real browser


def chromium_driver() -> Any:
    """Headless Chromium through selenium: missing pieces skip the test here and fail it in CI."""
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("selenium (pip)")
    if missing:
        message = f"a real browser is needed: {', '.join(missing)} missing (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1900"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(executable_path=shutil.which("chromedriver")))


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_page_in_a_real_browser(board: tuple[Path, Leaderboard], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    out, result = board
    driver = chromium_driver()
    try:
        driver.get((out / "leaderboard.html").resolve().as_uri())
        assert driver.title == "BIOSSES board"
        head = result.specs[0].boards[0]
        table = driver.find_element(By.CSS_SELECTOR, f'table.board[data-metric="{head.metric}"]')

        def shown() -> list[tuple[str, float, str, str]]:
            return [(r.find_elements(By.TAG_NAME, "td")[1].text, float(r.find_elements(By.TAG_NAME, "td")[2]
                     .get_attribute("data-value")), r.find_elements(By.TAG_NAME, "td")[2].text,
                     r.find_elements(By.TAG_NAME, "td")[0].text) for r in table.find_elements(By.CSS_SELECTOR,
                                                                                         "tbody tr")]

        rows = shown()  # as written: by rank, and exactly the numbers of leaderboard.json
        assert [r[0] for r in rows] == [r.model for r in head.rows]
        for (_, value, text, rank), row in zip(rows, head.rows, strict=True):
            assert value == row.score
            assert text.startswith(f"{row.score:.4f} [{row.ci_low:.4f}, {row.ci_high:.4f}]")
            assert rank.startswith(f"{row.rank} (")
        score_header = table.find_elements(By.TAG_NAME, "th")[2]
        score_header.click()
        ascending = [r[1] for r in shown()]
        assert ascending == sorted(row.score for row in head.rows)
        assert score_header.get_attribute("aria-sort") == "ascending"
        score_header.click()
        assert [r[0] for r in shown()] == [r.model for r in sorted(head.rows, key=lambda r: -r.score)]
        model_header = table.find_elements(By.TAG_NAME, "th")[1]
        model_header.click()
        assert len(shown()) == len(head.rows)
        overall = driver.find_element(By.ID, "overall-table")
        names = [r.find_elements(By.TAG_NAME, "td")[1].text for r in overall.find_elements(By.CSS_SELECTOR,
                                                                                            "tbody tr")]
        assert names == [r.model for r in result.overall.rows]
        assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
        assert driver.find_elements(By.CSS_SELECTOR, "svg.forest circle")
        table.find_elements(By.TAG_NAME, "th")[0].click()  # back to rank order for the picture
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(tmp_path / "leaderboard.png"))
    finally:
        driver.quit()
    assert (tmp_path / "leaderboard.png").stat().st_size > 10_000
    if os.environ.get("SPECRUN_WRITE_DOCS"):  # refresh the README's picture on request, never in CI's clone
        docs = ROOT / "docs"
        docs.mkdir(exist_ok=True)
        shutil.copyfile(tmp_path / "leaderboard.png", docs / "leaderboard.png")
