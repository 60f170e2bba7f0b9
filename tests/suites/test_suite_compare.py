"""`compare` of two suite runs and `leaderboard` of suite runs on the hashing adapter (models told apart by their
prompt): the aggregate difference is A's aggregate minus B's exactly, its interval a plain loop over the member
seeds (scipy on the resampled pairs, the same pairs for A and B), a tampered member or another suite is one line;
the leaderboard's ranks and Borda points equal a hand computation."""

from __future__ import annotations

import json
from pathlib import Path

import markupsafe
import numpy as np
import pytest
from scipy import stats

from specrun.board import member_seed
from tests.conftest import SPECS, assert_one_line_error, run_cli
from tests.suites.conftest import MEMBERS, write_suite


def run_model(world: Path, suite: Path, prompt: str, capsys: pytest.CaptureFixture[str]) -> Path:
    code, out, err = run_cli([str(suite), "--data-dir", str(world / "data"), "--output", str(world / "out"),
                              "--adapter", "hashing", "--prompt", prompt], capsys)
    assert code == 0, err
    return Path(out.strip().splitlines()[-1])


def pairs(suite_json: Path) -> tuple[np.ndarray, np.ndarray]:
    """The biosses member's predictions and gold, read from the run suite.json records."""
    record = json.loads(suite_json.read_text(encoding="utf-8"))
    results = suite_json.parent.parent.parent / record["members"][0]["results"]
    rows = [json.loads(line) for line in (results.parent / "predictions.jsonl").open()]
    return np.array([r["prediction"] for r in rows]), np.array([r["gold"] for r in rows])


def resampled(prediction: np.ndarray, gold: np.ndarray, seed: int, index: int, resamples: int, correlation) -> list:
    rng = np.random.default_rng(member_seed(seed, index))
    n = len(gold)
    draws = np.concatenate([rng.integers(0, n, (min(250, resamples - start), n)) for start in range(0, resamples, 250)])
    return [correlation(prediction[i], gold[i])[0] for i in draws]


