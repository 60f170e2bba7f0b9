"""The hub export matches the hub: eval.yaml, `.eval_results/*.yaml`, the model-index block and the dataset card
validate against the hub's documented schema (specrun.publish's pydantic models, written from hub-docs
docs/hub/eval-results.md and eval_results.yaml, and huggingface_hub 2.4.0's EvalResultEntry) and parse with
huggingface_hub's own parsers; task ids agree; revisions name the benchmark repo; what the hub would reject is
said in the dry run and refused on --push."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.publish import (
    EvalResultItem,
    EvalYaml,
    benchmark_check,
    benchmark_eval_yaml,
    check_eval_yaml,
    data_withheld,
    direction_check,
    frameworks,
    model_index,
)
from specrun.results import Results
from specrun.spec import load_spec
from tests.conftest import SPECS, assert_one_line_error, files_under, run_cli, run_subprocess

BIOSSES = SPECS / "biosses.yaml"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from specrun.cli import main

    out = tmp_path_factory.mktemp("hub-run")
    assert main([str(BIOSSES), "--data-dir", str(data_dir), "--adapter", "hashing", "--output", str(out), "-q"]) == 0
    return next(out.rglob("results.json"))


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from specrun.cli import main

    out = tmp_path_factory.mktemp("hub-benchmark")
    assert main(["publish-benchmark", str(BIOSSES), "--confirm-licence", "authors agreed", "--data-dir",
                 str(data_dir), "-o", str(out)]) == 0
    return out


def _publish(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[str, str]:
    code, out, err = run_cli(["publish", str(run), "--benchmark", "specrun/biosses", "--confirm-licence", "ok",
                              "-o", str(tmp_path), *extra], capsys)
    assert code == 0, err
    return out, err


def test_eval_yaml_keeps_to_the_documented_schema(benchmark: Path) -> None:
    document = load_plain((benchmark / "eval.yaml").read_text(encoding="utf-8"))
    EvalYaml.model_validate(document)
    assert set(document) == {"name", "description", "evaluation_framework", "tasks"}
    assert all(set(task) == {"id", "config", "split"} for task in document["tasks"])
    assert document["tasks"] == [{"id": "test-pearson_zero_shot", "config": "default", "split": "test"},
                                 {"id": "test-spearman_zero_shot", "config": "default", "split": "test"}]


def test_tasks_name_a_config_and_split_load_dataset_accepts(benchmark: Path) -> None:
    import datasets

    document = load_plain((benchmark / "eval.yaml").read_text(encoding="utf-8"))
    for task in document["tasks"]:
        loaded = datasets.load_dataset(str(benchmark), task["config"], split=task["split"])
        assert len(loaded) == 100 and loaded[0]["id"] == "biosses-000" and loaded[0]["gold"] == 2.2


def test_dataset_card_front_matter(benchmark: Path) -> None:
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(benchmark / "README.md")
    data = card.data.to_dict()
    assert data["language"] == ["en"] and data["size_categories"] == ["n<1K"]
    assert data["source_datasets"] == ["tabilab/biosses"] and data["task_ids"] == ["semantic-similarity-scoring"]
    assert data["configs"] == [{"config_name": "default", "data_files": [{"split": "test",
                                                                           "path": "data/test.parquet"}]}]
    assert sorted(files_under(benchmark)) == ["README.md", "data/test.parquet", "eval.yaml"]


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_framework_not_listed_is_said_and_push_refused(tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    source = frameworks()["source"]
    assert len(source["commit"]) == 40 and source["path"] == "packages/tasks/src/eval.ts"
    assert "specrun" not in frameworks()["frameworks"] and "mteb" in frameworks()["frameworks"]
    code, out, err = run_cli(["publish-benchmark", str(SPECS / "jsts.yaml"), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    assert "hub would reject: eval.yaml: evaluation_framework 'specrun' is not one the hub accepts" in out
    assert "registering takes a pull request to huggingface/huggingface.js" in out
    done = run_subprocess(["publish-benchmark", str(SPECS / "jsts.yaml"), "--data-dir", str(data_dir), "--push",
                           "--repo", "someone/jsts", "-o", str(tmp_path / "out")],
                          env={"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": None}, timeout=120)
    assert_one_line_error(done.returncode, done.stderr, contains="the hub would reject this upload")
    assert files_under(tmp_path / "out") == []
    assert check_eval_yaml(benchmark_eval_yaml(load_spec(SPECS / "jsts.yaml").spec, "mteb")).refusals == []


def test_schema_refuses_what_the_hub_refuses() -> None:
    spec = load_spec(BIOSSES).spec
    good = load_plain(benchmark_eval_yaml(spec, "inspect-ai"))
    assert check_eval_yaml(yaml.safe_dump(good)).refusals == []
    for change in ({"tasks": []}, {"name": ""}, {"tasks": [{"id": "x", "config": "default", "split": "test",
                                                            "metric": "pearson"}]},
                   {"tasks": [{"id": "x", "config": "default", "split": "test-x"}]}):
        assert check_eval_yaml(yaml.safe_dump({**good, **change})).refusals, change
    assert direction_check({"a": "lower", "b": "higher"}).refusals and not direction_check({"b": "higher"}).refusals


def test_lower_is_better_is_refused_for_push(tmp_path: Path, data_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    from specrun.core.contracts import MetricEntry
    from specrun.core.registry import METRICS

    def mean_gap(prediction: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.abs(prediction - gold / 4) @ np.asarray(weights, float).T / np.sum(weights, axis=-1)

    METRICS.register("toy_gap", MetricEntry(("prediction", "gold"), mean_gap, direction="lower"))
    try:  # a lower-is-better metric on STS outputs: the spec may only say what the registry says
        spec_path = tmp_path / "biosses.yaml"
        spec_path.write_text(BIOSSES.read_text(encoding="utf-8").replace(
            "    metric: pearson\n", "    metric: toy_gap\n", 1).replace("direction: higher", "direction: lower", 1),
            encoding="utf-8")
        spec = load_spec(spec_path).spec
        check = benchmark_check(spec, {"eval.yaml": benchmark_eval_yaml(spec, "mteb")})
        assert any("pearson_zero_shot are lower-is-better" in refusal for refusal in check.refusals)
        code, out, err = run_cli(["publish-benchmark", str(spec_path), "--confirm-licence", "ok", "--data-dir",
                                  str(data_dir), "--evaluation-framework", "mteb"], capsys)
        assert code == 0, err
        assert "hub would reject: metric(s) pearson_zero_shot are lower-is-better" in out
    finally:
        METRICS.unregister("toy_gap")


def test_eval_results_validate_parse_and_match_eval_yaml(run: Path, benchmark: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from huggingface_hub import parse_eval_result_entries

    out, _ = _publish(run, tmp_path, capsys, "--repo", "sentence-transformers/all-MiniLM-L6-v2")
    assert "hub would reject" not in out and "hub warning: --repo" not in out
    data = load_plain((tmp_path / ".eval_results" / "biosses.yaml").read_text(encoding="utf-8"))
    for entry in data:
        EvalResultItem.model_validate(entry)
    entries = parse_eval_result_entries(data)
    eval_ids = [task["id"] for task in load_plain((benchmark / "eval.yaml").read_text())["tasks"]]
    assert [e.task_id for e in entries] == eval_ids
    results = Results.model_validate_json(run.read_text())
    for entry in entries:
        assert entry.dataset_revision is None  # not the source dataset's revision; the benchmark's when given
        assert entry.date == results.provenance.created[:10] and len(entry.date) == 10
        assert entry.source_url == "https://huggingface.co/datasets/specrun/biosses" and entry.source_name
        assert "95% percentile bootstrap CI [" in entry.notes and "n=100 pairs" in entry.notes
        assert len(entry.notes) < 200


def test_benchmark_revision_names_the_benchmark_repo(run: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from huggingface_hub import parse_eval_result_entries
    from huggingface_hub.repocard_data import model_index_to_eval_results

    _publish(run, tmp_path, capsys, "--benchmark-revision", COMMIT, "--source-url", "https://example.org/logs",
             "--source-name", "logs", "--source-org", "specrun")
    entries = parse_eval_result_entries(load_plain((tmp_path / ".eval_results" / "biosses.yaml").read_text()))
    assert {e.dataset_revision for e in entries} == {COMMIT}
    assert {(e.source_url, e.source_name, e.source_org) for e in entries} == {("https://example.org/logs", "logs",
                                                                               "specrun")}
    _, evals = model_index_to_eval_results(load_plain((tmp_path / "model-index.yaml").read_text())["model-index"])
    assert {(e.dataset_type, e.dataset_config, e.dataset_split, e.dataset_revision) for e in evals} == {
        ("specrun/biosses", "default", "test", COMMIT)}
    assert {e.source_url for e in evals} == {"https://example.org/logs"}
    code, _, err = run_cli(["publish", str(run), "--benchmark", "specrun/biosses", "--confirm-licence", "ok",
                            "--benchmark-revision", "main"], capsys)
    assert_one_line_error(code, err, contains="is not a full 40-hex commit")
    # refused before a file is written, as the revision is; the second line: ids the hub refuses that the
    # pattern alone let through (a review)
    for bad in ("bad bench", "no-owner", "o/d/e",
                "owner/a..b", "owner/a--b", "owner/-ab", "owner/ab.", "owner/ab.git", "own\u00e9r/d", "o/" + "a" * 97):
        code, _, err = run_cli(["publish", str(run), "--benchmark", bad, "--confirm-licence", "ok", "-o",
                                str(tmp_path / "bad")], capsys)
        assert_one_line_error(code, err, contains=f"--benchmark {bad!r} is not a hub dataset id")
        assert not (tmp_path / "bad").exists()


def test_model_index_has_no_placeholder_and_warns_on_another_repo(run: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = _publish(run, tmp_path, capsys, "--repo", "someone/else")
    assert "hub warning: --repo someone/else is not the evaluated model sentence-transformers/all-MiniLM-L6-v2" in out
    text = (tmp_path / "model-index.yaml").read_text(encoding="utf-8")
    assert "github.com/specrun" not in text and "url: https://huggingface.co/datasets/specrun/biosses" in text


def test_withheld_data_names_no_config(run: Path) -> None:
    """A source never redistributed (fetch: false) puts no data in the benchmark repo, so model-index names no
    config or split there."""
    qabot = load_spec(SPECS / "qabot.yaml").spec
    assert data_withheld(qabot) is not None and data_withheld(load_spec(BIOSSES).spec) is None
    results = Results.model_validate_json(run.read_text())
    block = model_index(results, "o/d", spec=qabot)
    assert all("config" not in r["dataset"] and "split" not in r["dataset"] for r in block[0]["results"])


def test_dataset_card_ends_in_the_specs_citation(benchmark: Path) -> None:
    """Issue 20: the hub card cites the data as hub dataset cards do; the confirmation stays with the card."""
    citation = load_spec(BIOSSES).spec.citation
    text = (benchmark / "README.md").read_text(encoding="utf-8")
    assert citation and text.count("## Citation") == 1
    assert text.endswith("although the spec marks the licence unconfirmed: authors agreed\n\n## Citation\n\n"
                         f"```text\n{citation}\n```\n")


def test_citation_section_bibtex_plain_or_none(data_dir: Path) -> None:
    from specrun.data import example_items
    from specrun.plan import make_plan
    from specrun.publish import dataset_card
    from specrun.reports import citation_section, render_card

    entry = "@article{x,\n  title = {A ```fenced``` title},\n  year = {2017}\n}"
    assert citation_section(entry) == f"## Citation\n\n````bibtex\n{entry}\n````\n"
    assert citation_section("Doe J. A paper. 2020.") == "## Citation\n\n```text\nDoe J. A paper. 2020.\n```\n"
    assert citation_section(None) == citation_section("  ") == ""
    loaded = load_spec(BIOSSES)
    items = example_items(make_plan(loaded), data_dir)
    spec = loaded.spec.model_copy(update={"citation": None})
    assert "Citation" not in render_card(spec, items)
    assert "Citation" not in dataset_card(spec, render_card(spec, items, citation=False), None)
    spec = loaded.spec.model_copy(update={"citation": entry})
    card = dataset_card(spec, render_card(spec, items, citation=False), None)
    assert card.endswith(f"\n\n## Citation\n\n````bibtex\n{entry}\n````\n") and card.count("## Citation") == 1


def test_a_free_text_option_with_an_undecodable_byte_still_publishes(run: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A command-line byte that is not UTF-8 reaches Python as a lone surrogate; the entries' schema check reads
    back what safe_dump wrote (the pure-Python parser takes its escape; libyaml's refused it with a traceback,
    found in review): the dry run is written as before."""
    code, _, err = run_cli(["publish", str(run), "--benchmark", "specrun/biosses", "--confirm-licence", "ok \udcff",
                            "--source-url", "https://example.org/logs", "--source-name", "logs \udcff", "-o",
                            str(tmp_path / "pub")], capsys)
    assert code == 0, err
    assert "Traceback" not in err
    assert "\\uDCFF" in (tmp_path / "pub" / ".eval_results" / "biosses.yaml").read_text(encoding="utf-8")
