"""`specrun import mteb` for Reranking tasks (and Retrieval tasks with top_ranked): MTEB 2.x's AbsTaskRetrieval on
the hub retrieval layout with a `top_ranked` config, imported as a `corpus_reranking` spec whose source
`mteb_retrieval` reads with option `candidates`; what it cannot say refused by name; and an imported spec run end
to end on a local hub snapshot (pyarrow parquet, README configs) with the hashing adapter, equal to pytrec_eval
(and MTEB's own MRR) on the same vectors. mteb is never imported and the hub is never asked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.import_reranking import reranking_refusal
from specrun.mteb.importer import coverage, refusals
from specrun.readers.mteb_retrieval import read_mteb_retrieval
from specrun.spec import load_spec
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.readers.test_mteb_retrieval import Layout, write

DOCS = {"d0": "How do I upgrade ubuntu to the newest release?", "d1": "Upgrading ubuntu from the command line",
        "d2": "My wifi stops working after suspend", "d3": "Install a deb package with dpkg",
        "d4": "Sound does not work on my laptop", "d5": "Install a deb package with dpkg",  # d3's text: a tie
        "d6": "How to change the default terminal font", "d7": "Grub does not show after installing windows",
        "d8": "Mount an external drive automatically", "d9": "Wireless network drops after resume"}
QUERIES = {"q1": "upgrade to a new ubuntu version", "q2": "wifi disconnects when the laptop wakes up",
           "q3": "how to install a .deb file", "q4": "no audio output", "q5": "a query nobody judged",
           "q6": "mount a usb disk at boot"}
QRELS = {"q1": {"d0": 2, "d1": 1, "d6": 0, "d7": 1},  # d7: relevant, not a candidate (it counts in the ideal)
         "q2": {"d2": 1, "d9": 2, "d4": 0},
         "q3": {"d3": 0, "d5": 1, "d8": 0},  # d3 and d5 tie: pytrec_eval ranks d5 (the larger id) first
         "q4": {"d4": 0, "d2": 0},  # no relevant document: 0 on every measure, counted
         "q6": {"d8": 1}}  # no top_ranked row: MTEB's run for it is empty, 0 on every measure
TOP_RANKED = {"q1": ["d6", "d1", "d0", "d2", "d1"], "q2": ["d4", "d9", "d2", "d6"], "q3": ["d3", "d8", "d5"],
              "q4": ["d2", "d4"], "q5": ["d0", "d1"]}
REVISION = "c5691e3c48741d5f83b5cc8e630653d7a8cfc048"


def make_snapshot(root: Path, top_ranked: bool = True) -> Path:
    """MTEB's layout of a Reranking repo: corpus, queries, default (qrels) and top_ranked configs, parquet."""
    parts = {"corpus": [{"_id": d, "title": "", "text": t} for d, t in DOCS.items()],
             "queries": [{"_id": q, "text": t} for q, t in QUERIES.items()],
             "default": [{"query-id": q, "corpus-id": d, "score": s} for q, judged in QRELS.items()
                         for d, s in judged.items()],
             "top_ranked": [{"query-id": q, "corpus-ids": ids} for q, ids in TOP_RANKED.items()]}
    if not top_ranked:
        del parts["top_ranked"]
    lines = ["---", "configs:"]
    for name, rows in parts.items():
        write(root / name / "test.parquet", rows, row_group_size=3)
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: {name}/test.parquet"]
    (root / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")
    return root


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str], *tasks: str) -> dict[str, Path]:
    code, out, err = run_cli(["import", "mteb", *tasks, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    return dict(zip(tasks, map(Path, out.split()), strict=True))


def test_reranking_tasks_import_as_corpus_reranking_specs(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    paths = imported(tmp_path, capsys, "AskUbuntuDupQuestions", "JQaRARerankingLite", "OBLIQBenchMathRetrieval")
    for name, path in paths.items():
        task, spec = catalogue.task(name), load_plain(path.read_text(encoding="utf-8"))
        load_spec(path)
        (source,) = spec["sources"].values()
        subset = {"subset": task.hf_subsets[0]} if task.hf_subsets != ["default"] else {}
        assert source["mirror"] == {"format": "mteb_retrieval", "files": {"test": "."},
                                    "options": {**subset, "candidates": True, "instructions": True}}
        assert source["columns"]["candidates"] == "candidates"
        (protocol,) = spec["protocols"].values()
        assert protocol["kind"] == "corpus_reranking"
        main = next(metric for metric in spec["metrics"].values() if metric["mteb"].get("main"))
        assert main["mteb"]["score"] == task.main_score
    rerank = load_plain(paths["AskUbuntuDupQuestions"].read_text(encoding="utf-8"))
    assert list(rerank["metrics"]) == ["map_at_1000", "mrr_at_10", "ndcg_at_10"]
    assert rerank["protocols"]["rerank"]["options"] == {"top_k": 1000}
    lite = load_plain(paths["JQaRARerankingLite"].read_text(encoding="utf-8"))
    assert list(lite["metrics"]) == ["ndcg_at_10", "map_at_1000", "mrr_at_10"]
    search = load_plain(paths["OBLIQBenchMathRetrieval"].read_text(encoding="utf-8"))
    assert search["protocols"]["search"]["options"] == {"top_k": 100}  # a Retrieval task's companions


def test_what_the_reranking_form_cannot_say_is_refused_by_name(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    nevir = refusals(catalogue.task("NevIR"))  # MindSmallReranking imports now (test_import_subqueries)
    assert any(reason.startswith("overrides task_specific_scores") for reason in nevir), nevir
    assert any("main score paired_accuracy" in reason for reason in nevir), nevir
    assert refusals(catalogue.task("CodeRAGOnlineTutorials"))[0].startswith("overrides load_data")
    bare = catalogue.task("AskUbuntuDupQuestions").model_copy(update={"stats": None})
    assert reranking_refusal(bare) == ("no top_ranked candidates in MTEB's statistics (its reranking form could "
                                       "not be checked)")
    own = catalogue.task("AskUbuntuDupQuestions").model_copy(
        update={"attributes": {**catalogue.task("AskUbuntuDupQuestions").attributes, "ignore_identical_ids": True}})
    assert reranking_refusal(own) == "ignore_identical_ids with top_ranked candidates (not in corpus_reranking yet)"
    code, _out, err = run_cli(["import", "mteb", "NevIR", "-o", str(tmp_path / "x")], capsys)
    assert_one_line_error(code, err, contains="overrides task_specific_scores")
    assert not (tmp_path / "x").exists()


def test_coverage_of_the_active_reranking_tasks() -> None:
    tasks = [task for task in catalogue.active_text_tasks().values() if task.type == "Reranking"]
    counts = coverage(tasks)["Reranking"]
    assert (counts["tasks"], counts["imports"]) == (50, 44)
    assert counts["overrides load_data"] == 5 and counts["main score"] == 2


def test_the_reader_joins_top_ranked_only_when_asked(tmp_path: Path) -> None:
    repo = make_snapshot(tmp_path / "repo")
    with pytest.raises(DataError, match="config 'top_ranked' holds per-query candidates"):
        read_mteb_retrieval(repo, Layout(), "test")
    rows = read_mteb_retrieval(repo, Layout(candidates=True), "test")
    assert [row["query_id"] for row in rows] == ["q1", "q2", "q3", "q4", "q6"]  # q5: no qrels
    assert rows[0]["candidates"] == ["d6", "d1", "d0", "d2"]  # d1 once, as MTEB's run holds it
    assert rows[-1]["candidates"] == []
    with pytest.raises(DataError, match="no config 'top_ranked'"):
        read_mteb_retrieval(make_snapshot(tmp_path / "bare", top_ranked=False), Layout(candidates=True), "test")
    write(repo / "top_ranked" / "test.parquet", [{"query-id": "q1", "corpus-ids": ["d0", "d404"]}])
    with pytest.raises(DataError, match="candidate 'd404' is not in the corpus") as caught:
        read_mteb_retrieval(repo, Layout(candidates=True), "test")
    assert "\n" not in str(caught.value)


def reference(vectors: dict[str, np.ndarray]) -> dict[str, float]:
    """pytrec_eval on MTEB's run (each query's candidates scored by float64 cosine; none for q6) and MTEB's own
    MRR (a sort by score then id, descending), averaged over every query with qrels."""
    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.round(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), 12))

    run = {q: {d: cosine(vectors[QUERIES[q]], vectors[DOCS[d]]) for d in TOP_RANKED.get(q, [])} for q in QRELS}
    scores = pytrec_eval.RelevanceEvaluator(QRELS, {"map_cut.1000", "ndcg_cut.10"}).evaluate(run)
    mrr = []
    for q, found in run.items():
        ranked = [d for d, _ in sorted(found.items(), key=lambda pair: (pair[1], pair[0]), reverse=True)][:10]
        mrr.append(next((1 / (r + 1) for r, d in enumerate(ranked) if QRELS[q].get(d, 0) > 0), 0.0))
    assert set(scores) == set(QRELS)  # q4 and q6 are scored (0) and averaged in
    return {"map_at_1000": float(np.mean([scores[q]["map_cut_1000"] for q in QRELS])),
            "ndcg_at_10": float(np.mean([scores[q]["ndcg_cut_10"] for q in QRELS])), "mrr_at_10": float(np.mean(mrr))}


def test_an_imported_spec_runs_on_a_local_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """AskUbuntuDupQuestions' imported spec, its data replaced by the fixture at <data>/askubuntudupquestions/."""
    from specrun.cli import main
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    spec = imported(tmp_path, capsys, "AskUbuntuDupQuestions")["AskUbuntuDupQuestions"]
    data = tmp_path / "data"
    make_snapshot(data / "askubuntudupquestions")
    assert main(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    texts = [*DOCS.values(), *QUERIES.values()]
    encoded = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32)
    expected = reference({text: np.asarray(vector, dtype=np.float64) for text, vector in zip(texts, encoded,
                                                                                            strict=True)})
    for metric, value in expected.items():
        score = results.scores["test"][metric]
        assert score.value == pytest.approx(value, abs=1e-12), metric
        assert score.n == len(QRELS)
    assert 0 < expected["map_at_1000"] < 1
