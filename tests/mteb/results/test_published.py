"""Published results in and ours out: MTEB's result files read (1.x as in the data mirror, 2.x as written below),
check-published, published rows beside ours (leaderboard, compare, suites) and export --format mteb. The runs here
use the hashing adapter (plumbing, not numbers); the published files are fabricated from their values, so the
differences are known exactly."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from specrun.core.markdown import md_text
from specrun.core.plain_yaml import load_plain
from specrun.mteb.results import PublishedDir, read_task_file
from tests.conftest import SPECS, assert_one_line_error, run_cli

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
FOLDER = "sentence-transformers__all-MiniLM-L6-v2"
REVISION = "8b3219a92973c328a8e22fadcfa821b5dc75636a"


def task_file_2x(task: str, scores: dict[str, float], subset: str = "default", main: str | None = None) -> dict:
    """An mteb 2.x result file. Its fields are those of mteb's TaskResult as 2.x writes it to disk
    (embeddings-benchmark/mteb, mteb/results/task_result.py: `dataset_revision`, `task_name`, `mteb_version`,
    `scores: dict[split, list[ScoresDict]]` whose entries need `main_score`, `hf_subset` and `languages` and get a
    per-subset `mteb_version` since 2.x, `evaluation_time`, `kg_co2_emissions`, `date` (to_disk writes the
    timestamp) and `evaluation_phases` (PhaseTiming: name, start, end, split, subset))."""
    entry: dict[str, Any] = {**scores, "hf_subset": subset, "languages": ["eng-Latn"], "mteb_version": "2.1.0",
                             "main_score": scores[main or next(iter(scores))]}
    return {"dataset_revision": "b0fddb56ed78048fa8b90373c8a3cfc37b684831", "task_name": task,
            "mteb_version": "2.1.0", "scores": {"test": [entry]}, "evaluation_time": 1.5,
            "kg_co2_emissions": None, "date": 1754000000.0,
            "evaluation_phases": [{"name": "encode", "start": 0.0, "end": 1.2, "split": "test", "subset": subset}]}


def write_published(root: Path, task: str, document: dict, model: str = FOLDER, revision: str = REVISION) -> Path:
    path = root / model / revision / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Path]:
    """Hashing runs of stsb and sickr on the real data (a few seconds each)."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("runs")
    found = {}
    for spec in ("stsb", "sickr"):
        assert main([str(SPECS / f"{spec}.yaml"), "--data-dir", str(data_dir), "--output", str(out),
                     "--adapter", "hashing", "-q"]) == 0
        found[spec] = next((out / spec).glob("*/results.json"))
    return found


@pytest.fixture(scope="module")
def plain_runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Path]:
    """Runs of the model as it is (the real model: what export --format mteb takes; a hashing run is refused) of
    stsb and sickr; the session cache serves their vectors to the other real-model tests."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("plain")
    found = {}
    for spec in ("stsb", "sickr"):
        assert main([str(SPECS / f"{spec}.yaml"), "--data-dir", str(data_dir), "--output", str(out), "-q"]) == 0
        found[spec] = out / spec / FOLDER / "results.json"
    return found


def runs_of_hashing(tmp_path: Path, data_dir: Path) -> Path:
    from specrun.cli import main

    assert main([str(SPECS / "stsb.yaml"), "--data-dir", str(data_dir), "--output", str(tmp_path / "h"), "--adapter",
                 "hashing", "-q"]) == 0
    return tmp_path / "h" / "stsb" / f"{FOLDER}+adapter-hashing" / "results.json"


def scores_of(path: Path) -> dict[str, float]:
    results = json.loads(path.read_text())
    return {metric: score["value"] for metric, score in results["scores"]["test"].items()}


@pytest.fixture()
def published(tmp_path: Path, runs: dict[str, Path]) -> Path:
    """STSBenchmark as a 2.x file holding our hashing run's values, the Spearman moved by 1e-9."""
    ours = scores_of(runs["stsb"])
    root = tmp_path / "published"
    write_published(root, "STSBenchmark", task_file_2x("STSBenchmark", {
        "cosine_spearman": ours["spearman_zero_shot"] + 1e-9, "cosine_pearson": ours["pearson_zero_shot"]}))
    return root


