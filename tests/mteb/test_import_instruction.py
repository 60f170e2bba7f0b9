"""`specrun import mteb` for InstructionRetrieval and InstructionReranking tasks: MTEB 2.x's AbsTaskRetrieval on the
hub retrieval layout with an `instruction` config, which `mteb_retrieval` joins into each query as MTEB does (the
query, a space, the instruction); what no spec can say (p-MRR over og/changed pairs, robustness@10)
refused by name; and the form such a task imports as (a catalogue task with a pinned revision and a main score
corpus_retrieval computes) run end to end on a local hub snapshot with the hashing adapter, equal to pytrec_eval
on the same vectors and the joined query texts. mteb is never imported and the hub is never asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytrec_eval
import yaml

from specrun.core.errors import DataError
from specrun.mteb import catalogue
from specrun.mteb.import_instruction_retrieval import NEEDS
from specrun.mteb.importer import coverage, import_tasks, refusals
from specrun.readers.mteb_retrieval import read_mteb_retrieval
from specrun.spec import load_spec
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.readers.test_mteb_retrieval import Layout, write

DOCS = {"d0": "How do I upgrade ubuntu to the newest release?", "d1": "Upgrading ubuntu from the command line",
        "d2": "My wifi stops working after suspend", "d3": "Install a deb package with dpkg",
        "d4": "Sound does not work on my laptop", "d5": "How to change the default terminal font",
        "d6": "Grub does not show after installing windows", "d7": "Wireless network drops after resume"}
QUERIES = {"q1": "upgrade ubuntu", "q2": "wifi disconnects", "q3": "install a .deb file", "q4": "no audio",
           "q5": "a query nobody judged"}
INSTRUCTIONS = {"q1": "Only answers that use the terminal are relevant.", "q2": "After a suspend.",
                "q3": "Prefer answers about dpkg.", "q4": "", "q5": "unused"}  # "": MTEB's trailing space
QRELS = {"q1": {"d1": 2, "d0": 1, "d5": 0}, "q2": {"d2": 1, "d7": 1, "d3": 1}, "q3": {"d3": 1},
         "q4": {"d4": 1, "d6": 0}}
# q2 judges d3 relevant, no candidate of it: it counts in the ideal DCG (MTEB scores against all qrels)
TOP_RANKED = {"q1": ["d0", "d1", "d5", "d6"], "q2": ["d2", "d7", "d4"], "q3": ["d3", "d0"], "q4": ["d4", "d6"]}
JOINED = {"q1": "upgrade ubuntu Only answers that use the terminal are relevant.",
          "q2": "wifi disconnects After a suspend.",
          "q3": "install a .deb file Prefer answers about dpkg.", "q4": "no audio "}
COMMIT = "c5691e3c48741d5f83b5cc8e630653d7a8cfc048"


def make_snapshot(root: Path, *, top_ranked: bool = False, prefix: str = "",
                  instructions: dict[str, Any] | list[tuple[str, Any]] | None = None) -> Path:
    """MTEB's layout of an instruction task's repo: corpus, queries, qrels, instruction (and top_ranked)."""
    instructions = INSTRUCTIONS if instructions is None else instructions
    parts = {"corpus": [{"_id": d, "title": "", "text": t} for d, t in DOCS.items()],
             "queries": [{"_id": q, "text": t} for q, t in QUERIES.items()],
             "qrels": [{"query-id": q, "corpus-id": d, "score": s} for q, judged in QRELS.items()
                       for d, s in judged.items()],
             "instruction": [{"query-id": q, "instruction": t}
                             for q, t in (instructions.items() if isinstance(instructions, dict) else instructions)]}
    if top_ranked:
        parts["top_ranked"] = [{"query-id": q, "corpus-ids": ids} for q, ids in TOP_RANKED.items()]
    lines = ["---", "configs:"]
    for name, rows in parts.items():
        config = f"{prefix}{name}" if prefix or name != "qrels" else "default"
        write(root / config / "test.parquet", rows, row_group_size=2)
        lines += [f"- config_name: {config}", "  data_files:", "  - split: test", f"    path: {config}/test.parquet"]
    (root / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")
    return root


def test_the_reader_joins_each_query_with_its_instruction_as_mteb_does(tmp_path: Path) -> None:
    repo = make_snapshot(tmp_path / "repo")
    with pytest.raises(DataError, match="config 'instruction' holds per-query instructions"):
        read_mteb_retrieval(repo, Layout(), "test")
    rows = read_mteb_retrieval(repo, Layout(instructions=True), "test")
    assert {row["query_id"]: row["query"] for row in rows} == JOINED  # q5: no qrels, dropped
    subset = read_mteb_retrieval(make_snapshot(tmp_path / "sub", prefix="en-", top_ranked=True),
                                 Layout(subset="en", instructions=True, candidates=True), "test")
    assert [row["query"] for row in subset] == list(JOINED.values())
    assert subset[0]["candidates"] == TOP_RANKED["q1"]


def test_a_repo_without_an_instruction_config_reads_its_queries_as_they_are(tmp_path: Path) -> None:
    repo = make_snapshot(tmp_path / "repo")
    readme = (repo / "README.md").read_text(encoding="utf-8").replace("config_name: instruction", "config_name: x")
    (repo / "README.md").write_text(readme, encoding="utf-8")
    rows = read_mteb_retrieval(repo, Layout(instructions=True), "test")
    assert [row["query"] for row in rows] == [QUERIES[q] for q in JOINED]  # MTEB joins only where it has one


def test_an_instruction_column_of_the_queries_is_joined_as_mteb_does_or_refused(tmp_path: Path) -> None:
    """MTEB's `_retrieval_texts` joins a queries config's own `instruction` column into every query, whatever the
    task type: read as bare queries, those would be a number MTEB never gives, so without the option it is one
    line; with it, the texts are MTEB's; an instruction config, where there is one, replaces the column."""
    repo = make_snapshot(tmp_path / "repo")
    readme = (repo / "README.md").read_text(encoding="utf-8").replace("config_name: instruction", "config_name: x")
    (repo / "README.md").write_text(readme, encoding="utf-8")
    write(repo / "queries" / "test.parquet", [{"_id": q, "text": t, "instruction": INSTRUCTIONS[q]}
                                              for q, t in QUERIES.items()], row_group_size=2)
    with pytest.raises(DataError, match="the queries carry an `instruction` column") as caught:
        read_mteb_retrieval(repo, Layout(), "test")
    assert "\n" not in str(caught.value)
    rows = read_mteb_retrieval(repo, Layout(instructions=True), "test")
    assert {row["query_id"]: row["query"] for row in rows} == JOINED
    write(repo / "queries" / "test.parquet", [{"_id": q, "text": t, "instruction": "stale"}
                                              for q, t in QUERIES.items()], row_group_size=2)
    (repo / "README.md").write_text(readme.replace("config_name: x", "config_name: instruction"), encoding="utf-8")
    rows = read_mteb_retrieval(repo, Layout(instructions=True), "test")
    assert {row["query_id"]: row["query"] for row in rows} == JOINED  # the config's, not the column's


