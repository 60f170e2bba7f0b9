"""`specrun import mteb` of MTEB's BitextMining tasks: AbsTaskBitextMining (each sentence1 matched to its nearest
sentence2 by the model's similarity, F1/precision/recall weighted by support and accuracy over rows) as a
`bitext_mining` spec; what the kind cannot say refused by name. End to end on hub-style snapshots with the hashing
adapter: a renamed pair of columns, and a fast-loading subset read by its `lang`. Parity with MTEB's own Tatoeba
class and the real model: bench/mteb_parity_bitext_import.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.import_bitext_mining import bitext_refusal
from specrun.mteb.import_subset import restricted
from specrun.mteb.importer import coverage, spec_text
from tests.conftest import assert_one_line_error, run_cli
from tests.mteb.snapshots import hub_snapshot

SENTENCES = [f"sentence number {n} about {topic}" for n, topic in
             enumerate(["cats", "rain", "trains", "bread", "rivers", "music", "chess", "snow", "tea", "maps"] * 3)]


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], task: str) -> tuple[Path, dict[str, Any]]:
    code, out, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    path = Path(out.strip())
    return path, load_plain(path.read_text(encoding="utf-8"))


def _snapshot(folder: Path, columns: dict[str, list[str]]) -> None:
    """A hub dataset as `datasets` reads it offline: README `configs:` and one test parquet."""
    hub_snapshot(folder, {"test": columns})


def _run(path: Path, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(data), "--write"], capsys)
    assert code == 0, err
    code, out, err = run_cli([str(path), "--data-dir", str(data), "--adapter", "hashing",
                              "--output", str(tmp_path / "runs"), "-q"], capsys)
    assert code == 0, err
    return json.loads(Path(out.strip()).read_text(encoding="utf-8"))


def test_a_plain_task_imports_with_mtebs_scores_columns_and_statistics(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path, spec = _import(tmp_path, capsys, "BornholmBitextMining")
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert code == 0 and ": ok (" in out + err, err
    (protocol,) = spec["protocols"].values()
    assert (protocol["kind"], protocol["similarity"]) == ("bitext_mining", "model")
    assert {name: (m["metric"], m["mteb"]["score"], m["mteb"].get("main", False))
            for name, m in spec["metrics"].items()} == {
        "f1": ("f1_weighted", "f1", True), "accuracy": ("accuracy", "accuracy", False),
        "precision": ("precision_weighted", "precision", False), "recall": ("recall_weighted", "recall", False)}
    task = catalogue.task("BornholmBitextMining")
    (source,) = spec["sources"].values()
    assert (source["path"], source["revision"], source["columns"]) == \
        (task.dataset.path, task.dataset.revision, {"source": "sentence1", "target": "sentence2"})
    stats = task.stats["test"]
    assert spec["splits"]["test"]["expect"]["n"] == stats["num_samples"] == 500
    assert spec["splits"]["test"]["expect"]["fields"]["target"] == {
        "unique": stats["sentence2_statistics"]["unique_texts"],
        "characters": stats["sentence2_statistics"]["total_text_length"]}


def test_renamed_columns_are_read_as_the_hub_names_them_and_mined_end_to_end(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SAMSumFa's dataset_transform renames text -> sentence1, summary -> sentence2: the spec reads text and
    summary. Each summary is its own text but for rows 0 and 1, swapped: exactly those two are mined wrong."""
    path, spec = _import(tmp_path, capsys, "SAMSumFa")
    (source,) = spec["sources"].values()
    assert source["columns"] == {"source": "text", "target": "summary"}
    summaries = [SENTENCES[1], SENTENCES[0], *SENTENCES[2:]]
    _snapshot(tmp_path / "data" / "samsumfa", {"text": SENTENCES, "summary": summaries})
    scores = _run(path, tmp_path / "data", tmp_path, capsys)["scores"]["test"]
    assert scores["accuracy"]["n"] == len(SENTENCES) == 30
    assert scores["accuracy"]["value"] == pytest.approx(28 / 30)
    assert scores["recall"]["value"] == pytest.approx(28 / 30)  # weighted recall is accuracy
    assert scores["f1"]["value"] == pytest.approx(28 / 30)  # rows 0 and 1: F1 0 each, the others 1


def test_a_fast_loading_subset_reads_its_own_rows_by_lang(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Tatoeba restricted to deu-eng (as a benchmark taking one subset gets it): MTEB's fast_load groups the
    default config by `lang`; the spec keeps the rows `where: {lang: deu-eng}` and no others."""
    task = catalogue.task("Tatoeba")
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    path = spec_dir / "tatoeba.yaml"
    path.write_text(spec_text(restricted(task, "deu-eng"), "2.26.24"), encoding="utf-8")
    spec = load_plain(path.read_text(encoding="utf-8"))
    assert spec["splits"]["test"]["where"] == {"lang": "deu-eng"}
    assert "config" not in spec["sources"]["tatoeba"]
    assert {m["mteb"]["subset"] for m in spec["metrics"].values()} == {"deu-eng"}
    others = [f"une phrase {n}" for n in range(12)]  # fra-eng rows: never mined, whatever they hold
    _snapshot(tmp_path / "data" / "tatoeba", {"sentence1": SENTENCES + others, "sentence2": SENTENCES + others[::-1],
                                              "lang": ["deu-eng"] * 30 + ["fra-eng"] * 12})
    results = _run(path, tmp_path / "data", tmp_path, capsys)
    assert results["scores"]["test"]["f1"]["n"] == 30
    assert results["scores"]["test"]["f1"]["value"] == pytest.approx(1.0)


@pytest.mark.parametrize(("task", "reason"), [
    ("PubChemSMILESBitextMining", "a dataset_transform renaming columns by a computed mapping (COL_MAPPING[subset])"),
    ("RomaTalesBitextMining", "overrides load_data"),
    ("WebFAQBitextMiningQAs", "a custom dataset_transform")])
def test_a_bitext_task_the_kind_cannot_say_is_refused_by_name(
        task: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert_one_line_error(code, err, contains=f"{task}: {reason}")
    assert not (tmp_path / "imported").exists()


def test_language_pairs_as_columns_of_one_split_are_refused_by_name() -> None:
    """parallel_subsets: MTEB scores every pair from the same rows' language columns (these tasks also override
    load_data, refused first on the command line)."""
    reason = bitext_refusal(catalogue.task("IN22ConvBitextMining"))
    assert reason is not None and reason.startswith("parallel_subsets (")


def test_the_active_bitext_mining_tasks_that_import() -> None:
    tasks = [task for task in catalogue.load().tasks.values() if task.type == "BitextMining" and task.is_active_text]
    found = coverage(tasks)["BitextMining"]
    assert (found["tasks"], found["imports"]) == (len(tasks), 20) == (31, 20)
    assert found["overrides load_data"] == 7
