"""`specrun import mteb` for Retrieval tasks on MTEB's hub retrieval layout: a `corpus_retrieval` spec whose
`hf_dataset` source reads a local copy of the repo with `mteb_retrieval`, MTEB's scores mapped; what the protocol
does not do yet refused by name; MTEB's ignore_identical_ids imported as the protocol's option; and an imported spec
run end to end on a local snapshot with the hashing adapter, equal to pytrec_eval on the same vectors. mteb is never
imported and the hub is never asked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.data import DATA_DIR_ENV
from specrun.mteb import catalogue
from specrun.mteb.import_retrieval import retrieval_refusal
from specrun.mteb.importer import coverage, refusals
from specrun.spec import load_spec
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.protocols.test_corpus_retrieval import GRADED, independent, texts_in_order
from tests.readers.test_mteb_retrieval_run import make_mteb_repo

ENG_V2 = ["SCIDOCS", "TRECCOVID", "CQADupstackGamingRetrieval"]  # MTEB(eng, v2) members without a hook


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str], *tasks: str) -> dict[str, Path]:
    out_dir = tmp_path / "imported"
    code, out, err = run_cli(["import", "mteb", *tasks, "-o", str(out_dir)], capsys)
    assert code == 0, err
    return dict(zip(tasks, map(Path, out.split()), strict=True))


def test_retrieval_tasks_import_as_corpus_retrieval_specs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for task_name, path in imported(tmp_path, capsys, "SciFact", *ENG_V2).items():
        task = catalogue.task(task_name)
        spec = load_plain(path.read_text(encoding="utf-8"))
        load_spec(path)  # valid as written: the repo's commit pins it, as a hub dataset read by `datasets`
        (source,) = spec["sources"].values()
        assert (source["path"], source["revision"]) == (task.dataset.path, task.dataset.revision)
        assert source["mirror"] == {"format": "mteb_retrieval", "files": {"test": "."},
                                    "options": {"instructions": True}}
        assert source["columns"] == {"query": "query", "qrels": "qrels", "corpus": "corpus"}
        assert spec["protocols"]["search"]["kind"] == "corpus_retrieval"
        assert spec["protocols"]["search"]["options"] == {"top_k": 100}
        main = spec["metrics"]["ndcg_at_10"]
        assert main["metric"] == "ndcg_cut_10" and main["mteb"] == {
            "task": task_name, "split": "test", "subset": "default", "score": "ndcg_at_10", "main": True,
            "languages": ["eng-Latn"]}
        assert list(spec["metrics"]) == ["ndcg_at_10", "map_at_10", "mrr_at_10", "recall_at_100"]
    scifact = tmp_path / "imported" / "scifact.yaml"
    code, _out, err = run_cli(["validate", str(scifact)], capsys)
    assert code == 0 and err.strip() == f"{scifact}: ok (scifact)", err
    # a run reads a copy of the repo only, and only once a fingerprint accepts it
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    code, _out, err = run_cli([str(scifact), "--adapter", "hashing", "--no-cache", "--output", str(tmp_path / "o")],
                              capsys)
    assert_one_line_error(code, err, contains="reads a copy of the dataset repo mteb/scifact from a local folder only")
    assert "scifact.yaml:" in err and "sources.scifact.mirror" in err
    (tmp_path / "data" / "scifact").mkdir(parents=True)
    code, _out, err = run_cli([str(scifact), "--adapter", "hashing", "--no-cache", "--data-dir", str(tmp_path / "data"),
                               "--output", str(tmp_path / "o")], capsys)
    assert_one_line_error(code, err, contains="has no fingerprint, and a local copy of the hub dataset")
    assert "`specrun fingerprint SPEC --data-dir DIR --write` to accept this copy" in err
    assert not (tmp_path / "o").exists()


def test_a_named_subset_reads_its_prefixed_configs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = catalogue.task("TurkishRAGEvalRetrieval")
    assert task.hf_subsets != ["default"] and not refusals(task)
    spec = load_plain(imported(tmp_path, capsys, task.name)[task.name].read_text(encoding="utf-8"))
    (source,) = spec["sources"].values()
    assert source["mirror"]["options"] == {"subset": task.hf_subsets[0], "instructions": True}


def test_what_corpus_retrieval_lacks_is_refused_by_name(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    task = catalogue.task("BrightBiologyRetrieval")
    assert refusals(task) == ["overrides load_data (BrightBiologyRetrieval): custom Python that YAML cannot say"]
    code, _out, err = run_cli(["import", "mteb", task.name, "-o", str(tmp_path / "x")], capsys)
    assert_one_line_error(code, err, contains="BrightBiologyRetrieval: overrides load_data")
    assert not (tmp_path / "x").exists()


def test_ignore_identical_ids_imports_with_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ArguAna's class sets MTEB's ignore_identical_ids: its spec asks corpus_retrieval for the same; a task
    without it gets no such option; a score at MTEB's search depth (where MTEB counts one fewer) is refused."""
    for name in ("ArguAna", "FiQA2018"):
        assert catalogue.task(name).attributes["ignore_identical_ids"] and not refusals(catalogue.task(name))
    paths = imported(tmp_path, capsys, "ArguAna", "FiQA2018", "SciFact")
    for name, expected in (("ArguAna", True), ("FiQA2018", True), ("SciFact", None)):
        load_spec(paths[name])
        options = load_plain(paths[name].read_text(encoding="utf-8"))["protocols"]["search"]["options"]
        assert options.get("ignore_identical_ids") is expected and options["top_k"] == 100, name
    deep = catalogue.task("ArguAna").model_copy(update={"main_score": "recall_at_1000"})
    assert retrieval_refusal(deep) and retrieval_refusal(deep).startswith("ignore_identical_ids with a score at")


