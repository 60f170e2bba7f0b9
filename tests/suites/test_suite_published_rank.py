"""A leaderboard of suite runs with `--published` (the slice of MTEB's results repository): MTEB's Mean(Task) and
Borda over the published models with every member equal a hand computation on the same files (plain json); a
model lacking a member is listed with what it lacks; our aggregate's rank among the published points is counted
by hand and its rank interval holds it."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SPECS, run_cli
from tests.suites.conftest import write_suite

TASKS = {"biosses": "BIOSSES", "stsb": "STSBenchmark"}


def plain(root: Path, task: str) -> dict[str, float]:
    """model -> its cosine Spearman on the task's test split, each model folder's one file (both layouts)."""
    out = {}
    for path in sorted(root.glob(f"*/*/{task}.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        value = (next(e for e in data["scores"]["test"] if e["hf_subset"] == "default").get("cosine_spearman")
                 if "scores" in data else data.get("test", {}).get("cos_sim", {}).get("spearman"))
        if isinstance(value, float) and math.isfinite(value):
            out[path.parts[-3].replace("__", "/", 1)] = value
    return out


def borda_by_hand(columns: list[list[float]]) -> list[float]:
    """Per member, n - the average rank (descending) of each model's value; summed over members."""
    n = len(columns[0])
    return [sum(n - (sum(v > col[i] for v in col) + (sum(v == col[i] for v in col) + 1) / 2) for col in columns)
            for i in range(n)]


@pytest.mark.slow  # two hashing runs (BIOSSES, STS-B) and two tasks of the slice read
def test_suite_board_ranks_ours_among_published_models(world: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (world / "data" / "stsb").symlink_to((data_dir / "stsb").resolve())
    shutil.copy(SPECS / "stsb.yaml", world / "specs" / "stsb.yaml")
    suite = write_suite(world, [{"spec": "../specs/biosses.yaml", "metric": "spearman_zero_shot"},
                                {"spec": "../specs/stsb.yaml", "metric": "spearman_zero_shot"}],
                        suite_id="sts2", aggregates=["mean_task"], uncertainty={"resamples": 200, "seed": 3})
    code, _out, err = run_cli([str(suite), "--data-dir", str(world / "data"), "--output", str(world / "out"),
                               "--adapter", "hashing"], capsys)
    assert code == 0, err
    root = data_dir / "mteb-results-slice" / "results"
    code, _, err = run_cli(["leaderboard", str(world / "out"), "-o", str(world / "board"), "--published", str(root)],
                           capsys)
    assert code == 0, err
    document = json.loads((world / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    section = document["specs"][0]["suite_published"]
    values = {task: plain(root, task) for task in TASKS.values()}
    complete = sorted(set(values["BIOSSES"]) & set(values["STSBenchmark"]))
    lacking = sorted((set(values["BIOSSES"]) | set(values["STSBenchmark"])) - set(complete))
    assert complete and lacking
    assert sorted(x["model"] for x in section["lacking"]) == lacking
    rows = section["aggregates"]["mean_task"]
    published = {r["model"]: r for r in rows if r["kind"] == "published"}
    assert sorted(published) == complete
    (ours,) = [r for r in rows if r["kind"] == "ours"]
    means = {m: (values["BIOSSES"][m] + values["STSBenchmark"][m]) / 2 for m in complete}
    for model in complete:
        assert published[model]["score"] == pytest.approx(means[model], abs=1e-15)
        assert published[model]["rank"] == 1 + sum(v > means[model] for v in [*means.values(), ours["score"]])
    assert ours["rank"] == 1 + sum(v > ours["score"] for v in means.values())
    assert ours["rank_low"] <= ours["rank"] <= ours["rank_high"]
    suite_json = next((world / "out").glob("suite+sts2/*/suite.json"))
    record = json.loads(suite_json.read_text(encoding="utf-8"))
    assert ours["score"] == pytest.approx(record["aggregates"][0]["value"], abs=1e-12)
    member_values = [m["value"] for m in record["members"]]
    columns = [[values[task][m] for m in complete] + [member_values[k]] for k, task in enumerate(TASKS.values())]
    points = borda_by_hand(columns)
    borda = {r["model"]: r for r in section["borda"]}
    for i, model in enumerate(complete):
        assert borda[model]["points"] == pytest.approx(points[i], abs=1e-9)
        assert borda[model]["rank"] == 1 + sum(p > points[i] for p in points)
    (mine,) = [r for r in section["borda"] if r["kind"] == "ours"]
    assert mine["points"] == pytest.approx(points[-1], abs=1e-9)
    assert mine["rank_low"] <= mine["rank"] <= mine["rank_high"]
    assert np.all(np.diff([r["rank"] for r in section["borda"]]) >= 0)  # listed by rank
    markdown = (world / "board" / "leaderboard.md").read_text(encoding="utf-8")
    assert "### Ranked with MTEB's published results" in markdown and "(MTEB's Mean (Task))" in markdown
    assert "Not ranked, lacking members: " in markdown
    code, _, err = run_cli(["leaderboard", str(world / "out"), "-o", str(world / "comparable"), "--published",
                            str(root), "--published-only", "comparable"], capsys)
    assert code == 0, err
    only = json.loads((world / "comparable" / "leaderboard.json").read_text(encoding="utf-8"))["specs"][0][
        "suite_published"]
    flagged = {f["model"] for f in only["flagged_out"]}
    assert flagged and flagged < set(complete)  # external/ folders, other dataset revisions: listed, not ranked
    kept = [r for r in only["borda"] if r["kind"] == "published"]
    assert len(kept) == len(complete) - len(flagged) and not any(r["flags"] for r in kept)
