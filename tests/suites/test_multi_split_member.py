"""A suite member over several splits of one spec (`splits:`), MTEB's task score over its eval_splits (the plain
mean over the task's (subset, split) cells of the main score), on the hashing adapter: a BIOSSES twin that
evaluates two splits (all 100 pairs, and 40 of them drawn) as one member beside QABot. Its value is the mean of
the two cells (math.fsum / 2), its interval contains it, it is one member (one task) in Mean (task), the joint
resamples draw each split over its own units on its own suite seed, an earlier suite.json (cells written as
`subsets`, without split and metric) is still read, and a bad member is one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from specrun.board import member_draws
from specrun.core.plain_yaml import load_plain
from specrun.metrics import intervals
from specrun.results.verify import verified_with_spec
from tests.conftest import SPECS, assert_one_line_error, run_cli
from tests.suites.conftest import write_suite

SPLITS = ["test", "validation"]  # the member's cells, in the spec's order of its splits
TWIN = {"spec": "../specs/biosses2.yaml", "metric": "spearman_zero_shot", "splits": ["validation", "test"]}
QABOT = {"spec": "../specs/qabot.yaml", "metric": "map"}


@pytest.fixture
def twin(world: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """specs/biosses2.yaml: BIOSSES with a `validation` split of 40 pairs drawn beside `test` (all 100); no MTEB
    counterparts (they name one split)."""
    spec = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))
    spec["id"] = "biosses2"
    spec["splits"]["validation"] = {"source": "biosses", "source_split": "train"}
    spec["subset"]["splits"]["validation"] = 40
    for metric in spec["metrics"].values():
        metric.pop("mteb", None)
    path = world / "specs" / "biosses2.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli(["fingerprint", str(path), "--write", "--data-dir", str(world / "data"), "--no-cache"],
                           capsys)
    assert code == 0, err
    return world


def run(world: Path, target: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Path:
    code, out, err = run_cli([str(target), "--data-dir", str(world / "data"), "--output", str(world / "out"),
                              "--adapter", "hashing", *extra], capsys)
    assert code == 0, err
    return Path(out.strip().splitlines()[-1])


def test_the_member_is_the_mean_of_its_splits_and_one_task(twin: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite(twin, [TWIN, QABOT], aggregates=["mean_task", "mean_task_type"],
                        uncertainty={"resamples": 200, "seed": 5})
    path = run(twin, suite, capsys)
    record = json.loads(path.read_text(encoding="utf-8"))
    member, qabot = record["members"]
    root = path.parent.parent.parent
    results = json.loads((root / member["cells"][0]["results"]).read_text(encoding="utf-8"))
    values = [results["scores"][split]["spearman_zero_shot"]["value"] for split in SPLITS]
    assert [(c["split"], c["metric"], c["value"]) for c in member["cells"]] == list(
        zip(SPLITS, ["spearman_zero_shot"] * 2, values, strict=True))
    assert member["value"] == math.fsum(values) / 2 and values[0] != values[1]
    assert member["ci_low"] <= member["value"] <= member["ci_high"]
    assert member["split"] == "test+validation" and member["n"] == 140 and member["results"] is None
    assert "cells" not in qabot
    aggregates = {a["name"]: a for a in record["aggregates"]}
    assert aggregates["mean_task"]["members"] == 2
    assert aggregates["mean_task"]["value"] == math.fsum([member["value"], qabot["value"]]) / 2
    # the joint resamples: each split drawn over its own units on its own suite seed [5, (0, j)]
    verified, _ = verified_with_spec(root / member["cells"][0]["results"])
    info = verified.results.metrics["spearman_zero_shot"]
    parts = [member_draws(info.metric, verified.units[(split, info.protocol)][1], resamples=200, seed=5,
                          index=(0, j), weight=1.0, task_type="").values for j, split in enumerate(SPLITS)]
    verified_q, _ = verified_with_spec(root / qabot["results"])
    info_q = verified_q.results.metrics["map"]
    map_draws = member_draws(info_q.metric, verified_q.units[("test", info_q.protocol)][1], resamples=200, seed=5,
                             index=1, weight=1.0, task_type="").values
    mean_task = aggregates["mean_task"]
    low, high = intervals.interval(mean_task["interval"], mean_task["value"],
                                   (np.mean(parts, axis=0) + map_draws) / 2, 0.95)
    assert (mean_task["ci_low"], mean_task["ci_high"]) == pytest.approx((low, high), abs=1e-12)
    # an earlier suite.json whose cells were written as `subsets`, without split and metric, still reads: reused
    import specrun.suites.run as suite_run

    monkeypatch.setattr(suite_run, "run", lambda *a, **k: pytest.fail("a finished suite ran a member"))
    again = json.loads(run(twin, suite, capsys).read_text(encoding="utf-8"))
    assert [m["reused"] for m in again["members"]] == [True, True] and again["aggregates"] == record["aggregates"]
    old = json.loads(path.read_text(encoding="utf-8"))
    old["members"][0]["subsets"] = [{k: v for k, v in c.items() if k not in ("split", "metric")}
                                    for c in old["members"][0].pop("cells")]
    old["members"][0]["split"] = "test"
    from specrun.suites.results import SuiteResults

    read = SuiteResults.model_validate(old).members[0]
    assert read.cell_keys() == ((None, "test", "spearman_zero_shot"),) * 2


def test_a_metric_per_split(twin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`metric: {split: id}`: each split scored by its own metric, the member the mean of those cells."""
    metrics = {"validation": "pearson_zero_shot", "test": "spearman_zero_shot"}
    suite = write_suite(twin, [{**TWIN, "metric": metrics}, QABOT], uncertainty={"resamples": 200})
    path = run(twin, suite, capsys)
    member = json.loads(path.read_text(encoding="utf-8"))["members"][0]
    results = json.loads((path.parent.parent.parent / member["cells"][0]["results"]).read_text(encoding="utf-8"))
    values = [results["scores"][split][metrics[split]]["value"] for split in SPLITS]
    assert member["value"] == math.fsum(values) / 2
    assert member["metric"] == "spearman_zero_shot+pearson_zero_shot"
    from specrun.suites import load_suite

    loaded = load_suite(suite).members[0]
    assert loaded.label == "biosses2 (mean of 2 splits) test+validation spearman_zero_shot+pearson_zero_shot"


