"""Issue 5: per-item predictions, paired comparison, hub exports parsed by huggingface_hub, the licence gate,
and the scatter plot (with and without matplotlib)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from specrun.core.plain_yaml import load_plain
from specrun.results import Results, read_predictions
from tests.conftest import SPECS, require, run_cli

BIOSSES = str(SPECS / "biosses.yaml")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, Path]:
    """A: the default model; B: the same weights through plain transformers truncated to 16 tokens."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("runs")
    common = [BIOSSES, "--data-dir", str(data_dir), "-q"]
    assert main([*common, "--output", str(out / "a")]) == 0
    assert main([*common, "--output", str(out / "b"), "--adapter", "transformers", "--max-length", "16"]) == 0
    name = "sentence-transformers__all-MiniLM-L6-v2"
    return (out / "a" / "biosses" / name / "results.json",
            out / "b" / "biosses" / f"{name}+adapter-transformers+max-length-16" / "results.json")


@pytest.mark.slow  # the real model (the two_runs fixture): the full suite runs it
def test_predictions_are_one_row_per_item_and_reproduce_the_scores(two_runs: tuple[Path, Path]) -> None:
    path = two_runs[0]
    results = Results.model_validate_json(path.read_text())
    units = read_predictions(path, results)
    ids, arrays = units[("test", "zero_shot")]
    assert len(ids) == 100 and ids[0] == "biosses-000" and set(arrays) == {"prediction", "gold"}
    assert stats.spearmanr(arrays["prediction"], arrays["gold"]).statistic == pytest.approx(
        results.scores["test"]["spearman_zero_shot"].value, abs=1e-12)
    rows = [json.loads(line) for line in (path.parent / "predictions.jsonl").read_text().splitlines()]
    assert rows[0]["id"] == "biosses-000" and rows[0]["gold"] == 2.2


