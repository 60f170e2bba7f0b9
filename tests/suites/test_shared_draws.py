"""Suite members over the same units share their draws (issue 45 item 9): the resampled index vectors of members
on the same items are identical, members on other (or merely overlapping) items draw their own, the aggregate's
interval equals a plain loop that applies one index draw to both members' statistics, and the shipped Japanese
suite's JSICK pair (relatedness Spearman, entailment AP: two specs, one file, the same pair ids) is recognised."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import yaml
from scipy import stats
from sklearn.metrics import average_precision_score

import specrun.board.joint as aggregate
import specrun.metrics.resampling as resampling
from specrun.board import MemberUnits, aggregate_interval, joint_draws, member_seed
from specrun.board.suites.units import units_key
from specrun.core.plain_yaml import load_plain
from specrun.metrics import clear_recent
from tests.conftest import ROOT, run_cli

N, RESAMPLES, SEED = 120, 300, 11


def members() -> list[MemberUnits]:
    """Two members on the same pairs (a Spearman and an AP, JSICK's pair) and one on other units."""
    rng = np.random.default_rng(3)
    latent = rng.normal(size=N)
    gold = latent + rng.normal(scale=0.7, size=N)
    score = latent + rng.normal(scale=0.7, size=N)
    label = (gold > 0.5).astype(float)
    ap = rng.random(N)
    return [MemberUnits(0, "spearman", {"prediction": score, "gold": gold}, "pairs", 1.0, "STS"),
            MemberUnits(1, "pair_ap", {"cosine_score": score, "pair_label": label}, "pairs", 3.0,
                        "PairClassification"),
            MemberUnits(2, "map", {"ap": ap}, "queries", 2.0, "Retrieval")]


def test_members_on_the_same_units_share_their_index_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each member's statistic takes the multiplicities of its draw: the same for the members on the same pairs
    (drawn once: the second is the kept draw), another for the third."""
    drawn: list[np.ndarray] = []
    made: list[int] = []
    real_weights, real_indices = resampling.draw_weights, resampling.draw_indices

    def recording(n_units: int, resamples: int, seed: int):  # type: ignore[no-untyped-def]
        batches = list(real_weights(n_units, resamples, seed))
        drawn.append(np.concatenate(batches))
        return iter(batches)

    def counted(n_units: int, resamples: int, seed: int):  # type: ignore[no-untyped-def]
        made.append(seed)
        return real_indices(n_units, resamples, seed)

    monkeypatch.setattr(resampling, "draw_weights", recording)
    monkeypatch.setattr(resampling, "draw_indices", counted)
    clear_recent()  # draws the process kept from another test would not be drawn again
    first = joint_draws(members(), resamples=RESAMPLES, seed=SEED)
    assert len(drawn) == 3 and np.array_equal(drawn[0], drawn[1]) and not np.array_equal(drawn[0], drawn[2])
    assert len(made) == 2
    again = joint_draws(members(), resamples=RESAMPLES, seed=SEED)  # deterministic: the same draws every time
    assert all(np.array_equal(a.values, b.values) for a, b in zip(first, again, strict=True))
    other = joint_draws(members(), resamples=RESAMPLES, seed=SEED + 1)
    assert not np.array_equal(first[0].values, other[0].values)


def test_the_aggregate_interval_is_a_plain_loop_over_one_draw_for_both() -> None:
    units = members()
    value, low, high = aggregate_interval("weighted_mean", joint_draws(units, resamples=RESAMPLES, seed=SEED), 0.95)

    def indices(index: int) -> np.ndarray:
        rng = np.random.default_rng(member_seed(SEED, index))
        return np.concatenate([rng.integers(0, N, (min(250, RESAMPLES - start), N))
                               for start in range(0, RESAMPLES, 250)])

    pairs, queries = indices(0), indices(2)  # the pairs' one draw (the first member's seed) serves both
    s, a, q = (u.arrays for u in units)
    loop = [(stats.spearmanr(s["prediction"][i], s["gold"][i])[0]
             + 3 * average_precision_score(a["pair_label"][i], a["cosine_score"][i]) + 2 * np.mean(q["ap"][j])) / 6
            for i, j in zip(pairs, queries, strict=True)]
    assert (low, high) == pytest.approx(tuple(np.percentile(loop, [2.5, 97.5])), abs=1e-12)
    own = [stats.spearmanr(s["prediction"], s["gold"])[0], average_precision_score(a["pair_label"],
                                                                                   a["cosine_score"]), np.mean(q["ap"])]
    assert value == pytest.approx((own[0] + 3 * own[1] + 2 * own[2]) / 6, abs=1e-12)


def results_of(ids_files: dict[str, str] | None, fingerprint: str = "sha256:f") -> Any:
    """What units_key reads of a results.json: the split's files (or none) and fingerprint."""
    split = SimpleNamespace(files=ids_files or {}, fingerprint=fingerprint)
    return SimpleNamespace(provenance=SimpleNamespace(data={"test": split}, spec_sha256="0" * 64))


def test_the_units_key_shares_only_the_same_items_in_the_same_order() -> None:
    ids = [f"jsick-{i}" for i in range(10)]
    files = {"jsick/jsick.tsv": "5e2e"}
    key = units_key(results_of(files, "sha256:relatedness"), "test", ids)
    assert units_key(results_of(files, "sha256:entailment"), "test", ids) == key  # same file, same ids
    assert units_key(results_of(files), "test", ids[:8]) != key  # a subset: partly shared, independent
    assert units_key(results_of(files), "test", ids[::-1]) != key  # another order
    assert units_key(results_of({"jsick/jsick.tsv": "9999"}), "test", ids) != key  # another file
    no_files = units_key(results_of(None, "sha256:a"), "test", ids)  # no files recorded: the fingerprint decides
    assert no_files == units_key(results_of(None, "sha256:a"), "test", ids) != units_key(
        results_of(None, "sha256:b"), "test", ids)


@pytest.mark.slow
def test_the_japanese_suite_s_jsick_pair_shares_its_draws(tmp_path: Path, data_dir: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped suite's two JSICK members, run alone on the hashing adapter: one draw for both."""
    if not (data_dir / "jsick").is_dir():
        pytest.skip("JSICK is not in the data mirror")
    shipped = load_plain((ROOT / "suites" / "japanese.yaml").read_text(encoding="utf-8"))
    pair = [m for m in shipped["members"] if m["spec"] in ("../specs/jsick.yaml", "../specs/jsick-pairs.yaml")]
    assert [m["metric"] for m in pair] == ["spearman_zero_shot", "ap"]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "jsick").symlink_to((data_dir / "jsick").resolve())
    (tmp_path / "specs").mkdir()
    for name in ("jsick.yaml", "jsick-pairs.yaml"):
        shutil.copy(ROOT / "specs" / name, tmp_path / "specs" / name)
    (tmp_path / "suites").mkdir()
    suite = tmp_path / "suites" / "jsick.yaml"
    suite.write_text(yaml.safe_dump({**{k: shipped[k] for k in ("title", "version", "description")},
                                     "id": "jsick-pair", "members": pair, "uncertainty": {"resamples": 200}}),
                     encoding="utf-8")
    used: list[int] = []
    real = aggregate.member_draws
    monkeypatch.setattr(aggregate, "member_draws", lambda *a, **k: used.append(k["index"]) or real(*a, **k))
    code, out, err = run_cli([str(suite), "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out"),
                              "--adapter", "hashing"], capsys)
    assert code == 0, err
    assert used == [0, 0]  # the entailment member draws on the relatedness member's seed: the same pairs
    record = json.loads(Path(out.strip().splitlines()[-1]).read_text(encoding="utf-8"))
    assert [m["n"] for m in record["members"]] == [4927, 4927]


@pytest.mark.slow  # several processes
def test_the_coverage_harness_measures_shared_against_independent_draws(tmp_path: Path) -> None:
    """bench/coverage.py --part suites at a small size: every case's shared draws give the wider interval, the
    more so the more the members correlate (the figures themselves are in BENCHMARKS.md)."""
    from tests.test_bench_scripts import run_bench

    report_path = tmp_path / "suites.json"
    done = run_bench("coverage.py", "--part", "suites", "--reps", "40", "--resamples", "200", "--expected-draws",
                     "200", "--jobs", "2", "--json", str(report_path), cwd=tmp_path)
    assert "| suite: two members on the same units |" in done.stdout
    rows = {row["case"]: row for row in json.loads(report_path.read_text(encoding="utf-8"))["suites"]}
    assert list(rows) == ["means_rho_0.35", "means_rho_0.85", "spearman_and_ap"]
    for row in rows.values():
        assert row["reps"] == 40 and row["shared"]["width"] > row["independent"]["width"]
    ratio = {name: row["shared"]["width"] / row["independent"]["width"] for name, row in rows.items()}
    assert ratio["means_rho_0.85"] > ratio["means_rho_0.35"] > 1.05
