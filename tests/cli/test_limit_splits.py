"""`--splits` and `--limit` choose at run time: a run of some evaluated splits records which, a run of the first N
items of each split (a smoke run) records N; both write their own folder, verify, and say so in the report; a
limited run is refused by compare, the leaderboard, publish and export in one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from scipy import stats

from specrun.core.plain_yaml import load_plain
from specrun.results import Results
from specrun.results.verify import verified_with_spec
from tests.conftest import SPECS, assert_one_line_error, biosses_twin, fewer_items, prediction_rows, run_cli, run_ok

FOLDER = "sentence-transformers__all-MiniLM-L6-v2+adapter-hashing"


def run_args(spec: Path | str, data_dir: Path, output: Path, *extra: str) -> list[str]:
    return [str(spec), "--data-dir", str(data_dir), "--output", str(output), "--adapter", "hashing", "-q", *extra]


def predictions(results_path: Path) -> list[dict]:
    return prediction_rows(results_path.parent)


def limited_run(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str], n: int = 20) -> Path:
    run_ok(run_args(SPECS / "biosses.yaml", data_dir, tmp_path, "--limit", str(n)), capsys)
    return tmp_path / "biosses" / f"{FOLDER}+limit-{n}" / "results.json"


def test_a_limited_run_scores_the_first_n_items_and_says_so(tmp_path: Path, data_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    full = run_ok(run_args(SPECS / "biosses.yaml", data_dir, tmp_path), capsys)
    code, out, err = run_cli(run_args(SPECS / "biosses.yaml", data_dir, tmp_path, "--limit", "20"), capsys)
    assert code == 0, err
    path = Path(out.strip().splitlines()[-1])
    assert path == tmp_path / "biosses" / f"{FOLDER}+limit-20" / "results.json"  # its own folder
    assert (tmp_path / "biosses" / FOLDER / "results.json").is_file()  # the full run is still there
    assert "limited to 20 items per split" in err
    results = Results.model_validate_json(path.read_text())
    assert results.provenance.limit == 20 and results.provenance.splits is None and full.provenance.limit is None
    data = results.provenance.data["test"]
    assert (data.n_selected, data.n_source, data.fingerprint) == (20, 100, full.provenance.data["test"].fingerprint)
    assert results.texts.encoded == 0  # the full run's vectors were cached: the cache key did not change
    rows = predictions(path)
    full_rows = predictions(tmp_path / "biosses" / FOLDER / "results.json")
    assert [row["id"] for row in rows] == [row["id"] for row in full_rows[:20]]
    # independent: Spearman of the full run's first 20 predictions, computed by scipy
    expected = stats.spearmanr([r["prediction"] for r in full_rows[:20]], [r["gold"] for r in full_rows[:20]])
    assert results.scores["test"]["spearman_zero_shot"].value == pytest.approx(expected.statistic, abs=1e-12)
    assert results.scores["test"]["spearman_zero_shot"].n == 20
    verified_with_spec(path)  # verifies against its spec
    named = run_ok(run_args(SPECS / "biosses.yaml", data_dir, tmp_path, "--limit", "20", "--name", "mine"), capsys)
    assert named.provenance.limit == 20 and (tmp_path / "biosses" / "mine+limit-20" / "results.json").is_file()
    report = (path.parent / "report.md").read_text()
    assert "limited to 20 items per split" in report
    code, out, _ = run_cli(["card", str(SPECS / "biosses.yaml"), "--results", str(path), "--data-dir",
                            str(data_dir)], capsys)
    assert code == 0 and "limited to 20 items per split" in out


def test_the_limit_comes_after_the_pins_and_the_subset(tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    spec = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))
    spec["subset"] = {"seed": 7, "splits": {"test": 50}}
    path = tmp_path / "biosses.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    drawn = run_ok(run_args(path, data_dir, tmp_path / "a"), capsys)
    limited = run_ok(run_args(path, data_dir, tmp_path / "b", "--limit", "20"), capsys)
    first = [row["id"] for row in predictions(tmp_path / "a" / "biosses" / FOLDER / "results.json")][:20]
    assert [row["id"] for row in predictions(tmp_path / "b" / "biosses" / f"{FOLDER}+limit-20" /
                                             "results.json")] == first
    assert drawn.provenance.data["test"].n_selected == 50 and limited.provenance.data["test"].n_selected == 20
    spec["splits"]["test"]["fingerprint"] = "sha256:" + "0" * 64  # the check stays on the whole split
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    code, _, err = run_cli(run_args(path, data_dir, tmp_path / "c", "--limit", "20"), capsys)
    assert_one_line_error(code, err, contains="data does not match the spec")
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").rglob("results.json"))


@pytest.mark.parametrize("command", ["compare", "leaderboard", "publish", "export", "check-published"])
def test_a_limited_run_is_refused_in_one_line(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str],
                                              command: str) -> None:
    path = limited_run(tmp_path, data_dir, capsys)
    args = {"compare": ["compare", str(path), str(path)],
            "leaderboard": ["leaderboard", str(path), "-o", str(tmp_path / "board")],  # named: refused
            "publish": ["publish", str(path), "--benchmark", "specrun/biosses", "-o", str(tmp_path / "hub")],
            "export": ["export", str(path), "--format", "mteb", "-o", str(tmp_path / "mteb")],
            "check-published": ["check-published", str(path), "--published",
                                str(data_dir / "mteb-results-slice")]}[command]
    code, out, err = run_cli(args, capsys)
    line = assert_one_line_error(code, err, contains="a --limit 20 run")
    assert str(path) in line and out == ""
    assert not any((tmp_path / name).exists() for name in ("board", "hub", "mteb"))


def test_a_limited_run_beside_full_ones_is_named_by_the_leaderboard(tmp_path: Path, data_dir: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run_ok(run_args(SPECS / "biosses.yaml", data_dir, tmp_path), capsys)
    path = limited_run(tmp_path, data_dir, capsys)
    code, _, err = run_cli(["leaderboard", str(tmp_path), "-o", str(tmp_path / "board")], capsys)
    assert code == 0, err  # found below a folder: left out with a line, the full run ranked (round 4, item 7)
    assert f"left out: {path} (a --limit 20 smoke run" in err
    assert (tmp_path / "board" / "leaderboard.json").is_file()
    code, _, err = run_cli(["leaderboard", str(path.parent.parent / f"{FOLDER}+limit-20"), "-o",
                            str(tmp_path / "b2")], capsys)
    assert_one_line_error(code, err, contains="every run found is a --limit smoke run")


def test_splits_chooses_the_evaluated_splits(tmp_path: Path, data_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    results = run_ok(run_args(SPECS / "jsts.yaml", data_dir, tmp_path, "--splits", "valid", "--limit", "30"),
                     capsys)
    path = tmp_path / "jsts" / f"{FOLDER}+splits-valid+limit-30" / "results.json"
    assert list(results.scores) == ["valid"] and list(results.provenance.data) == ["valid"]
    assert results.provenance.splits == ["valid"] and results.provenance.limit == 30
    assert {row["split"] for row in predictions(path)} == {"valid"} and len(predictions(path)) == 30
    verified_with_spec(path)
    assert "splits chosen with --splits: valid only" in (path.parent / "report.md").read_text()
    edited = json.loads(path.read_text())
    edited["provenance"]["splits"] = None  # scores one split, as a run of all three never does
    path.write_text(json.dumps(edited))
    code, _, err = run_cli(["card", str(SPECS / "jsts.yaml"), "--results", str(path), "--data-dir", str(data_dir)],
                           capsys)
    assert_one_line_error(code, err, contains="refusing edited results")


def test_runs_of_other_splits_are_not_compared(tmp_path: Path, data_dir: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec = fewer_items(tmp_path / "specs", "jsick.yaml", test=200, train=200)
    run_ok(run_args(spec, data_dir, tmp_path, "--splits", "test"), capsys)
    run_ok(run_args(spec, data_dir, tmp_path, "--splits", "test,train"), capsys)
    a = tmp_path / "jsick" / f"{FOLDER}+splits-test" / "results.json"
    b = tmp_path / "jsick" / f"{FOLDER}+splits-test-train" / "results.json"
    code, _, err = run_cli(["compare", str(a), str(b)], capsys)
    assert_one_line_error(code, err, contains="splits")


@pytest.mark.parametrize(("specs", "splits", "expected"), [
    (["jsts.yaml"], "tset", "jsts evaluates no split 'tset' (did you mean 'test'?); its evaluated splits: train, "
                            "valid, test"),
    (["jsts.yaml", "biosses.yaml"], "valid", "biosses evaluates no split 'valid'; its evaluated splits: test"),
    (["biosses.yaml"], "train", "biosses evaluates no split 'train'"),  # fitted-on or unused: never scored
])
def test_an_unknown_split_is_one_line(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str],
                                      specs: list[str], splits: str, expected: str) -> None:
    code, _, err = run_cli([*(str(SPECS / spec) for spec in specs), "--splits", splits, "--data-dir", str(data_dir),
                            "--output", str(tmp_path), "--adapter", "hashing"], capsys)
    assert_one_line_error(code, err, contains=expected)
    assert not tmp_path.joinpath("jsts").exists() and not tmp_path.joinpath("biosses").exists()


@pytest.mark.parametrize("value", ["0", "-3", "ten"])
def test_limit_is_a_positive_integer(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "--limit", value], capsys)
    assert_one_line_error(code, err, contains="expected a positive integer")


def test_a_suite_takes_limit_in_its_own_folder_and_refuses_splits(tmp_path: Path, data_dir: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "suites"
    twin = biosses_twin(folder)  # two members of 100 pairs: the suite's rules, not its members' sizes, are tested
    suite = folder / "pair.yaml"
    suite.write_text(yaml.safe_dump({
        "id": "pair", "title": "Two members", "version": "1", "description": "BIOSSES and its twin.",
        "members": [{"spec": os.path.relpath(SPECS / "biosses.yaml", folder), "metric": "spearman_zero_shot"},
                    {"spec": twin.name, "metric": "spearman_zero_shot"}],
        "aggregates": ["mean_task"]}), encoding="utf-8")
    code, out, err = run_cli(run_args(suite, data_dir, tmp_path, "--limit", "30"), capsys)
    assert code == 0, err
    path = Path(out.strip().splitlines()[-1])
    assert path == tmp_path / "suite+pair" / f"{FOLDER}+limit-30" / "suite.json"
    data = json.loads(path.read_text())
    assert data["provenance"]["limit"] == 30 and all(m["n"] == 30 for m in data["members"])
    assert "Limited to 30 items per split" in (path.parent / "suite.md").read_text()
    code, out, err = run_cli(run_args(suite, data_dir, tmp_path), capsys)  # the full suite reuses nothing limited
    assert code == 0, err
    full = json.loads((tmp_path / "suite+pair" / FOLDER / "suite.json").read_text())
    assert full["provenance"]["limit"] is None and not any(m["reused"] for m in full["members"])
    assert {m["request_sha256"] for m in full["members"]}.isdisjoint(m["request_sha256"] for m in data["members"])
    code, _, err = run_cli(run_args(suite, data_dir, tmp_path, "--splits", "test"), capsys)
    assert_one_line_error(code, err, contains="--splits chooses a spec's splits")


def test_a_protocol_refusing_the_first_n_items_names_the_limit(tmp_path: Path, data_dir: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(run_args(SPECS / "masakhanews-s2s.yaml", data_dir, tmp_path, "--limit", "20"), capsys)
    assert_one_line_error(code, err, contains="(--limit 20: the first 20 items only; a larger --limit may hold more)")
    assert not (tmp_path / "masakhanews-s2s").exists()


@pytest.mark.parametrize("edit", [{"limit": None},
                                  {"limit": None, "n_selected": 100},
                                  {"limit": None, "selection": "20"}])
def test_a_limited_run_edited_into_a_full_one_is_refused(edit: dict, tmp_path: Path, data_dir: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A --limit run with its limit set to null (and its counts or its selection edited to match) was verified
    as made from its data, exported as MTEB's score and ranked (two bad-input hunts and a review)."""
    import json

    path = limited_run(tmp_path, data_dir, capsys)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["provenance"]["limit"] = None
    split = document["provenance"]["data"]["test"]
    split.update({key: value for key, value in edit.items() if key != "limit"})
    if "selection" in edit:
        split["n_selected"] = 20
    path.write_text(json.dumps(document), encoding="utf-8")
    for command in (["verify", str(path)], ["export", "--format", "mteb", str(path), "-o", str(tmp_path / "x")],
                    ["leaderboard", str(path), "-o", str(tmp_path / "board")]):
        code, _out, err = run_cli(command, capsys)
        assert_one_line_error(code, err)
        assert "refusing edited results" in err or "differs from its spec" in err, err
    assert not (tmp_path / "x").exists() and not (tmp_path / "board").exists()
