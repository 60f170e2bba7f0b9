"""MTEB's results repository read as it is, on the slice in ../shared/data/mteb-results-slice (2,724 task files of
288 models, every layout: 1.11 and later, before 1.11, no version, `external/` folders; its PROVENANCE.md): every
file read or set aside with a reason naming it, never the whole board refused; the older layout converted as mteb
converts it; one revision per model by the stated rule; model_meta.json read beside each row. The expected counts
are computed here independently, with plain json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specrun.mteb.results import PublishedDir, PublishedIndex, read_task_file
from specrun.mteb.score_ref import MtebRef
from tests.conftest import SPECS, assert_one_line_error, run_cli

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
FOLDER = "sentence-transformers__all-MiniLM-L6-v2"
REVISION = "8b3219a92973c328a8e22fadcfa821b5dc75636a"
TASKS = ("BIOSSES", "Banking77Classification", "JSICK", "JSTS", "SICK-R", "STS12", "STS13", "STS14", "STS15",
         "STS16", "STSBenchmark")


@pytest.fixture(scope="module")
def slice_root(data_dir: Path) -> Path:
    return data_dir / "mteb-results-slice" / "results"


def plain_task_files(root: Path) -> dict[str, dict]:
    """Every task file of the slice (model folder/revision/Task.json -> its JSON), read with plain json."""
    return {"/".join(p.parts[-3:]): json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(root.glob("*/*/*.json")) if p.name != "model_meta.json"}


def test_the_index_names_every_file_and_opens_none(slice_root: Path) -> None:
    index = PublishedIndex.build(slice_root)
    expected = {task: len(list(slice_root.glob(f"*/*/{task}.json"))) for task in TASKS}
    assert {task: len(found) for task, found in index.tasks.items()} == expected
    assert sum(expected.values()) == 2724  # PROVENANCE.md's count
    assert len(index.meta) == len(list(slice_root.glob("*/*/model_meta.json"))) == 378
    assert index.set_aside == []
    assert sum(c.revision == "external" for found in index.tasks.values() for c in found) == len(
        list(slice_root.glob("*/external/*.json"))) - len(list(slice_root.glob("*/external/model_meta.json")))
    # the repository's root (what the docs name, and a clone gives) is read as its results/ folder, by every
    # command that reads one (leaderboard, check-published, compare: all through PublishedDir)
    whole = PublishedDir(slice_root.parent).index
    assert (whole.root, whole.n_files, whole.tasks.keys()) == (slice_root, index.n_files, index.tasks.keys())


def test_a_clone_root_with_python_files_is_still_read_as_its_results_folder(slice_root: Path,
                                                                          tmp_path: Path) -> None:
    """The results repository's root holds `__init__.py` and scripts, and Python leaves `__pycache__`: neither is
    a model's folder (a review found such a root read as the results folder itself, 0 files)."""
    clone = tmp_path / "clone"
    shutil.copytree(slice_root / FOLDER, clone / "results" / FOLDER)
    (clone / "__init__.py").write_text("", encoding="utf-8")
    (clone / "__pycache__").mkdir()
    index = PublishedDir(clone).index
    assert index.root == clone / "results"
    assert index.n_files == PublishedIndex.build(clone / "results").n_files == len(
        list((clone / "results").glob("*/*/*.json"))) > 0