@pytest.mark.parametrize(("instructions", "message"), [
    ({"q1": "x", "q2": "y", "q3": "z"}, "query 'q4' has qrels and no row in config 'instruction'"),
    (dict.fromkeys(INSTRUCTIONS, 7), "query 'q1': instruction must be a string, got int"),
    ({**INSTRUCTIONS, "q3": None}, "query 'q3': instruction must be a string, got null"),
    ([*INSTRUCTIONS.items(), ("q5", "again")], "query 'q5' has two instruction rows")])
def test_instruction_faults_are_one_line(tmp_path: Path, instructions: Any, message: str) -> None:
    with pytest.raises(DataError, match=message) as caught:
        read_mteb_retrieval(make_snapshot(tmp_path, instructions=instructions), Layout(instructions=True), "test")
    assert "\n" not in str(caught.value)


def test_every_instruction_task_is_refused_with_the_piece_it_needs(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("Core17InstructionRetrieval", "News21InstructionRetrieval", "Robust04InstructionRetrieval",
                 "mFollowIR", "mFollowIRCrossLingual"):
        assert NEEDS["p-MRR"] in refusals(catalogue.task(name)), name
    assert NEEDS["robustness_at_10"] in refusals(catalogue.task("InstructIR"))
    for name in ("IFIRAila", "IFIRCds", "IFIRFiQA", "IFIRFire", "IFIRNFCorpus", "IFIRPm", "IFIRScifact"):
        found = refusals(catalogue.task(name))
        assert found == [next(r for r in found if r.startswith("dataset revision"))], found  # nDCG@20 maps
        assert not any(reason.startswith(("main score", "overrides")) for reason in found), found  # level_scores
    code, _out, err = run_cli(["import", "mteb", "Core17InstructionRetrieval", "-o", str(tmp_path / "x")], capsys)
    assert_one_line_error(code, err, contains="needs: p-MRR over og/changed query pairs")
    assert not (tmp_path / "x").exists()
    tasks = list(catalogue.active_text_tasks().values())
    counts = coverage(tasks)
    assert (counts["InstructionRetrieval"]["tasks"], counts["InstructionRetrieval"]["imports"]) == (8, 0)
    assert (counts["InstructionReranking"]["tasks"], counts["InstructionReranking"]["imports"]) == (5, 0)


def pinned(name: str) -> Any:
    """A catalogue task as it would import: a 40-hex revision, main score nDCG@10 and none of its own Python."""
    task = catalogue.task(name)
    return task.model_copy(update={"dataset": task.dataset.model_copy(update={"revision": COMMIT}),
                                   "main_score": "ndcg_at_10", "hooks": {}, "hook_calls": {}})


def written(tmp_path: Path, name: str) -> Path:
    """The spec `specrun import mteb` writes for the pinned task (the catalogue given with it replaced)."""
    loaded = catalogue.load()
    changed = loaded.model_copy(update={"tasks": {**loaded.tasks, name: pinned(name)}})
    (entry,) = import_tasks([name], changed)
    path = tmp_path / "specs" / f"{entry.spec_id}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(entry.text, encoding="utf-8")
    load_spec(path, require_fingerprints=False)
    return path


def reference(vectors: dict[str, np.ndarray], candidates: bool) -> dict[str, float]:
    """pytrec_eval on MTEB's run: each joined query against the corpus (or its candidates) by float64 cosine."""
    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.round(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), 12))

    run = {q: {d: cosine(vectors[JOINED[q]], vectors[DOCS[d]]) for d in (TOP_RANKED[q] if candidates else DOCS)}
           for q in QRELS}
    scores = pytrec_eval.RelevanceEvaluator(QRELS, {"map_cut.10,1000", "ndcg_cut.10"}).evaluate(run)
    return {key: float(np.mean([s[measure] for s in scores.values()])) for key, measure in (
        ("ndcg_at_10", "ndcg_cut_10"), ("map_at_1000" if candidates else "map_at_10",
                                        "map_cut_1000" if candidates else "map_cut_10"))}


