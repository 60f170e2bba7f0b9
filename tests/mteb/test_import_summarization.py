"""`specrun import mteb` for Summarization tasks: MTEB's AbsTaskSummarization with its SummarizationEvaluator as a
`summarization` spec (cosine_spearman and cosine_pearson mapped, `expect` from MTEB's statistics of the summaries);
the deprecated evaluator of the first SummEval tasks refused by name; and an imported spec run end to end on a
hub-style snapshot with the hashing adapter, equal to scipy's correlations computed as MTEB's evaluator does on the
same vectors. mteb is never imported and the hub is never asked."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.core.types import Item
from specrun.mteb import catalogue
from specrun.mteb.import_summarization import summarization_refusal
from specrun.mteb.importer import coverage
from specrun.results.identity import differences
from specrun.results.statistics import item_statistics
from specrun.spec import load_spec
from specrun.spec.model import Expected
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.mteb.snapshots import hub_snapshot

WORDS = ["council", "budget", "vote", "city", "mayor", "team", "cup", "final", "goal", "rain", "storm", "week",
         "phone", "price", "launch", "market", "bank", "rate", "school", "teacher", "exam"]


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str], *tasks: str) -> dict[str, Path]:
    out_dir = tmp_path / "imported"
    code, out, err = run_cli(["import", "mteb", *tasks, "-o", str(out_dir)], capsys)
    assert code == 0, err
    return dict(zip(tasks, map(Path, out.split()), strict=True))


def test_the_active_summarization_tasks_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = ("SummEvalSummarization.v2", "SummEvalFrSummarization.v2")
    for name, path in imported(tmp_path, capsys, *names).items():
        task = catalogue.task(name)
        load_spec(path)
        spec = load_plain(path.read_text(encoding="utf-8"))
        (source,) = spec["sources"].values()
        assert (source["path"], source["revision"]) == (task.dataset.path, task.dataset.revision)
        assert source["columns"] == {"machine_summaries": "machine_summaries", "human_summaries": "human_summaries",
                                     "human_scores": "relevance"}
        assert [(m["metric"], m["mteb"]["score"], m["mteb"].get("main", False)) for m in spec["metrics"].values()] \
            == [("summary_spearman", "cosine_spearman", True), ("summary_pearson", "cosine_pearson", False)]
        stats = task.stats["test"]
        expect = spec["splits"]["test"]["expect"]
        assert expect["n"] == stats["num_samples"] == 100
        assert expect["fields"]["machine_summaries"] == {
            "unique": stats["machine_summaries_statistics"]["unique_texts"],
            "characters": stats["machine_summaries_statistics"]["total_text_length"]}
        assert "1,600 machine summaries, 1,548 distinct" in spec["card"]["caveats"] or name != names[0]
    tasks = [task for task in catalogue.active_text_tasks().values() if task.type == "Summarization"]
    assert coverage(tasks)["Summarization"] == {"tasks": 2, "imports": 2}


@pytest.mark.parametrize("task", ["SummEval", "SummEvalFr"])
def test_the_deprecated_evaluator_is_refused_by_name(task: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert_one_line_error(code, err, contains=f"{task}: evaluator DeprecatedSummarizationEvaluator")
    assert not (tmp_path / "imported").exists()


def test_what_of_the_abstask_the_kind_cannot_say() -> None:
    task = catalogue.task("SummEvalSummarization.v2")
    assert summarization_refusal(task) is None
    flat = task.model_copy(update={"attributes": {**task.attributes, "min_score": 5}})
    assert summarization_refusal(flat) == "score range min 5, max 5 (MTEB's scaling needs min < max)"
    own = task.model_copy(update={"attributes": {**task.attributes, "max_eval": 3}})
    assert summarization_refusal(own) == "class attribute(s) max_eval (the task's own, not the abstask's)"


def test_expected_characters_of_a_field_of_several_texts_per_item() -> None:
    """MTEB's statistics of the summaries count every summary; so does `expect` (not one text per item)."""
    items = [Item(id=f"s{i}", fields={"machine_summaries": ["ab", "cde", "f"][: i + 1]}) for i in range(3)]
    found = item_statistics(items, {"machine_summaries": "texts"}, evaluated=True)
    total = 2 + (2 + 3) + (2 + 3 + 1)
    right = Expected.model_validate({"source": "MTEB", "n": 3, "fields": {"machine_summaries": {
        "unique": 3, "characters": total}}})
    assert differences(right, found) == []
    wrong = right.model_copy(update={"fields": {"machine_summaries": right.fields["machine_summaries"].model_copy(
        update={"characters": total + 1})}})
    assert differences(wrong, found) == [f"machine_summaries characters: {total}, expected {total + 1}"]


def texts(count: int = 12, seed: int = 3) -> list[dict[str, object]]:
    """Per text: two human summaries, five machine summaries scored 1-5 (one text's scores all equal, which
    MTEB leaves out)."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        human = [" ".join(rng.sample(WORDS, 5)) for _ in range(2)]
        machine = [" ".join(human[0].split()[:k] + rng.sample(WORDS, 5 - k)) for k in (5, 4, 3, 1, 0)]
        relevance = [3.0] * 5 if index == 4 else [float(rng.randint(1, 5)) for _ in range(5)]
        rows.append({"text": f"article {index} " + " ".join(human), "human_summaries": human,
                     "machine_summaries": machine, "relevance": relevance})
    return rows


def snapshot(folder: Path, rows: list[dict[str, object]]) -> None:
    import pyarrow as pa

    hub_snapshot(folder, {"test": pa.Table.from_pylist(rows)})


def reference(rows: list[dict[str, object]]) -> dict[str, float]:
    """MTEB's SummarizationEvaluator, written plainly: best cosine to a human summary, scipy per text, the mean."""
    from scipy import stats

    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    spearman, pearson = [], []
    for row in rows:
        machine = np.asarray(adapter.encode_group(list(row["machine_summaries"]), 32), dtype=np.float64)
        human = np.asarray(adapter.encode_group(list(row["human_summaries"]), 32), dtype=np.float64)
        machine /= np.linalg.norm(machine, axis=1, keepdims=True)
        human /= np.linalg.norm(human, axis=1, keepdims=True)
        predicted = (machine @ human.T).max(axis=1)
        gold = np.asarray(row["relevance"])
        if len(set(gold)) == 1 or len(set(np.round(predicted, 12))) == 1:
            continue
        spearman.append(stats.spearmanr(gold, predicted).statistic)
        pearson.append(stats.pearsonr(gold, predicted).statistic)
    return {"cosine_spearman": float(np.mean(spearman)), "cosine_pearson": float(np.mean(pearson)),
            "kept": len(spearman)}


def test_an_imported_summarization_spec_runs_on_a_local_snapshot(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main

    spec = imported(tmp_path, capsys, "SummEvalSummarization.v2")["SummEvalSummarization.v2"]
    rows = texts()
    data = tmp_path / "data"
    snapshot(data / "summevalsummarization.v2", rows)
    assert main(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    expected = reference(rows)
    scores = results.scores["test"]
    assert scores["cosine_spearman"].value == pytest.approx(expected["cosine_spearman"], abs=1e-9)
    assert scores["cosine_pearson"].value == pytest.approx(expected["cosine_pearson"], abs=1e-9)
    assert scores["cosine_spearman"].n == expected["kept"] == len(rows) - 1