def test_the_aggregate_difference_is_a_minus_b_and_its_interval_a_plain_loop(
        world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(world, MEMBERS, aggregates=["mean_task", "weighted_mean"])
    a, b = run_model(world, suite, "a: ", capsys), run_model(world, suite, "b: ", capsys)
    code, out, err = run_cli(["compare", str(a), str(b), "-o", str(world / "c.md")], capsys)
    assert code == 0, err
    assert out == (world / "c.md").read_text(encoding="utf-8") and "Paired comparison on suite mini" in out
    from specrun.board.suites.compare import compare_suites

    c = compare_suites(a, b)
    record_a, record_b = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    for d, x, y in zip(c.aggregates, record_a["aggregates"], record_b["aggregates"], strict=True):
        assert (d.a, d.b, d.difference) == (x["value"], y["value"], x["value"] - y["value"])
    assert [m.difference for m in c.members] == [x["value"] - y["value"] for x, y in
                                                 zip(record_a["members"], record_b["members"], strict=True)]
    # the plain loop on two STS members: the same resampled pairs for A and B, member i seeded [seed, i]
    two = write_suite(world, MEMBERS[:2], suite_id="two", uncertainty={"resamples": 400, "seed": 7})
    a, b = run_model(world, two, "a: ", capsys), run_model(world, two, "b: ", capsys)
    (pa, gold), (pb, _) = pairs(a), pairs(b)
    loops = [np.subtract(resampled(pa, gold, 7, 0, 400, f), resampled(pb, gold, 7, 0, 400, f))
             for f in (stats.spearmanr, stats.pearsonr)]  # both members on the same pairs: member 0's draw
    differences = np.mean(loops, axis=0)
    d = compare_suites(a, b).aggregates[0]
    assert (d.ci_low, d.ci_high) == pytest.approx(tuple(np.percentile(differences, [2.5, 97.5])), abs=1e-12)
    assert d.a_better == pytest.approx(np.mean(differences > 0), abs=1e-12)


def test_a_tampered_member_or_another_suite_is_one_line(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(world, MEMBERS[:2])
    a, b = run_model(world, suite, "a: ", capsys), run_model(world, suite, "b: ", capsys)
    other = run_model(world, write_suite(world, MEMBERS[:2], suite_id="other"), "a: ", capsys)
    code, out, err = run_cli(["compare", str(a), str(other), "-o", str(world / "c.md")], capsys)
    assert_one_line_error(code, err, contains="runs of different suites (other vs mini)")
    assert not (world / "c.md").exists() and out == ""
    record = json.loads(b.read_text(encoding="utf-8"))
    results = b.parent.parent.parent / record["members"][0]["results"]
    text = results.read_text(encoding="utf-8")
    results.write_text(text.replace('"spec_id"', '"spec_id" '), encoding="utf-8")  # the same run, other bytes
    code, _, err = run_cli(["compare", str(a), str(b)], capsys)
    assert code == 0 and "rewritten by another run of the same spec, model and settings" in err  # round 4, item 5
    score = json.loads(text)["scores"]["test"]["spearman_zero_shot"]["value"]
    results.write_text(text.replace(repr(score), repr(score + 0.01), 1), encoding="utf-8")  # a number changed
    code, _, err = run_cli(["compare", str(a), str(b)], capsys)
    assert_one_line_error(code, err, contains="member 1 (biosses test spearman_zero_shot)")
    code, _, err = run_cli(["compare", str(a), str(results)], capsys)
    assert_one_line_error(code, err, contains="compares only with a suite run")


def test_a_leaderboard_of_suites_ranks_as_a_hand_computation(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scipy.stats import rankdata

    suite = write_suite(world, MEMBERS[:2], uncertainty={"resamples": 400, "seed": 7})
    paths = sorted(run_model(world, suite, prompt, capsys) for prompt in ("a: ", "b: ", "c: "))
    code, _, err = run_cli(["leaderboard", str(world / "out"), "-o", str(world / "board")], capsys)
    assert code == 0, err
    document = json.loads((world / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    assert document["format"] == "specrun.leaderboard/2"  # the one leaderboard: a suite is a benchmark on it
    board = document["specs"][0]
    assert board["kind"] == "suite" and [b["metric"] for b in board["boards"]] == ["mean_task"]
    records = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    by_path = {row["results"]: row for row in board["boards"][0]["rows"]}
    rows = [by_path[str(p)] for p in paths]  # every run found below the folder, one row each
    means = np.array([r["aggregates"][0]["value"] for r in records])
    assert [row["score"] for row in rows] == list(means)
    assert [row["rank"] for row in rows] == [1 + int(np.sum(means > v)) for v in means]
    assert [(row["ci_low"], row["ci_high"]) for row in rows] == [
        (r["aggregates"][0]["ci_low"], r["aggregates"][0]["ci_high"]) for r in records]
    # the rank interval: each model's members on the same resampled pairs (member i seeded [7, i])
    loops = np.array([np.mean([resampled(*pairs(p), 7, i, 400, f) for i, f in
                               enumerate((stats.spearmanr, stats.pearsonr))], axis=0) for p in paths]).T
    ranks = 1 + np.sum(loops[:, None, :] > loops[:, :, None], axis=-1)
    low, high = np.quantile(ranks, [0.025, 0.975], axis=0)
    assert [(row["rank_low"], row["rank_high"]) for row in rows] == list(
        zip(np.floor(low + 1e-9).astype(int).tolist(), np.ceil(high - 1e-9).astype(int).tolist(), strict=True))
    # Borda as MTEB: per member 3 - average rank (descending), summed; ranked by minimum rank
    values = np.array([[m["value"] for m in r["members"]] for r in records])  # (models, members)
    points = sum(3 - rankdata(-values[:, k], method="average") for k in range(values.shape[1]))
    borda = {row["model"]: row for row in board["borda"]}
    assert [borda[row["model"]]["points"] for row in rows] == list(points)
    assert [borda[row["model"]]["rank"] for row in rows] == list(rankdata(-points, method="min").astype(int))
    assert "Borda count over members" in (world / "board" / "leaderboard.md").read_text(encoding="utf-8")
    # across suites (one here): the Borda over the suite's headline aggregate ranks as the aggregate does
    overall = {row["model"]: row for row in document["overall"]["rows"]}
    assert [overall[row["model"]]["mean"] for row in rows] == list(means)
    page = (world / "board" / "leaderboard.html").read_text(encoding="utf-8")  # the page specs get
    assert "Borda count over members" in page and all(str(markupsafe.escape(row["model"])) in page for row in rows)
    code, _, err = run_cli(["leaderboard", str(paths[0]), str(SPECS), "-o", str(world / "mixed")], capsys)
    assert_one_line_error(code, err, contains="not both")
    assert not (world / "mixed").exists()