def test_reads_the_1x_files_of_the_mirror(data_dir: Path) -> None:
    folder = data_dir / "mteb-results" / FOLDER / REVISION
    sts = read_task_file(folder / "STSBenchmark.json")
    assert sts.mteb_version == "1.12.75"
    assert sts.scores["test"][0].model_extra["cosine_spearman"] == pytest.approx(0.8203247283076371, abs=0)
    from specrun.mteb.score_ref import MtebRef

    found = PublishedDir(data_dir / "mteb-results").find(
        MODEL, None, MtebRef(task="Banking77Classification", split="test", score="accuracy"))
    assert found.value is not None and found.value.value == 0.8004220779220779
    assert found.note and REVISION in found.note  # the run records no revision: the only one is used, and said


def test_check_published_prints_ours_published_and_the_difference(runs: dict[str, Path], published: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["check-published", str(runs["stsb"]), str(runs["sickr"]), "--published",
                              str(published), "--tolerance", "1e-6"], capsys)
    assert code == 0, err
    row = next(line for line in out.splitlines() if "cosine_spearman" in line and "| stsb |" in line)
    assert "-1.000e-09" in row
    assert "| stsb | test | pearson_zero_shot |" in out and "+0.000e+00" in out
    assert "Not published: sickr spearman_zero_shot: no SICK-R.json in" in out  # a line, not an error
    code, out, err = run_cli(["check-published", str(runs["stsb"]), "--published", str(published),
                              "--tolerance", "1e-10"], capsys)
    assert code == 1 and "exceeds --tolerance" in err
    # a hashing run beside the model's published values: said, not passed off as a check (a new-user trial)
    assert "is not the model as it is (adapter hashing); the published values are the model's own" in out