@pytest.mark.slow  # the real model (the two_runs fixture): the full suite runs it
def test_compare_gives_a_paired_interval_around_the_observed_difference(
        two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.board.compare import compare

    a, b, differences = compare(*two_runs)
    for d in differences:
        expected = a.scores[d.split][d.metric].value - b.scores[d.split][d.metric].value
        assert d.difference == pytest.approx(expected, abs=1e-12)
        assert d.ci_low <= d.difference <= d.ci_high and 0.0 <= d.a_better <= 1.0
    spearman = next(d for d in differences if d.metric == "spearman_zero_shot")
    # the same resamples for both models, done by hand with scipy
    _ids_a, arrays_a = read_predictions(two_runs[0], a)[("test", "zero_shot")]
    _, arrays_b = read_predictions(two_runs[1], b)[("test", "zero_shot")]
    rng = np.random.default_rng(1)
    loop = []
    for _ in range(1000):
        i = rng.integers(0, 100, 100)
        loop.append(stats.spearmanr(arrays_a["prediction"][i], arrays_a["gold"][i]).statistic
                    - stats.spearmanr(arrays_b["prediction"][i], arrays_b["gold"][i]).statistic)
    low, high = np.percentile(loop, [2.5, 97.5])
    assert spearman.ci_low == pytest.approx(low, abs=0.03) and spearman.ci_high == pytest.approx(high, abs=0.03)
    assert spearman.a_better == pytest.approx(np.mean(np.array(loop) > 0), abs=0.05)
    code, out, err = run_cli(["compare", str(two_runs[0]), str(two_runs[1])], capsys)
    assert code == 0, err
    assert "| test | spearman_zero_shot |" in out and "P(A better)" in out


@pytest.mark.slow  # the real model (the two_runs fixture): the full suite runs it
def test_compare_refuses_different_items(two_runs: tuple[Path, Path], tmp_path: Path, data_dir: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "biosses.yaml"
    spec.write_text(Path(BIOSSES).read_text(encoding="utf-8").replace("    test: all", "    test: 60"))
    code, out, err = run_cli([str(spec), "--data-dir", str(data_dir), "--output", str(tmp_path / "c"), "-q"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["compare", str(two_runs[0]), out.strip()], capsys)
    assert code == 2 and "used different versions of spec biosses" in err and err.count("\n") == 1


@pytest.mark.slow  # the real model (the two_runs fixture): the full suite runs it
def test_compare_refuses_altered_predictions(two_runs: tuple[Path, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    copy = tmp_path / "b"
    shutil.copytree(two_runs[1].parent, copy)
    text = (copy / "predictions.jsonl").read_text()
    (copy / "predictions.jsonl").write_text(text.replace('"gold":2.2', '"gold":2.3', 1))
    code, _, err = run_cli(["compare", str(two_runs[0]), str(copy / "results.json")], capsys)
    assert code == 2 and "differs from the" in err and "that results.json pins" in err


@pytest.mark.slow  # the real model (the two_runs fixture): the full suite runs it
def test_publish_is_refused_without_licence_confirmation(two_runs: tuple[Path, Path], tmp_path: Path,
                                                         data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both commands alike: the dry run shows what would be uploaded, then refuses in one line (exit 2, nothing
    at -o); --push refuses before anything else (tests/publish/test_publish_licence.py: before the hub)."""
    code, out, err = run_cli(["publish", str(two_runs[0]), "--benchmark", "specrun/biosses", "-o",
                              str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "data licence gpl-3.0 is not confirmed for publication" in err and "--confirm-licence" in err
    assert out.startswith("dry run: would upload to a model repo (--repo):") and "--- .eval_results/biosses.yaml" in out
    assert "--push is refused until the data licence is confirmed" in out
    assert not (tmp_path / "out").exists()
    code, out, err = run_cli(["publish", str(two_runs[0]), "--benchmark", "specrun/biosses", "--repo", "a/b",
                              "--push"], capsys)
    assert code == 2 and err.count("\n") == 1 and out == "" and "not confirmed for publication" in err
    code, out, err = run_cli(["publish-benchmark", BIOSSES, "--repo", "specrun/biosses", "--data-dir", str(data_dir)],
                             capsys)
    assert code == 2 and "not confirmed for publication" in err and "--- README.md" in out


@pytest.mark.slow  # the real model (the two_runs fixture): the full suite runs it
def test_publish_dry_run_with_confirmation_parses_with_huggingface_hub(
        two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from huggingface_hub import ModelCard, metadata_load, parse_eval_result_entries
    from huggingface_hub.repocard_data import model_index_to_eval_results

    reason = "legal review 2026-11 allows publishing scores, not data"
    code, out, err = run_cli(["publish", str(two_runs[0]), "--benchmark", "specrun/biosses", "--repo",
                              "someone/model", "--confirm-licence", reason, "-o", str(tmp_path)], capsys)
    assert code == 0, err
    assert out.startswith("dry run: would upload to model repo someone/model:") and "nothing was uploaded" in out
    results = Results.model_validate_json(two_runs[0].read_text())
    block = load_plain((tmp_path / "model-index.yaml").read_text())
    readme = tmp_path / "README.md"
    readme.write_text("---\n" + yaml.safe_dump(block) + "---\n\n# model\n")
    assert metadata_load(readme)["model-index"] == block["model-index"]
    card = ModelCard.load(readme)
    name, evals = model_index_to_eval_results(card.data.to_dict()["model-index"])
    assert name == results.provenance.model.name
    got = {(e.dataset_split, e.metric_type): e.metric_value for e in evals}
    assert got[("test", "spearmanr")] == pytest.approx(results.scores["test"]["spearman_zero_shot"].value, abs=1e-6)
    # the benchmark repo's own commit, never the source dataset's: none without --benchmark-revision
    assert {e.dataset_revision for e in evals} == {None}
    assert {(e.dataset_type, e.dataset_config) for e in evals} == {("specrun/biosses", "default")}
    entries = parse_eval_result_entries(load_plain((tmp_path / ".eval_results" / "biosses.yaml").read_text()))
    assert {e.task_id for e in entries} == {"test-pearson_zero_shot", "test-spearman_zero_shot"}
    assert all(e.dataset_id == "specrun/biosses" and reason in e.notes for e in entries)


def test_publish_benchmark_dataset_card_and_eval_yaml(tmp_path: Path, data_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from huggingface_hub import DatasetCard

    reason = "authors confirmed by email"
    code, _out, err = run_cli(["publish-benchmark", BIOSSES, "--repo", "specrun/biosses", "--confirm-licence", reason,
                              "--data-dir", str(data_dir), "-o", str(tmp_path)], capsys)
    assert code == 0, err
    card = DatasetCard.load(tmp_path / "README.md")
    assert card.data.license == "gpl-3.0" and card.data.pretty_name == "Biomedical sentence similarity (BIOSSES)"
    assert card.data.task_categories == ["sentence-similarity"]
    assert "| biosses-000 | " in card.text and reason in card.text
    eval_yaml = load_plain((tmp_path / "eval.yaml").read_text())
    assert [task["id"] for task in eval_yaml["tasks"]] == ["test-pearson_zero_shot", "test-spearman_zero_shot"]


def test_confirmed_licence_needs_no_flag(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from huggingface_hub import DatasetCard

    code, _out, err = run_cli(["publish-benchmark", str(SPECS / "jsts.yaml"), "--data-dir", str(data_dir), "-o",
                              str(tmp_path)], capsys)
    assert code == 0, err
    assert DatasetCard.load(tmp_path / "README.md").data.license == "cc-by-sa-4.0"


@pytest.mark.slow  # the real model (the two_runs fixture): the full suite runs it
def test_push_without_repo_is_one_line(two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["publish", str(two_runs[0]), "--benchmark", "x/y", "--confirm-licence", "ok", "--push"],
                           capsys)
    assert code == 2 and "--push needs --repo" in err


@pytest.mark.slow  # the real model (the two_runs fixture): the full suite runs it
def test_scatter_plot_beside_the_report(two_runs: tuple[Path, Path]) -> None:
    require("matplotlib")
    results = Results.model_validate_json(two_runs[0].read_text())
    name = results.plots["test/zero_shot"]
    assert (two_runs[0].parent / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"]({name})" in (two_runs[0].parent / "report.md").read_text()


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_report_renders_without_matplotlib(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    code, out, err = run_cli([BIOSSES, "--data-dir", str(data_dir), "--output", str(tmp_path / "out"), "-q",
                              "--no-cache"], capsys)
    assert code == 0, err
    results = Results.model_validate_json(Path(out.strip()).read_text())
    assert results.plots == {} and not list(tmp_path.rglob("*.png"))
    assert "| test | spearman_zero_shot |" in (Path(out.strip()).parent / "report.md").read_text()
