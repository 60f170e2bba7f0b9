"""A suite member over several subsets of one spec (`subsets:`), MTEB's task score over its hf_subsets, on the
hashing adapter: Tatoeba's three language pairs as one member beside BIOSSES. Its value is the mean of the three
subsets' values as they run alone (math.fsum / 3), its own interval the one the spec's subsets.json gives, it is
one member (one task) in Mean (task), Mean (task type) and Borda, the aggregate's interval is the joint resamples
of each subset on its own suite seed, a finished suite reruns nothing, compare reads it back, and a bad member is
one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from specrun.board import member_draws
from specrun.results.verify import verified_with_spec
from tests.conftest import assert_one_line_error, run_cli
from tests.suites.conftest import write_suite

SUBSETS = ["jpn-eng", "deu-eng", "fra-eng"]
TATOEBA = {"spec": "../specs/tatoeba.yaml", "metric": "f1", "subsets": SUBSETS}
BIOSSES = {"spec": "../specs/biosses.yaml", "metric": "spearman_zero_shot"}


@pytest.fixture
def world(tatoeba_world: Path) -> Path:
    """tatoeba_world and tmp/suites."""
    (tatoeba_world / "suites").mkdir()
    return tatoeba_world


def run(world: Path, target: Path, capsys: pytest.CaptureFixture[str], *extra: str,
        output: str = "out") -> Path:
    code, out, err = run_cli([str(target), "--data-dir", str(world / "data"), "--output", str(world / output),
                              "--adapter", "hashing", *extra], capsys)
    assert code == 0, err
    return Path(out.strip().splitlines()[-1])


def drawn(results: Path, metric_id: str, index: int | tuple[int, int]) -> np.ndarray:
    """One run's resamples of a metric on the suite's seed 5 for stream `index`, from its predictions."""
    verified, _ = verified_with_spec(results)
    info = verified.results.metrics[metric_id]
    arrays = verified.units[("test", info.protocol)][1]
    return member_draws(info.metric, arrays, resamples=200, seed=5, index=index, weight=1.0, task_type="").values


def test_the_member_is_the_mean_of_its_subsets_and_one_task(world: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite(world, [TATOEBA, BIOSSES], aggregates=["mean_task", "mean_task_type", "weighted_mean"],
                        uncertainty={"resamples": 200, "seed": 5})
    path = run(world, suite, capsys)
    record = json.loads(path.read_text(encoding="utf-8"))
    tatoeba, biosses = record["members"]
    # the spec run alone, elsewhere: each subset's value, and the mean its subsets.json gives
    run(world, world / "specs" / "tatoeba.yaml", capsys, output="alone")
    alone = next((world / "alone" / "tatoeba").iterdir())
    values = [json.loads((world / "alone" / f"tatoeba.{s}" / alone.name / "results.json").read_text())
              ["scores"]["test"]["f1"]["value"] for s in SUBSETS]
    assert tatoeba["value"] == math.fsum(values) / 3
    assert [p["value"] for p in tatoeba["cells"]] == values and [p["subset"] for p in tatoeba["cells"]] == SUBSETS
    mean = next(m for m in json.loads((alone / "subsets.json").read_text())["means"] if m["metric"] == "f1")
    assert (tatoeba["ci_low"], tatoeba["ci_high"]) == (mean["ci_low"], mean["ci_high"])
    assert tatoeba["ci_low"] <= tatoeba["value"] <= tatoeba["ci_high"]
    assert tatoeba["results"] is None and tatoeba["n"] == sum(p["n"] for p in tatoeba["cells"])
    assert "cells" not in biosses  # a member of one spec is written as before
    assert tatoeba["task_type"] == "BitextMining"
    # one member, one task: Mean (task) over two values, Mean (task type) over two types
    aggregates = {a["name"]: a for a in record["aggregates"]}
    assert aggregates["mean_task"]["value"] == math.fsum([tatoeba["value"], biosses["value"]]) / 2
    assert aggregates["mean_task"]["members"] == 2
    assert aggregates["mean_task_type"]["value"] == pytest.approx(aggregates["mean_task"]["value"], abs=1e-15)
    # the joint resamples: each subset drawn over its own units on its own suite seed [5, (0, j)], the member's
    # resample b their mean; BIOSSES on [5, 1]
    root = path.parent.parent.parent
    parts = []
    for j, entry in enumerate(tatoeba["cells"]):
        parts.append(drawn(root / entry["results"], "f1", (0, j)))
    sts = drawn(root / biosses["results"], "spearman_zero_shot", 1)
    low, high = np.percentile((np.mean(parts, axis=0) + sts) / 2, [2.5, 97.5])
    assert (aggregates["mean_task"]["ci_low"], aggregates["mean_task"]["ci_high"]) == pytest.approx((low, high),
                                                                                                   abs=1e-12)
    # run again: every member read back, nothing run
    import specrun.suites.run as suite_run

    monkeypatch.setattr(suite_run, "run", lambda *a, **k: pytest.fail("a finished suite ran a member"))
    again = json.loads(run(world, suite, capsys).read_text(encoding="utf-8"))
    assert [m["reused"] for m in again["members"]] == [True, True]
    assert again["aggregates"] == record["aggregates"]


def test_compare_and_the_leaderboard_count_the_member_once(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(world, [TATOEBA, BIOSSES], uncertainty={"resamples": 200})
    a, b = (run(world, suite, capsys, "--prompt", prompt) for prompt in ("a: ", "b: "))
    from specrun.board.suites.compare import compare_suites

    c = compare_suites(a, b)
    record_a, record_b = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    assert [m.difference for m in c.members] == [x["value"] - y["value"] for x, y in
                                                 zip(record_a["members"], record_b["members"], strict=True)]
    assert c.aggregates[0].difference == record_a["aggregates"][0]["value"] - record_b["aggregates"][0]["value"]
    assert c.members[0].ci_low <= c.members[0].difference <= c.members[0].ci_high
    code, _, err = run_cli(["leaderboard", str(a), str(b), "-o", str(world / "board")], capsys)
    assert code == 0, err
    board = json.loads((world / "board" / "leaderboard.json").read_text(encoding="utf-8"))["specs"][0]
    assert board["kind"] == "suite" and len(board["members"]) == 2
    assert sorted(m["points"] for m in board["borda"]) in ([0.0, 2.0], [0.5, 1.5], [1.0, 1.0])  # 2 members, 2 models


@pytest.mark.parametrize(("member", "expected"), [
    ({**TATOEBA, "subsets": ["jpn-eng", "xx-eng"]}, "members[0].subsets: tatoeba has no subset 'xx-eng'"),
    ({**TATOEBA, "subsets": ["jpn-eng", "jpn-eng"]}, "members[0].subsets: subset 'jpn-eng' named twice"),
    ({**TATOEBA, "subset": "jpn-eng"}, "members[0].subsets: give `subset` (one) or `subsets`"),
    ({**BIOSSES, "subsets": ["a", "b"]}, "members[0].subsets: biosses declares no subsets"),
    ({**TATOEBA, "metric": "ndcg"}, "members[0].metric: tatoeba subset jpn-eng has no metric 'ndcg'"),
    ({**TATOEBA, "split": "dev"}, "members[0].split: tatoeba subset jpn-eng does not evaluate split 'dev'"),
    ({**TATOEBA, "subsets": []}, "members[0].subsets"),
    ({**TATOEBA, "subsets": "some"}, "members[0].subsets"),
])
def test_a_bad_member_over_subsets_is_one_line(world: Path, member: dict, expected: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(world, [member, BIOSSES])
    code, _, err = run_cli(["validate", str(suite)], capsys)
    line = assert_one_line_error(code, err, contains=expected)
    assert str(suite) in line


def test_all_subsets_and_the_same_member_twice(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.suites import load_suite

    loaded = load_suite(write_suite(world, [{**TATOEBA, "subsets": "all"}, BIOSSES]))
    assert loaded.members[0].subsets == tuple(SUBSETS) and loaded.members[0].task_type == "BitextMining"
    assert loaded.members[0].label == "tatoeba (mean of 3 subsets) test f1"
    # two subsets of it: another score; the same subsets twice: the same score
    other = load_suite(write_suite(world, [TATOEBA, {**TATOEBA, "subsets": SUBSETS[:2]}]))
    assert [m.subsets for m in other.members] == [tuple(SUBSETS), tuple(SUBSETS[:2])]
    code, _, err = run_cli(["validate", str(write_suite(world, [TATOEBA, {**TATOEBA, "subsets": "all"}]))], capsys)
    assert_one_line_error(code, err, contains="members[1]: the same score as member 0")
