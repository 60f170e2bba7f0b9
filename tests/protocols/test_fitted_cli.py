"""A fitted protocol end to end through the CLI (hashing adapter, a small intents file shaped like BANKING77):
the fit split is read and fingerprinted but not scored, predictions hold one label per experiment, results verify,
and compare and the leaderboard pair the two-level resamples (the same units and the same experiments for both
models), checked against a plain loop."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from specrun.results import Results, read_predictions
from specrun.results.verify import load_verified
from tests.conftest import run_cli
from tests.fixtures import fixture_spec

INTENTS = {"card_arrival": ["where is my new card", "my card has not arrived", "card still not delivered",
                            "when will my card come", "has my card been sent", "card delivery is late",
                            "I am waiting for my card", "no card in the post yet"],
           "exchange_rate": ["what rate do you use", "is the exchange rate fair", "how much is a euro today",
                             "currency conversion rate", "which exchange rate applies", "rate for dollars",
                             "why was the rate bad", "exchange rate for yen"],
           "lost_card": ["I lost my card", "my card is missing", "card was stolen", "cannot find my card",
                         "someone took my card", "I left my card somewhere", "block my lost card",
                         "my wallet with the card is gone"]}


def make_intents(root: Path) -> Path:
    folder = root / "banking77"
    folder.mkdir(parents=True)
    for name, rows in (("train.csv", [(t, c) for c, texts in INTENTS.items() for t in texts[:6]]),
                       ("test.csv", [(t, c) for c, texts in INTENTS.items() for t in texts[6:]])):
        with (folder / name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "category"])
            writer.writerows(rows)
    return root


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    from specrun.cli import main

    tmp = tmp_path_factory.mktemp("fitted")
    data = make_intents(tmp / "data")
    spec = fixture_spec("banking77", tmp, data, edit={"protocols.probe.options.samples_per_label": 3,
                                                      "protocols.probe.options.n_experiments": 4,
                                                      "uncertainty.resamples": 200})
    common = [str(spec), "--data-dir", str(data), "--adapter", "hashing", "-q"]
    assert main([*common, "--output", str(tmp / "a")]) == 0
    assert main([*common, "--output", str(tmp / "b"), "--prompt", "intent: "]) == 0
    return next((tmp / "a").rglob("results.json")), next((tmp / "b").rglob("results.json")), spec


def test_the_fit_split_is_read_and_pinned_but_not_scored(two_runs: tuple[Path, Path, Path]) -> None:
    path = two_runs[0]
    results = Results.model_validate_json(path.read_text())
    assert list(results.scores) == ["test"]
    assert set(results.provenance.data) == {"test", "train"}
    assert results.provenance.data["train"].n_source == 18
    units = read_predictions(path, results)
    ids, arrays = units[("test", "probe")]
    assert len(ids) == 6 and arrays["predicted_class"].shape == (6, 4) and arrays["gold_class"].shape == (6,)
    score = results.scores["test"]["accuracy"]
    per_run = (arrays["predicted_class"] == arrays["gold_class"][:, None]).mean(axis=0)
    assert score.value == pytest.approx(per_run.mean(), abs=1e-12) and score.runs == 4
    assert score.run_sd == pytest.approx(np.std(per_run), abs=1e-12)
    load_verified(path)  # every score recomputed from the predictions, intervals included
    report = (path.parent / "report.md").read_text(encoding="utf-8")
    assert "**Runs.** test accuracy: mean of 4 runs, sd" in report


def test_an_edited_prediction_of_one_experiment_is_refused(two_runs: tuple[Path, Path, Path],
                                                           tmp_path: Path) -> None:
    import hashlib
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(two_runs[0].parent, folder)
    lines = (folder / "predictions.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["predicted_class"][2] = (row["predicted_class"][2] + 1) % 3
    lines[0] = json.dumps(row, separators=(",", ":"))
    text = "\n".join(lines) + "\n"
    (folder / "predictions.jsonl").write_text(text)
    document = json.loads((folder / "results.json").read_text())
    document["predictions"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (folder / "results.json").write_text(json.dumps(document))
    from specrun.core.errors import SpecrunError

    with pytest.raises(SpecrunError, match="refusing edited results"):
        load_verified(folder / "results.json")


def _paired_loop(a: dict[str, np.ndarray], b: dict[str, np.ndarray], resamples: int, seed: int) -> np.ndarray:
    """The paired two-level bootstrap written as a loop: resample b draws units with default_rng(seed) and
    experiments with default_rng([seed, 1]), the same for both models."""
    gold = a["gold_class"]
    n, runs = a["predicted_class"].shape
    units = np.random.default_rng(seed).integers(0, n, (resamples, n))
    drawn = np.random.default_rng([seed, 1]).integers(0, runs, (resamples, runs))

    def accuracy(arrays: dict[str, np.ndarray], index: np.ndarray, chosen: np.ndarray) -> float:
        return float(np.mean([np.mean(arrays["predicted_class"][index, r] == gold[index]) for r in chosen]))

    return np.array([accuracy(a, units[k], drawn[k]) - accuracy(b, units[k], drawn[k]) for k in range(resamples)])


def test_compare_pairs_units_and_experiments(two_runs: tuple[Path, Path, Path],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.board.compare import compare

    path_a, path_b, _ = two_runs
    a, b, differences = compare(path_a, path_b)
    difference = next(d for d in differences if d.metric == "accuracy")
    units_a = read_predictions(path_a, a)[("test", "probe")][1]
    units_b = read_predictions(path_b, b)[("test", "probe")][1]
    u = a.provenance.uncertainty
    loop = _paired_loop(units_a, units_b, u.resamples, u.seed)
    assert difference.difference == pytest.approx(a.scores["test"]["accuracy"].value
                                                  - b.scores["test"]["accuracy"].value, abs=1e-12)
    low, high = stats.quantile(loop, [(1 - u.confidence) / 2, 1 - (1 - u.confidence) / 2])
    assert (difference.ci_low, difference.ci_high) == pytest.approx((low, high), abs=1e-12)
    code, out, err = run_cli(["compare", str(path_a), str(path_b)], capsys)
    assert code == 0, err and "| test | accuracy |" in out


def test_leaderboard_ranks_fitted_runs(two_runs: tuple[Path, Path, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path_a, path_b, _ = two_runs
    code, _, err = run_cli(["leaderboard", str(path_a), str(path_b), "-o", str(tmp_path / "board")], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    spec = board["specs"][0]
    rows = next(b for b in spec["boards"] if b["metric"] == "accuracy")["rows"]
    best, other = rows[0], rows[-1]
    paths = {str(path_a): path_a, str(path_b): path_b}
    arrays = [read_predictions(paths[row["results"]], Results.model_validate_json(
        paths[row["results"]].read_text()))[("test", "probe")][1] for row in (best, other)]
    loop = _paired_loop(arrays[0], arrays[1], spec["resamples"], spec["seed"])
    assert other["diff_to_best"] == pytest.approx(best["score"] - other["score"], abs=1e-12)
    low, high = stats.quantile(loop, [(1 - spec["confidence"]) / 2, 1 - (1 - spec["confidence"]) / 2])
    assert (other["diff_low"], other["diff_high"]) == pytest.approx((low, high), abs=1e-12)


def test_runs_of_two_versions_of_a_spec_are_not_compared(two_runs: tuple[Path, Path, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The same items and metrics, one protocol option changed (5 experiments instead of 4): a difference could
    be the spec's, so compare and the leaderboard refuse the pair in one line."""
    path_a, _, spec = two_runs
    edited = tmp_path / "banking77.yaml"
    edited.write_text(spec.read_text(encoding="utf-8").replace("n_experiments: 4", "n_experiments: 5"))
    data = spec.parent / "data"
    code, out, err = run_cli([str(edited), "--data-dir", str(data), "--adapter", "hashing", "-q", "--output",
                              str(tmp_path / "c")], capsys)
    assert code == 0, err
    code, _, err = run_cli(["compare", str(path_a), out.strip()], capsys)
    assert code == 2 and "used different versions of spec banking77" in err and err.count("\n") == 1
    code, _, err = run_cli(["leaderboard", str(path_a), out.strip(), "-o", str(tmp_path / "board")], capsys)
    assert code == 2 and "used different versions of the spec" in err and not (tmp_path / "board").exists()


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["scores"]["test"]["accuracy"].update(run_sd=0.0001), "refusing edited results"),
    (lambda d: d["scores"]["test"]["accuracy"].pop("runs"), "refusing edited results"),
])
def test_an_edited_run_spread_is_refused(two_runs: tuple[Path, Path, Path], tmp_path: Path, edit: Any,
                                         expected: str) -> None:
    import shutil

    from specrun.core.errors import SpecrunError

    folder = tmp_path / "run"
    shutil.copytree(two_runs[0].parent, folder)
    document = json.loads((folder / "results.json").read_text())
    edit(document)
    (folder / "results.json").write_text(json.dumps(document))
    with pytest.raises(SpecrunError, match=expected):
        load_verified(folder / "results.json")


def test_a_list_in_a_column_read_as_one_number_is_refused(two_runs: tuple[Path, Path, Path],
                                                          tmp_path: Path) -> None:
    import hashlib
    import shutil

    from specrun.core.errors import SpecrunError

    folder = tmp_path / "run"
    shutil.copytree(two_runs[0].parent, folder)
    rows = [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]
    for row in rows:
        row["gold_class"] = [row["gold_class"]] * 4
    text = "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows)
    (folder / "predictions.jsonl").write_text(text)
    document = json.loads((folder / "results.json").read_text())
    document["predictions"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (folder / "results.json").write_text(json.dumps(document))
    with pytest.raises(SpecrunError) as caught:
        load_verified(folder / "results.json")
    assert "\n" not in caught.value.one_line()


def test_a_fit_split_that_is_evaluated_is_refused(two_runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    from specrun.core.errors import SpecError
    from tests.conftest import plan_of

    spec = two_runs[2]
    edited = tmp_path / "banking77.yaml"
    edited.write_text(spec.read_text(encoding="utf-8").replace("fit_split: train", "fit_split: test"))
    with pytest.raises(SpecError, match="split 'test' is evaluated, so the protocol would fit on the items it "
                                        "scores"):
        plan_of(edited)