@pytest.mark.parametrize(("name", "kind"), [("IFIRCds", "corpus_retrieval"),
                                            ("Core17InstructionRetrieval", "corpus_reranking")])
def test_the_imported_form_runs_on_a_local_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                    kind: str) -> None:
    from specrun.cli import main
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    path = written(tmp_path, name)
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    (source,) = spec["sources"].values()
    reranking = kind == "corpus_reranking"
    assert source["mirror"]["options"] == ({"candidates": True} if reranking else {}) | {"instructions": True}
    (protocol,) = spec["protocols"].values()
    assert protocol["kind"] == kind and protocol["description"].startswith("Each query is read as MTEB's loader")
    assert "instruction config joined" in spec["card"]["data"]
    data = tmp_path / "data"
    make_snapshot(data / spec["id"], top_ranked=reranking)
    assert main(["fingerprint", str(path), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(path), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    texts = [*DOCS.values(), *JOINED.values()]
    encoded = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32)
    expected = reference({t: np.asarray(v, dtype=np.float64) for t, v in zip(texts, encoded, strict=True)}, reranking)
    for metric, value in expected.items():
        score = results.scores["test"][metric]
        assert score.value == pytest.approx(value, abs=1e-12), metric
        assert score.n == len(QRELS)
    assert 0 < expected["ndcg_at_10"] < 1
