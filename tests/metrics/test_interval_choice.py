"""A spec names its interval methods (uncertainty.interval for all, metrics.NAME.interval for one) and every
reader holds the run to them: results.json records each score's method, the card names it, verify recomputes the
interval by the recorded method and refuses a method its spec does not give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from specrun.core.errors import SpecrunError
from specrun.core.plain_yaml import load_plain
from specrun.metrics import estimate
from specrun.results import read_predictions, read_results
from specrun.results.verify import load_verified, verified_with_spec
from tests.conftest import SPECS, assert_one_line_error, run_cli


def _biosses(tmp_path: Path, interval: str, pearson: str | None) -> Path:
    document = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))
    document["uncertainty"]["interval"] = interval
    if pearson is not None:
        document["metrics"]["pearson_zero_shot"]["interval"] = pearson
    path = tmp_path / "biosses.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _run(spec: Path, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    code, out, err = run_cli([str(spec), "--data-dir", str(data_dir), "--adapter", "hashing", "--output",
                              str(tmp_path / "out"), "-q"], capsys)
    assert code == 0, err
    return Path(out.strip().splitlines()[-1])


def test_a_metric_s_own_method_wins_over_the_spec_s(tmp_path: Path, data_dir: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    spec = _biosses(tmp_path, "basic", "bca")
    path = _run(spec, tmp_path, data_dir, capsys)
    results = load_verified(path).results
    scores = results.scores["test"]
    assert (scores["pearson_zero_shot"].interval, scores["spearman_zero_shot"].interval) == ("bca", "basic")
    assert results.provenance.uncertainty.interval == "basic"
    arrays = read_predictions(path, results)[("test", "zero_shot")][1]
    for metric, method in (("pearson", "bca"), ("spearman", "basic")):  # the interval is the method's
        again = estimate(metric, arrays, resamples=1000, confidence=0.95, seed=20261006, interval=method)
        assert (again.ci_low, again.ci_high) == (scores[f"{metric}_zero_shot"].ci_low,
                                                 scores[f"{metric}_zero_shot"].ci_high)
    code, card, err = run_cli(["card", str(spec), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    lines = {line.split(" — ")[0].lstrip("- "): line for line in card.splitlines() if " — " in line}
    assert lines["pearson_zero_shot"].endswith("95% bootstrap CI (bca), 1000 resamples")
    assert lines["spearman_zero_shot"].endswith("95% bootstrap CI (basic), 1000 resamples")
    report = (path.parent / "report.md").read_text(encoding="utf-8")
    assert "| test | pearson_zero_shot |" in report and "| bca |" in report and "| basic |" in report


def test_an_edited_method_is_refused(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The method renamed alone: its interval no longer recomputes. Renamed with the interval its new method
    gives: the numbers verify, but the spec gives another method, so anything checked against the spec refuses."""
    spec = _biosses(tmp_path, "auto", None)
    path = _run(spec, tmp_path, data_dir, capsys)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["scores"]["test"]["spearman_zero_shot"]["interval"] == "percentile"
    raw["scores"]["test"]["spearman_zero_shot"]["interval"] = "basic"
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    code, _, err = run_cli(["compare", str(path), str(path)], capsys)
    assert_one_line_error(code, err, 2, contains="differs from the")
    arrays = read_predictions(path, read_results(path))[("test", "zero_shot")][1]
    basic = estimate("spearman", arrays, resamples=1000, confidence=0.95, seed=20261006, interval="basic")
    raw["scores"]["test"]["spearman_zero_shot"].update(ci_low=basic.ci_low, ci_high=basic.ci_high)
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    assert load_verified(path).results.scores["test"]["spearman_zero_shot"].interval == "basic"
    with pytest.raises(SpecrunError) as caught:
        verified_with_spec(path, str(spec))
    assert "interval method 'basic' differs from the 'percentile' its spec" in caught.value.one_line()