@pytest.mark.parametrize(("member", "expected"), [
    ({**TWIN, "split": "test"}, "members[0].splits: give `split` (one) or `splits` (several, their mean), not both"),
    ({**TWIN, "splits": ["test", "test"]}, "members[0].splits: split 'test' named twice"),
    ({**TWIN, "splits": ["test"]}, "members[0].splits"),
    ({**TWIN, "splits": ["test", "dev"]}, "members[0].splits: biosses2 does not evaluate split 'dev'"),
    ({**TWIN, "metric": {"test": "spearman_zero_shot"}},
     "members[0].metric: the metric mapping names splits test; the member's `splits` are validation, test"),
    ({**TWIN, "metric": {"validation": "x", "test": "spearman_zero_shot"}},
     "members[0].metric: biosses2 has no metric 'x'"),
    ({"spec": "../specs/biosses2.yaml", "metric": {"test": "spearman_zero_shot"}, "split": "test"},
     "members[0].metric: a metric per split (a mapping) goes with `splits`"),
    ({"spec": "../specs/biosses2.yaml", "metric": "spearman_zero_shot"},
     "members[0]: biosses2 evaluates 2 splits (test, validation); name the member's `split` (or `splits`)"),
])
def test_a_bad_member_over_splits_is_one_line(twin: Path, member: dict, expected: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(twin, [member, QABOT])
    code, _, err = run_cli(["validate", str(suite)], capsys)
    line = assert_one_line_error(code, err, contains=expected)
    assert str(suite) in line


def test_the_same_splits_in_another_order_is_the_same_score(twin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.suites import load_suite

    assert load_suite(write_suite(twin, [TWIN, QABOT])).members[0].splits == tuple(SPLITS)
    code, _, err = run_cli(["validate", str(write_suite(twin, [TWIN, {**TWIN, "splits": SPLITS}, QABOT]))], capsys)
    assert_one_line_error(code, err, contains="members[1]: the same score as member 0")