def test_coverage_of_the_active_retrieval_tasks() -> None:
    tasks = [task for task in catalogue.active_text_tasks().values() if task.type == "Retrieval"]
    counts = coverage(tasks)["Retrieval"]
    # 244 before ignore_identical_ids imported, 293 before several hf_subsets and top_ranked candidates, 330 before
    # a task_specific_scores that only adds capped recall
    assert (counts["tasks"], counts["imports"]) == (456, 359)
    assert "ignore_identical_ids" not in counts and "top_ranked candidates" not in counts


def test_an_imported_spec_runs_on_a_local_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SciFact's imported spec, its data replaced by the graded fixture in MTEB's layout at <data>/scifact/."""
    from specrun.cli import main
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    spec = imported(tmp_path, capsys, "SciFact")["SciFact"]
    data = tmp_path / "data"
    make_mteb_repo(data).rename(data / "scifact")
    assert main(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    vectors = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts_in_order(), 32)
    reference = independent(np.asarray(vectors), 100)
    for metric in ("ndcg_at_10", "map_at_10", "mrr_at_10"):
        assert results.scores["test"][metric].value == pytest.approx(reference[metric], abs=1e-9), metric
    assert results.scores["test"]["recall_at_100"].value == 1.0  # 17 documents: every relevant one is found
    assert results.scores["test"]["ndcg_at_10"].n == len(GRADED)


def test_a_hook_that_only_adds_capped_recall_imports_and_the_card_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """LMEB's tasks override task_specific_scores only to add capped recall (R_cap_at_k) beside MTEB's usual
    scores, which it leaves as they are: they import, their card says what is left out; a hook that calls anything
    else (NevIR's paired accuracy, or the same hook calling one more name) is still Python of the task's own."""
    task = catalogue.task("ConvoMem")
    assert set(task.hook_calls["task_specific_scores"]) == {"recall_cap", "_average_optional", "items"}
    assert not refusals(task)
    spec = load_plain(imported(tmp_path, capsys, "ConvoMem")["ConvoMem"].read_text(encoding="utf-8"))
    assert "R_cap_at_k" in spec["card"]["caveats"] and spec["metrics"]["ndcg_at_10"]["mteb"]["main"] is True
    more = task.model_copy(update={"hook_calls": {"task_specific_scores": [*task.hook_calls["task_specific_scores"],
                                                                            "open"]}})
    assert refusals(more)[0].startswith("overrides task_specific_scores (ConvoMem): custom Python")
    assert refusals(catalogue.task("NevIR"))[-1].startswith("overrides task_specific_scores (NevIR)")