@pytest.mark.parametrize("layout", ["empty", "a file", "a folder of other things", "results/ of other things"])
def test_a_folder_without_model_folders_is_refused_not_compared_to_nothing(
        layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped --published (the cache, the data folder's parent) compared nothing and `check-published
    --tolerance 0` passed (a new-user trial): a folder holding no <org>__<model> folder is refused in one line."""
    folder = tmp_path / "published"
    folder.mkdir()
    if layout == "a file":
        (folder / "a__b.json").write_text("{}", encoding="utf-8")
    elif layout == "a folder of other things":
        (folder / "biosses" / "x").mkdir(parents=True)
    elif layout == "results/ of other things":
        (folder / "results" / "__pycache__").mkdir(parents=True)
    code, out, err = run_cli(["check-published", str(SPECS / "biosses.yaml"), "--published", str(folder),
                              "--tolerance", "0"], capsys)
    assert_one_line_error(code, err, contains="holds no <org>__<model> folders")
    assert out == ""


def test_an_older_file_is_converted_as_mteb_converts_it(slice_root: Path) -> None:
    """mteb/results/task_result.py `_convert_from_before_v1_11_0`: cos_sim.spearman -> cosine_spearman, the main
    score the task's (cosine_spearman for STS, accuracy for Banking77), the subset `default`, time summed."""
    path = slice_root / "sentence-transformers__gtr-t5-base" / "no_revision_available" / "STS13.json"
    raw = json.loads(path.read_text())
    assert "scores" not in raw and raw["mteb_version"] == "0.0.2"
    task_file = read_task_file(path)
    (entry,) = task_file.scores["test"]
    assert task_file.layout.startswith("before 1.11") and task_file.task_name == raw["mteb_dataset_name"]
    assert entry.hf_subset == "default" and entry.languages == ["eng-Latn"]
    assert entry.model_extra["cosine_spearman"] == raw["test"]["cos_sim"]["spearman"] == entry.main_score
    assert entry.model_extra["euclidean_pearson"] == raw["test"]["euclidean"]["pearson"]
    assert task_file.evaluation_time == raw["test"]["evaluation_time"]
    assert task_file.dataset_revision == raw["dataset_revision"]
    banking = next(p for p in sorted(slice_root.glob("*/*/Banking77Classification.json"))
                   if "scores" not in json.loads(p.read_text()))
    (entry,) = read_task_file(banking).scores["test"]
    assert entry.main_score == json.loads(banking.read_text())["test"]["accuracy"]


def test_every_file_is_read_or_set_aside_with_its_reason(slice_root: Path) -> None:
    """All 2,724 files, each read twice (plain json and the reader): about 1 s."""
    plain = plain_task_files(slice_root)
    with_scores = sum("scores" in data for data in plain.values())
    assert (with_scores, len(plain) - with_scores) == (2596, 128)  # PROVENANCE.md's layouts
    read = {name: read_task_file(slice_root / name) for name in plain}
    assert sum(task_file.layout == "1.11 and later" for task_file in read.values()) == with_scores
    for name, data in plain.items():  # each older file: each old score under its new name, main score the task's
        if "scores" not in data:
            (entry,) = read[name].scores["test"]
            main = "accuracy" if "Banking" in name else "cosine_spearman"
            assert entry.main_score == (data["test"]["accuracy"] if "Banking" in name else
                                        data["test"]["cos_sim"]["spearman"]) == entry.model_extra[main], name
            assert entry.languages == ["eng-Latn"] and entry.hf_subset == "default"
    published = PublishedDir(slice_root)
    for task in TASKS:
        score = "accuracy" if task.startswith("Banking") else "cosine_spearman"
        split = "validation" if task == "JSTS" else "test"
        found = published.every_model(MtebRef(task=task, split=split, score=score))
        assert found.n_files == sum(name.endswith(f"/{task}.json") for name in plain)
        assert len(found.values) + len(found.set_aside) == found.n_files  # one revision per model holds a task
        for reason in found.set_aside:  # each names its file by model folder/revision/file
            assert f"/{task}.json: " in reason and str(slice_root) not in reason


@pytest.mark.slow  # the whole catalogue: 2 s and 400 MB
def test_the_task_facts_are_the_catalogues() -> None:
    from specrun.mteb import catalogue
    from specrun.mteb.task_facts import facts_from_catalogue, load_facts

    assert load_facts() == facts_from_catalogue(catalogue.load())


def test_minilm_published_rows_equal_the_reference_files(slice_root: Path, data_dir: Path) -> None:
    published = PublishedDir(slice_root)
    for task in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICK-R"):
        reference = json.loads((data_dir / "mteb-results" / FOLDER / REVISION / f"{task}.json").read_text())
        (entry,) = reference["scores"]["test"]
        for score in ("cosine_spearman", "cosine_pearson"):
            found = published.find(MODEL, REVISION, MtebRef(task=task, split="test", score=score))
            assert found.value is not None and found.value.value == entry[score], task


def write(root: Path, model: str, revision: str, task: str, data: dict) -> Path:
    path = root / model / revision / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_one_revision_per_model_by_the_rule(slice_root: Path, tmp_path: Path) -> None:
    """The dataset revision MTEB expects first, then the newest mteb version; external is a revision, flagged."""
    source = json.loads((slice_root / FOLDER / REVISION / "STSBenchmark.json").read_text())
    expected = source["dataset_revision"]
    for revision, version, dataset, value in (("a" * 40, "1.12.75", expected, 0.81), ("b" * 40, "1.14.0", "old", 0.7),
                                              ("c" * 40, "1.13.0", expected, 0.82), ("external", None, expected, 0.9)):
        data = json.loads(json.dumps(source))
        data.update(mteb_version=version, dataset_revision=dataset)
        data["scores"]["test"][0]["cosine_spearman"] = value
        write(tmp_path, FOLDER, revision, "STSBenchmark", data)
    found = PublishedDir(tmp_path).every_model(MtebRef(task="STSBenchmark", split="test", score="cosine_spearman"))
    (row,) = found.values
    assert (row.revision, row.value) == ("c" * 40, 0.82)
    assert "of 4 revisions" in row.chosen and "newest mteb version (1.13.0)" in row.chosen
    assert "values span 0.7000..0.9000" in row.chosen
    shutil.rmtree(tmp_path / FOLDER / ("c" * 40))
    shutil.rmtree(tmp_path / FOLDER / ("a" * 40))
    (row,) = PublishedDir(tmp_path).every_model(MtebRef(task="STSBenchmark", split="test",
                                                        score="cosine_spearman")).values
    assert row.revision == "external" and "external: the repository does not say" in row.chosen


def test_a_bad_file_or_model_meta_is_set_aside_never_fatal(slice_root: Path, tmp_path: Path) -> None:
    shutil.copytree(slice_root / FOLDER, tmp_path / FOLDER)
    (tmp_path / "x__broken" / "r1").mkdir(parents=True)
    (tmp_path / "x__broken" / "r1" / "STSBenchmark.json").write_text("{not json")
    write(tmp_path, "x__nometa", "r1", "STSBenchmark", {"mteb_version": "1.12.0", "task_name": "STSBenchmark"})
    (tmp_path / "x__nometa" / "r1" / "model_meta.json").write_text('{"n_parameters": -5}')
    found = PublishedDir(tmp_path).every_model(MtebRef(task="STSBenchmark", split="test", score="cosine_spearman"))
    assert [v.model for v in found.values] == [MODEL]
    meta = found.values[0].meta
    assert meta is not None and (meta.n_parameters, meta.embed_dim, meta.max_tokens) == (22700000, 384, 256)
    assert meta.license == "apache-2.0" and meta.open_weights is True and meta.release_date == "2021-08-30"
    broken, no_revision = sorted(found.set_aside)
    assert broken.startswith("x__broken/r1/STSBenchmark.json: not an MTEB result file: not JSON (Expecting")
    assert no_revision == "x__nometa/r1/STSBenchmark.json: dataset_revision: not an MTEB result file: Field required"
    write(tmp_path, "x__nometa", "r1", "STSBenchmark", json.loads(
        (slice_root / FOLDER / REVISION / "STSBenchmark.json").read_text()))
    found = PublishedDir(tmp_path).every_model(MtebRef(task="STSBenchmark", split="test", score="cosine_spearman"))
    row = next(v for v in found.values if v.model == "x/nometa")
    assert row.meta is None and any("x__nometa/r1/model_meta.json: n_parameters:" in r for r in found.set_aside)


@pytest.mark.slow  # a hashing run of stsb (~4 s) and a board reading 2 x 274 files
def test_the_leaderboard_lists_the_slice_never_refusing(slice_root: Path, data_dir: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_cli([str(SPECS / "stsb.yaml"), "--data-dir", str(data_dir), "--output",
                               str(tmp_path / "runs"), "--adapter", "hashing", "-q"], capsys)
    assert code == 0, err
    code, _out, err = run_cli(["leaderboard", str(tmp_path / "runs"), "-o", str(tmp_path / "board"), "--published",
                               str(slice_root)], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    head = next(b for b in board["specs"][0]["boards"] if b["metric"] == "spearman_zero_shot")
    assert len(head["published"]) == 274 and len(head["rows"]) == 1  # every file of the task: one row each
    minilm = next(r for r in head["published"] if r["model"] == MODEL)
    assert minilm["score"] == 0.8203247283076371 and minilm["revision"] == REVISION
    assert ("stsb test spearman_zero_shot: published: 274 files, 274 models listed (14 converted from the layout "
            "before 1.11, 94 from external/ folders), 0 set aside") in err
    assert ("stsb test pearson_zero_shot: published, set aside: openai__text-embedding-3-small/1/STSBenchmark.json"
            in err)


@pytest.mark.slow  # five fresh processes
def test_the_bench_reports_every_phase(slice_root: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    done = subprocess.run([sys.executable, str(ROOT / "bench" / "published_slice.py"), str(slice_root)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    phases = [line.split()[0] for line in done.stdout.splitlines()[2:]]
    assert phases == ["index", "facts", "task", "every-file"]
    assert "274 files, 274 rows (14 converted), 262 with model_meta, 0 set aside" in done.stdout