@pytest.mark.parametrize(("edit", "contains"), [
    (lambda d: d.update(mteb_version="1.0.3"), "layout before 1.11"),
    (lambda d: d["scores"]["test"][0].update(cosine_spearman="high"), "not a finite number"),
    (lambda d: d.pop("task_name"), "task_name"),
    (lambda d: d.update(task_name="SICK-R"), "is not 'STSBenchmark'"),
])
def test_a_bad_published_file_is_one_line(runs: dict[str, Path], published: Path, edit: Any, contains: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = published / FOLDER / REVISION / "STSBenchmark.json"
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    code, _out, err = run_cli(["check-published", str(runs["stsb"]), "--published", str(published)], capsys)
    assert contains in assert_one_line_error(code, err)


def test_published_read_is_bounded_and_a_folder_is_required(runs: dict[str, Path], published: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = published / FOLDER / REVISION / "STSBenchmark.json"
    path.write_bytes(b" " * (9 << 20))
    code, _out, err = run_cli(["check-published", str(runs["stsb"]), "--published", str(published)], capsys)
    assert "limit" in assert_one_line_error(code, err)
    code, _out, err = run_cli(["check-published", str(runs["stsb"]), "--published", str(tmp_path / "none")], capsys)
    assert "must be a folder" in assert_one_line_error(code, err)


def test_several_revisions_and_none_recorded_is_a_line(runs: dict[str, Path], published: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(published / FOLDER / REVISION, published / FOLDER / ("0" * 40))
    code, out, err = run_cli(["check-published", str(runs["stsb"]), "--published", str(published)], capsys)
    assert code == 0, err
    assert "has 2 published revisions" in out


def test_leaderboard_ranks_published_rows_with_ours(runs: dict[str, Path], published: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The rule (docs/publishing.md): a published row is ranked with ours, a point with no interval; our row keeps
    its interval and gets a rank interval among the published points; our own ranking is untouched."""
    code, _out, err = run_cli(["leaderboard", str(runs["stsb"]), "-o", str(tmp_path / "plain")], capsys)
    assert code == 0, err
    code, _out, err = run_cli(["leaderboard", str(runs["stsb"]), "-o", str(tmp_path / "board"), "--published",
                               str(published)], capsys)
    assert code == 0, err
    plain = json.loads((tmp_path / "plain" / "leaderboard.json").read_text())
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    head = board["specs"][0]["boards"][0]
    (row,) = head["published"]
    assert row["model"] == MODEL and row["score"] == scores_of(runs["stsb"])["spearman_zero_shot"] + 1e-9
    assert (row["rank"], row["flags"], row["interval"]) == (1, [], "none: a published point")  # above ours by 1e-9
    (ours,) = head["rows"]
    assert ours["published_rank"] == 2 and ours["published_rank_low"] <= 2 <= ours["published_rank_high"]
    own = ("published_rank", "published_rank_low", "published_rank_high")
    def kept(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k not in own} for r in rows]

    assert all(r[k] is None for r in plain["specs"][0]["boards"][0]["rows"] for k in own)
    assert kept(head["rows"]) == kept(plain["specs"][0]["boards"][0]["rows"])  # our ranks, intervals: untouched
    assert board["overall"] == plain["overall"]  # and so is the ranking across specs
    markdown = (tmp_path / "board" / "leaderboard.md").read_text()
    assert (f"| 1 (a point: no interval) | {MODEL} (published, revision 8b3219a92973, mteb 2.1.0) | "
            f"{row['score']:.4f} | — | comparable |") in markdown
    assert "ranked with ours: a published number is a point" in markdown
    html = (tmp_path / "board" / "leaderboard.html").read_text()
    assert 'class="published"' in html and "1 (a point: no interval)" in html
    assert head["published_caveat"] is None and "Caveat:" not in markdown


def test_a_published_value_outside_the_metric_range_is_set_aside_never_ranked(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Spearman of 5.0, or one written in percent (82.0), was ranked as comparable, and a percent-scale copy of
    a model topped a suite's mean (a bad-input hunt): a value outside its spec's range is no value of the metric,
    set aside with why, and not published to check-published."""
    root = tmp_path / "published"
    write_published(root, "STSBenchmark", task_file_2x("STSBenchmark", {"cosine_spearman": 82.03,
                                                                        "cosine_pearson": 0.8}))
    write_published(root, "STSBenchmark", task_file_2x("STSBenchmark", {"cosine_spearman": 0.5, "cosine_pearson": 0.5}),
                    model="other__model")
    code, _out, err = run_cli(["leaderboard", str(runs["stsb"]), "-o", str(tmp_path / "board"), "--published",
                               str(root)], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    head = next(b for b in board["specs"][0]["boards"] if b["metric"] == "spearman_zero_shot")
    assert [row["model"] for row in head["published"]] == ["other/model"]
    assert "cosine_spearman 82.03 lies outside the metric's range [-1, 1]" in err
    code, out, err = run_cli(["check-published", str(runs["stsb"]), "--published", str(root)], capsys)
    assert code == 0, err
    assert "Not published: stsb spearman_zero_shot:" in out and "82.03 lies outside" in out


def test_a_spec_caveat_on_its_mteb_counterpart_is_said_beside_the_published_rows(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """BIOSSES's mirror is not MTEB's copy (its spec's `mteb.caveat`): check-published said so, the board ranked
    our run among the published rows in silence (a new-user trial). The board now says it under them."""
    caveat = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))["metrics"]["spearman_zero_shot"][
        "mteb"]["caveat"]
    code, out, err = run_cli([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output",
                              str(tmp_path / "runs"), "--adapter", "hashing", "-q"], capsys)
    assert code == 0, err
    code, _out, err = run_cli(["leaderboard", out.split()[-1], "-o", str(tmp_path / "board"), "--published",
                               str(data_dir / "mteb-results-slice")], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    head = next(b for b in board["specs"][0]["boards"] if b["metric"] == "spearman_zero_shot")
    assert head["published"] and head["published_caveat"] == caveat
    assert f"Caveat: {md_text(caveat)}." in (tmp_path / "board" / "leaderboard.md").read_text()
    assert "Caveat: " in (tmp_path / "board" / "leaderboard.html").read_text()


def test_compare_shows_published_values_never_paired(runs: dict[str, Path], published: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    code, _out, err = run_cli([str(SPECS / "stsb.yaml"), "--data-dir", str(data_dir), "--output",
                               str(tmp_path / "b"), "--adapter", "hashing", "--max-length", "16", "-q"], capsys)
    assert code == 0, err
    other = next((tmp_path / "b" / "stsb").glob("*/results.json"))
    code, out, err = run_cli(["compare", str(runs["stsb"]), str(other), "--published", str(published)], capsys)
    assert code == 0, err
    paired, _, beside = out.partition("Published (MTEB result files)")
    assert "published" not in paired.lower()
    assert beside.count("| test | spearman_zero_shot |") == 2 and "-1.000e-09" in beside
    assert beside.count("is not the model as it is (adapter hashing") == 2  # each run, by its label
    assert "(adapter hashing, max length 16) is not the model as it is" in beside


@pytest.mark.slow  # export takes a run of the model as it is: the real model
def test_export_writes_what_the_2x_fixture_holds(plain_runs: dict[str, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["export", "--format", "mteb", str(plain_runs["stsb"]), str(plain_runs["sickr"]), "-o",
                              str(tmp_path / "export")], capsys)
    assert code == 0, err
    path = tmp_path / "export" / FOLDER / "no_revision_available" / "STSBenchmark.json"
    assert str(path) in out
    written = json.loads(path.read_text())
    fixture = task_file_2x("STSBenchmark", {"cosine_spearman": 0.5, "cosine_pearson": 0.5})
    # every field of the 2.x fixture but the optional timing phases, and one extra block MTEB's model ignores
    assert set(written) - {"specrun"} == set(fixture) - {"evaluation_phases"}
    entry = written["scores"]["test"][0]
    assert set(entry) == set(fixture["scores"]["test"][0]) - {"mteb_version"}
    ours = json.loads(plain_runs["stsb"].read_text())["scores"]["test"]
    assert entry["cosine_spearman"] == entry["main_score"] == ours["spearman_zero_shot"]["value"]
    assert entry["languages"] == ["eng-Latn"] and entry["hf_subset"] == "default"
    block = {s["metric"]: s for s in written["specrun"]["runs"][0]["scores"]}
    assert block["pearson_zero_shot"]["ci_low"] == ours["pearson_zero_shot"]["ci_low"]
    assert block["pearson_zero_shot"]["ci_high"] == ours["pearson_zero_shot"]["ci_high"]
    assert (tmp_path / "export" / FOLDER / "no_revision_available" / "SICK-R.json").is_file()
    # read back by our own reader, the export is a published folder whose values are exactly ours
    code, out, err = run_cli(["check-published", str(plain_runs["stsb"]), "--published", str(tmp_path / "export"),
                              "--tolerance", "1e-15"], capsys)
    assert code == 0, err
    assert out.count("+0.000e+00") == 2


@pytest.mark.slow  # export takes a run of the model as it is: the real model
def test_export_refuses_what_it_cannot_write(plain_runs: dict[str, Path], tmp_path: Path, data_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_cli(["export", "--format", "mteb", str(plain_runs["stsb"]), str(plain_runs["stsb"]), "-o",
                               str(tmp_path / "twice")], capsys)
    assert "comes from both" in assert_one_line_error(code, err)
    assert not (tmp_path / "twice").exists()  # nothing half-written
    code, _out, err = run_cli(["export", "--format", "mteb", str(runs_of_hashing(tmp_path, data_dir)), "-o",
                               str(tmp_path / "hashing")], capsys)
    assert "not sentence-transformers/all-MiniLM-L6-v2 as it is (adapter hashing)" in assert_one_line_error(code, err)
    assert not (tmp_path / "hashing").exists()
    (tmp_path / "file").write_text("x")
    code, _out, err = run_cli(["export", "--format", "mteb", str(plain_runs["stsb"]), "-o", str(tmp_path / "file")],
                              capsys)
    assert_one_line_error(code, err, contains="not a folder")
    code, _out, err = run_cli([str(SPECS / "jsick.yaml"), "--data-dir", str(data_dir), "--output",
                               str(tmp_path / "j"), "--adapter", "hashing", "-q"], capsys)
    assert code == 0, err
    code, _out, err = run_cli(["export", "--format", "mteb", str(next((tmp_path / "j").glob("*/*/results.json"))),
                               "-o", str(tmp_path / "none")], capsys)
    assert "names an MTEB counterpart" in assert_one_line_error(code, err)


@pytest.mark.slow  # export takes a run of the model as it is: the real model (its vectors from the session cache)
def test_export_refuses_a_run_on_data_that_is_not_mteb(tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose split differs from the statistics its spec expects (a copy that is not MTEB's data) was
    exported under the task's own dataset revision, as if MTEB's (a new-user trial): refused, nothing written;
    check-published says it beside the numbers."""
    text = (SPECS / "stsb.yaml").read_text(encoding="utf-8")
    spec = tmp_path / "stsb.yaml"
    spec.write_text(text.replace("    source_split: test\n", "    source_split: test\n    expect:\n      source: "
                                 "MTEB's descriptive statistics\n      n: 1380\n", 1), encoding="utf-8")
    code, out, err = run_cli([str(spec), "--data-dir", str(data_dir), "--output", str(tmp_path / "runs"), "-q"],
                             capsys)
    assert code == 0 and "split test differs from MTEB's descriptive statistics: items: 1379, expected 1380" in err
    code, _out, err = run_cli(["export", "--format", "mteb", out.split()[-1], "-o", str(tmp_path / "mteb")], capsys)
    assert_one_line_error(code, err, contains="this run's data is not MTEB's (split test differs")
    assert not (tmp_path / "mteb").exists()
    code, shown, err = run_cli(["check-published", out.split()[-1], "--published", str(data_dir / "mteb-results")],
                               capsys)  # shown beside, and said
    assert code == 0, err
    assert ("stsb (sentence-transformers/all-MiniLM-L6-v2): its data is not the reference's (split test differs "
            "from") in shown  # which run: its spec and its label (a new-user trial read eight alike)


@pytest.mark.parametrize(("old", "new", "contains"), [
    ("score: cosine_pearson,", "score: cosine_pearson, spec_split: dev,", "'dev' is not an evaluated split"),
    ("score: cosine_pearson,", "score: cosine_spearman,", "already maps to MTEB STSBenchmark"),
    ("score: cosine_pearson,", "score: cosine_pearson, main: true,", "already the main score"),
    ("task: STSBenchmark, split: test, subset: default, score: cosine_pearson",
     "task: ../STSBenchmark, split: test, subset: default, score: cosine_pearson", "letters, digits"),
    ("score: cosine_pearson, languages: [eng-Latn]", "score: cosine_pearson, languages: [en]", "eng-Latn"),
    ("score: cosine_pearson,", "score: cosine_pearson, tasks: x,", "tasks"),
    ("split: test, subset: default, score: cosine_pearson", "splits: {dev: test}, subset: default, "
     "score: cosine_pearson", "'dev' is not an evaluated split"),
    ("split: test, subset: default, score: cosine_pearson", "split: test, splits: {test: test}, subset: default, "
     "score: cosine_pearson", "not both"),
])
def test_the_mteb_key_is_checked_strictly(tmp_path: Path, old: str, new: str, contains: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    text = (SPECS / "stsb.yaml").read_text()
    assert old in text
    spec = tmp_path / "stsb.yaml"
    spec.write_text(text.replace(old, new))
    code, _out, err = run_cli(["validate", str(spec)], capsys)
    line = assert_one_line_error(code, err, contains=f"{spec}:")
    assert "mteb" in line and contains in line


def test_a_suite_run_shows_published_beside(tmp_path: Path, data_dir: Path, published: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "suites" / "sts2.yaml"
    suite.parent.mkdir()
    stsb, biosses = (os.path.relpath(SPECS / name, suite.parent) for name in ("stsb.yaml", "biosses.yaml"))
    suite.write_text(f"id: sts2\ntitle: two\nversion: '1'\ndescription: d\nmembers:\n"
                     f"  - {{spec: {stsb}, metric: spearman_zero_shot}}\n"
                     f"  - {{spec: {biosses}, metric: spearman_zero_shot}}\n")
    code, out, err = run_cli([str(suite), "--data-dir", str(data_dir), "--output", str(tmp_path / "out"),
                              "--adapter", "hashing", "--published", str(published)], capsys)
    assert code == 0, err
    report = next((tmp_path / "out" / "suite+sts2").glob("*/suite.md")).read_text()
    assert "## Published (MTEB result files)" in report
    assert "| stsb test spearman_zero_shot |" in report.split("## Published")[1]
    assert "not computed (1 of 2 members published)" in report
    assert "no BIOSSES.json in" in report and str(tmp_path) not in report.split("## Published")[1]
    suite_json = json.loads(Path(out.strip().splitlines()[-1]).read_text())
    assert "published" not in json.dumps(suite_json)  # the suite's record holds our numbers only


def test_published_on_a_spec_run_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _out, err = run_cli([str(SPECS / "stsb.yaml"), "--published", str(tmp_path)], capsys)
    assert_one_line_error(code, err, contains="--published is for a suite run")




@pytest.mark.slow  # export takes a run of the model as it is: the real model
def test_export_writes_model_meta_from_our_provenance(plain_runs: dict[str, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """model_meta.json sits beside the task files (mteb's ResultCache layout); its fields are mteb's
    ModelMeta.to_dict keys, and each one we record equals provenance.model_meta (absent: null, never guessed)."""
    from specrun.mteb.export import model_meta_json
    from specrun.results import read_results

    code, out, err = run_cli(["export", "--format", "mteb", str(plain_runs["stsb"]), "-o", str(tmp_path / "e")], capsys)
    assert code == 0, err
    path = tmp_path / "e" / FOLDER / "no_revision_available" / "model_meta.json"
    assert str(path) in out
    written = json.loads(path.read_text())
    results = read_results(plain_runs["stsb"])
    meta, model = results.provenance.model_meta, results.provenance.model
    assert written["name"] == model.name and written["revision"] == model.revision
    assert written["embed_dim"] == meta.embed_dim
    for key in ("n_parameters", "max_tokens", "license", "training_datasets", "similarity_fn_name"):
        assert written[key] == getattr(meta, key)
    # a model whose card and weights state everything: each field as recorded, mteb's memory measure from bytes
    full = meta.model_copy(update={"n_parameters": 22713216, "max_tokens": 256, "weights_bytes": 90864192,
                                   "license": "apache-2.0", "languages": ["eng-Latn"], "base_model": ["nreimers/x"],
                                   "training_datasets": ["s2orc"], "similarity_fn_name": "dot"})
    stated = results.model_copy(update={"provenance": results.provenance.model_copy(update={"model_meta": full})})
    notes: list[str] = []
    doc = json.loads(model_meta_json(stated, notes))
    assert (doc["n_parameters"], doc["max_tokens"], doc["license"], doc["languages"], doc["adapted_from"],
            doc["training_datasets"], doc["similarity_fn_name"]) == (
        22713216, 256, "apache-2.0", ["eng-Latn"], "nreimers/x", ["s2orc"], "dot")
    assert doc["memory_usage_mb"] == round(90864192 / 1024**2) == 87 and not notes
    # `en` is not mteb's code and no script is guessed for it: null, and a note says so
    short = full.model_copy(update={"languages": ["en"]})
    doc = json.loads(model_meta_json(results.model_copy(update={"provenance": results.provenance.model_copy(
        update={"model_meta": short})}), notes))
    assert doc["languages"] is None and "not mteb's" in notes[0]
