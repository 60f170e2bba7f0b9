"""A spec's subsets on the leaderboard as MTEB ranks a task of several hf_subsets (board.leaderboard.subsets): one
benchmark scored by the mean over the subsets, with the interval the run's own subsets.json gives, counted once
across benchmarks (Borda and the mean, checked by hand with scipy), each subset's boards kept and marked; a model
that lacks a subset has no mean (absent from that benchmark). Hashing adapter, Tatoeba and BIOSSES from the mirror."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import rankdata

from tests.conftest import run_cli
from tests.suites.test_multi_subset_member import SUBSETS


@pytest.fixture
def world(tatoeba_world: Path) -> Path:
    return tatoeba_world


def run(world: Path, spec: str, prompt: str, capsys: pytest.CaptureFixture[str], *extra: str) -> None:
    code, _, err = run_cli([str(world / "specs" / spec), "--data-dir", str(world / "data"), "--output",
                            str(world / "out"), "--adapter", "hashing", "--prompt", prompt, *extra], capsys)
    assert code == 0, err


def test_a_specs_subsets_are_one_benchmark_scored_by_their_mean(world: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    for prompt in ("a: ", "b: "):
        run(world, "tatoeba.yaml", prompt, capsys)
        run(world, "biosses.yaml", prompt, capsys)
    code, _, err = run_cli(["leaderboard", str(world / "out"), "-o", str(world / "board")], capsys)
    assert code == 0, err
    document = json.loads((world / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    specs = {s["spec_id"]: s for s in document["specs"]}
    mean = specs["tatoeba"]
    assert mean["kind"] == "subsets" and mean["members"] == [f"tatoeba.{s}" for s in SUBSETS]
    assert all(specs[f"tatoeba.{s}"]["part_of"] == "tatoeba" for s in SUBSETS)
    assert sorted(document["overall"]["specs"]) == ["biosses", "tatoeba"]  # the task counts once
    head = next(b for b in mean["boards"] if b["headline"])
    assert (head["split"], head["metric"]) == ("test", "f1")
    values = {}
    for row in head["rows"]:  # each model's mean and interval: its own subsets.json's, written by the run
        folder = Path(row["results"]).parent.name
        written = json.loads((world / "out" / "tatoeba" / folder / "subsets.json").read_text(encoding="utf-8"))
        expected = next(m for m in written["means"] if (m["split"], m["metric"]) == ("test", "f1"))
        assert (row["score"], row["ci_low"], row["ci_high"]) == (expected["value"], expected["ci_low"],
                                                                 expected["ci_high"])
        each = [json.loads(Path(p).read_text(encoding="utf-8"))["scores"]["test"]["f1"]["value"]
                for p in row["variant_results"]]
        assert len(each) == 3 and row["score"] == math.fsum(each) / 3
        values[row["model"]] = row["score"]
    biosses = next(b for b in specs["biosses"]["boards"] if b["headline"])
    sts = {row["model"]: row["score"] for row in biosses["rows"]}
    # Borda across the two benchmarks by hand: per benchmark, models below plus half the ties
    models = sorted(values)
    table = np.array([[values[m] for m in models], [sts[m] for m in models]])
    points = sum(len(models) - rankdata(-row, method="average") for row in table)
    overall = {row["model"]: row for row in document["overall"]["rows"]}
    assert [overall[m]["borda"] for m in models] == list(points)
    assert [overall[m]["mean"] for m in models] == pytest.approx(list(table.mean(axis=0)), abs=1e-15)
    assert all(overall[m]["specs"] == 2 for m in models)
    markdown = (world / "board" / "leaderboard.md").read_text(encoding="utf-8")
    assert "The mean over 3 subsets" in markdown and "Counted across benchmarks through the mean" in markdown
    page = (world / "board" / "leaderboard.html").read_text(encoding="utf-8")
    assert "The mean over 3 subsets" in page


def test_a_model_lacking_a_subset_has_no_mean(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(world, "tatoeba.yaml", "a: ", capsys)
    run(world, "tatoeba.yaml", "b: ", capsys, "--subsets", "jpn-eng,deu-eng")
    code, _, err = run_cli(["leaderboard", str(world / "out"), "-o", str(world / "board")], capsys)
    assert code == 0, err
    document = json.loads((world / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    mean = next(s for s in document["specs"] if s["spec_id"] == "tatoeba")
    (row,) = next(b for b in mean["boards"] if b["headline"])["rows"]  # only the model with all three
    assert '"a: "' in row["model"]
    lacking = next(r for r in document["overall"]["rows"] if '"b: "' in r["model"])
    assert lacking["specs"] == 0 and lacking["mean"] is None  # absent from the one counted benchmark


def test_models_with_no_common_subsets_rank_them_one_by_one(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model ran {jpn-eng, deu-eng}, another {deu-eng, fra-eng}: no model has the mean, so the subsets are ranked
    as benchmarks of their own, said on stderr (never a refusal of the whole board)."""
    run(world, "tatoeba.yaml", "a: ", capsys, "--subsets", "jpn-eng,deu-eng")
    run(world, "tatoeba.yaml", "b: ", capsys, "--subsets", "deu-eng,fra-eng")
    code, _, err = run_cli(["leaderboard", str(world / "out"), "-o", str(world / "board")], capsys)
    assert code == 0, err
    assert "tatoeba: no model ran every one of its subsets" in err and "benchmarks of their own" in err
    document = json.loads((world / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    assert sorted(document["overall"]["specs"]) == [f"tatoeba.{s}" for s in sorted(SUBSETS)]
    assert all(s["kind"] == "spec" and s["part_of"] is None for s in document["specs"])


def test_published_rows_beside_a_subsets_mean(world: Path, data_dir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """--published looks MTEB's values up on each subset's own boards (MTEB publishes each subset's score; the
    slice holds no Tatoeba file, so each says it found none); the mean has none, and the board is written (it
    raised a KeyError on the mean, which no run has)."""
    root = data_dir / "mteb-results-slice" / "results"
    if not root.is_dir():
        pytest.skip("mteb-results-slice is not in the data mirror")
    for prompt in ("a: ", "b: "):
        run(world, "tatoeba.yaml", prompt, capsys)
    code, _, err = run_cli(["leaderboard", str(world / "out"), "-o", str(world / "board"), "--published",
                            str(root)], capsys)
    assert code == 0, err
    specs = {s["spec_id"]: s for s in json.loads((world / "board" / "leaderboard.json").read_text())["specs"]}
    assert not any(b["published"] for b in specs["tatoeba"]["boards"])
    assert all(f"tatoeba.{s} test f1: no model in" in err for s in SUBSETS)
    assert (world / "board" / "leaderboard.html").is_file()
