"""Suites on the hashing adapter: the aggregate is the members' mean exactly, its interval a plain loop of
independent member resamples (scipy on the resampled pairs), a finished suite reruns nothing, a changed or
tampered member runs again, an optional member without data makes the aggregates partial, and a bad suite is one
line."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from specrun.board import member_seed
from tests.conftest import SPECS, assert_one_line_error, run_cli
from tests.suites.conftest import MEMBERS, write_suite

FOLDER = "sentence-transformers__all-MiniLM-L6-v2+adapter-hashing"


def run_suite(world: Path, suite: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    code, out, err = run_cli([str(suite), "--data-dir", str(world / "data"), "--output", str(world / "out"),
                              "--adapter", "hashing"], capsys)
    assert code == 0, err
    path = Path(out.strip().splitlines()[-1])
    assert path == world / "out" / "suite+mini" / FOLDER / "suite.json"
    return json.loads(path.read_text(encoding="utf-8")), err


def test_aggregates_are_the_members_means_and_intervals_a_plain_loop(world: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(world, MEMBERS, aggregates=["mean_task", "mean_task_type", "weighted_mean"],
                        uncertainty={"resamples": 400, "seed": 7})
    results, _ = run_suite(world, suite, capsys)
    members = results["members"]
    values = [m["value"] for m in members]
    own = json.loads((world / "out" / "biosses" / FOLDER / "results.json").read_text())["scores"]["test"]
    assert values[:2] == [own["spearman_zero_shot"]["value"], own["pearson_zero_shot"]["value"]]
    assert [m["task_type"] for m in members] == ["STS", "STS", "Retrieval"]
    aggregates = {a["name"]: a for a in results["aggregates"]}
    assert aggregates["mean_task"]["value"] == math.fsum(values) / 3
    assert aggregates["weighted_mean"]["value"] == pytest.approx((values[0] + 3 * values[1] + values[2]) / 5,
                                                                 abs=1e-15)
    assert aggregates["mean_task_type"]["value"] == pytest.approx(((values[0] + values[1]) / 2 + values[2]) / 2,
                                                                  abs=1e-15)
    # the plain loop: both STS members score the same pairs, so both are resampled with the first one's seed (one
    # draw of pairs for the two), scipy on the resampled pairs
    rows = [json.loads(line) for line in (world / "out" / "biosses" / FOLDER / "predictions.jsonl").open()]
    prediction, gold = np.array([r["prediction"] for r in rows]), np.array([r["gold"] for r in rows])
    loops = []
    for correlation in (stats.spearmanr, stats.pearsonr):
        rng = np.random.default_rng(member_seed(7, 0))
        draws = np.concatenate([rng.integers(0, len(rows), (min(250, 400 - start), len(rows)))
                                for start in range(0, 400, 250)])
        loops.append([correlation(prediction[i], gold[i])[0] for i in draws])
    two = write_suite(world, MEMBERS[:2], aggregates=["mean_task"], uncertainty={"resamples": 400, "seed": 7})
    mean = run_suite(world, two, capsys)[0]["aggregates"][0]
    low, high = np.percentile(np.mean(loops, axis=0), [2.5, 97.5])
    assert (mean["ci_low"], mean["ci_high"]) == pytest.approx((low, high), abs=1e-12)
    assert mean["ci_low"] < mean["value"] < mean["ci_high"]


def test_a_finished_suite_reruns_nothing_and_a_changed_member_runs_again(
        world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite(world, MEMBERS)
    first, _ = run_suite(world, suite, capsys)
    assert [m["reused"] for m in first["members"]] == [False] * 3
    import specrun.suites.run as suite_run

    real_run = suite_run.run
    monkeypatch.setattr(suite_run, "run", lambda *a, **k: pytest.fail("a finished suite ran a member"))
    again, err = run_suite(world, suite, capsys)
    assert [m["reused"] for m in again["members"]] == [True] * 3 and "to run" not in err
    assert again["aggregates"] == first["aggregates"]
    ran: list[list[str]] = []
    monkeypatch.setattr(suite_run, "run", lambda specs, *a: ran.append([s.spec.id for s in specs])
                        or real_run(specs, *a))
    spec = world / "specs" / "biosses.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("Three pairs", "Three of the pairs"), encoding="utf-8")
    edited, err = run_suite(world, suite, capsys)
    assert ran == [["biosses"]]
    assert [m["reused"] for m in edited["members"]] == [False, False, True]
    assert edited["members"][0]["encoded"] == 0  # the vectors come from the cache
    results = world / "out" / "qabot" / FOLDER / "results.json"  # tampered: its sha256 no longer matches
    results.write_text(results.read_text(encoding="utf-8").replace('"spec_id"', '"spec_id" '), encoding="utf-8")
    ran.clear()
    tampered, _ = run_suite(world, suite, capsys)
    assert ran == [["qabot"]]
    assert [m["reused"] for m in tampered["members"]] == [True, True, False]


def test_an_optional_member_without_data_makes_the_aggregates_partial(world: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(world / "data" / "qabot")
    optional = [*MEMBERS[:2], {**MEMBERS[2], "optional": True}]
    results, err = run_suite(world, write_suite(world, optional, aggregates=["mean_task", "mean_task_type"]),
                             capsys)
    assert "member 3/3 qabot test map: missing:" in err and "does not exist in the data mirror" in err
    assert results["members"][2]["status"] == "missing" and results["members"][2]["value"] is None
    assert all(a["partial"] and a["members"] == 2 for a in results["aggregates"])
    markdown = (world / "out" / "suite+mini" / FOLDER / "suite.md").read_text(encoding="utf-8")
    assert "(partial: 2 of 3)" in markdown and "Partial: qabot is missing" in markdown
    card = markdown.split("## For the model's hub card", 1)[1]  # the section to paste into a model card
    assert "| Mean (task), partial (2 of 3 members) |" in card and "| qabot" not in card
    code, _, err = run_cli([str(write_suite(world, MEMBERS)), "--data-dir", str(world / "data"), "--output",
                              str(world / "out"), "--adapter", "hashing"], capsys)
    assert_one_line_error(code, err, contains="does not exist in the data mirror")  # a required member


@pytest.mark.parametrize(("edit", "expected"), [
    ({"members": [{"spec": "../specs/nope.yaml", "metric": "map"}]}, "members[0].spec: ../specs/nope.yaml is not a "
                                                                     "file"),
    ({"members": [{"spec": "../specs/qabot.yaml", "metric": "ndcg"}]}, "members[0].metric: qabot has no metric 'ndcg'"),
    ({"members": [{"spec": "../specs/qabot.yaml", "metric": "map", "split": "dev"}]},
     "members[0].split: qabot does not evaluate split 'dev'"),
    ({"members": [MEMBERS[2], MEMBERS[2]]}, "members[1]: the same score as member 0"),
    ({"members": [{**MEMBERS[2], "optional": True}]}, "members: every member is optional"),
    ({"members": MEMBERS, "aggregates": ["median"]}, "aggregates[0]"),
    ({"members": MEMBERS, "extra": 1}, "extra: unknown key"),
    ({"members": [{**MEMBERS[2], "weight": 0}]}, "members[0].weight"),
    ({"members": [{**MEMBERS[2], "subset": "x"}]}, "members[0].subset: qabot declares no subsets"),
    ({"members": [{"spec": str(SPECS / "tatoeba.yaml"), "metric": "f1", "subset": "jpn-en"}]},
     "members[0].subset: tatoeba has subsets (jpn-eng, deu-eng, fra-eng); name the member's `subset` (no subset "
     "'jpn-en')"),
    ({"members": [{"spec": str(SPECS / "tatoeba.yaml"), "metric": "f1"}]}, "members[0]: tatoeba has subsets"),
])
def test_a_bad_suite_is_one_line(world: Path, edit: dict, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    members = [{**m, "spec": os.path.relpath(m["spec"], world / "suites")} if Path(m["spec"]).is_absolute() else m
               for m in edit["members"]]  # a member's spec is relative to the suite's folder
    suite = write_suite(world, **{**edit, "members": members})
    for command in (["validate", str(suite)], [str(suite), "--adapter", "hashing", "--output", str(world / "o")]):
        code, _, err = run_cli(command, capsys)
        line = assert_one_line_error(code, err, contains=expected)
        assert str(suite) in line
    assert not (world / "o").exists()
