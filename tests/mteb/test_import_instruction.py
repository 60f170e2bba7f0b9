"""`specrun import mteb` for InstructionRetrieval and InstructionReranking tasks: MTEB 2.x's AbsTaskRetrieval on the
hub retrieval layout with an `instruction` config, which `mteb_retrieval` joins into each query as MTEB does (the
query, a space, the instruction); what no spec can say (robustness@10) refused by name; the form such a task
imports as (a catalogue task with a pinned revision and a main score corpus_retrieval computes) run end to end on a
local hub snapshot with the hashing adapter, equal to pytrec_eval on the same vectors and the joined query texts;
and FollowIR's tasks (main score p-MRR) as they import, a `paired_reranking` spec read with option `pairs`, run
end to end and equal to MTEB's p-MRR transcribed here and pytrec_eval. mteb is never imported and the hub is never
asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytrec_eval
import yaml

from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
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
    for name in ("Core17InstructionRetrieval", "News21InstructionRetrieval", "Robust04InstructionRetrieval"):
        assert refusals(catalogue.task(name)) == [], name  # p-MRR: paired_reranking; its hook: what the kind does
    for name in ("mFollowIR", "mFollowIRCrossLingual"):  # their own load_data stays refused
        assert refusals(catalogue.task(name)) == [f"overrides load_data, task_specific_scores ({name}): custom "
                                                  "Python that YAML cannot say"], name
    assert refusals(catalogue.task("InstructIR")) == []  # robustness_at_10: a metric over query groups
    assert NEEDS == {}
    for name in ("IFIRAila", "IFIRCds", "IFIRFiQA", "IFIRFire", "IFIRNFCorpus", "IFIRPm", "IFIRScifact"):
        found = refusals(catalogue.task(name))
        assert found == [next(r for r in found if r.startswith("dataset revision"))], found  # nDCG@20 maps
        assert not any(reason.startswith(("main score", "overrides")) for reason in found), found  # level_scores
    code, _out, err = run_cli(["import", "mteb", "mFollowIR", "-o", str(tmp_path / "x")], capsys)
    assert_one_line_error(code, err, contains="overrides load_data")
    assert not (tmp_path / "x").exists()
    tasks = list(catalogue.active_text_tasks().values())
    counts = coverage(tasks)
    assert (counts["InstructionRetrieval"]["tasks"], counts["InstructionRetrieval"]["imports"]) == (8, 1)
    assert (counts["InstructionReranking"]["tasks"], counts["InstructionReranking"]["imports"]) == (5, 3)


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
    load_spec(path)
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
    spec = load_plain(path.read_text(encoding="utf-8"))
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


PAIRS = {"p1": "upgrade ubuntu", "p2": "wifi disconnects", "p3": "install a .deb file"}
PAIR_QRELS = {"p1-og": {"d1": 2, "d0": 1, "d5": 0}, "p1-changed": {"d1": 2, "d0": 0},
              "p2-og": {"d2": 1, "d7": 1}, "p2-changed": {"d2": 1, "d7": 0},
              "p3-og": {"d3": 1, "d0": 1}, "p3-changed": {"d3": 1, "d0": 0}}
PAIR_TOP = {"p1": ["d0", "d1", "d5", "d6"], "p2": ["d2", "d7", "d4"], "p3": ["d3", "d0", "d4", "d6"]}
# p2 lists d3, none of its candidates (rank len + 1 in both runs); p9 is no judged pair (MTEB skips it)
QREL_DIFF = {"p1": ["d0"], "p2": ["d7", "d3"], "p3": ["d0"], "p9": ["d1"]}
SIDE_INSTRUCTIONS = {"og": "Any answer is relevant.", "changed": "Only answers from the terminal."}


def pair_text(query_id: str) -> str:
    """The text MTEB embeds for a query of a pair: the query, a space, its instruction."""
    base, side = query_id.rsplit("-", 1)
    return f"{PAIRS[base]} {SIDE_INSTRUCTIONS[side]}"


def make_pairs(root: Path, qrels: dict[str, dict[str, int]] | None = None) -> Path:
    """FollowIR's layout in MTEB 2.x: -og/-changed queries with their instructions, qrels and top_ranked, and the
    qrel_diff config (its split named qrel_diff, as the tasks' own Python asks for it)."""
    qrels = PAIR_QRELS if qrels is None else qrels
    queries = [f"{base}-{side}" for base in PAIRS for side in ("og", "changed")]
    parts = {"corpus": [{"_id": d, "title": "", "text": t} for d, t in DOCS.items()],
             "queries": [{"_id": q, "text": PAIRS[q.rsplit("-", 1)[0]]} for q in queries],
             "default": [{"query-id": q, "corpus-id": d, "score": s} for q, judged in qrels.items()
                         for d, s in judged.items()],
             "instruction": [{"query-id": q, "instruction": SIDE_INSTRUCTIONS[q.rsplit("-", 1)[1]]} for q in queries],
             "top_ranked": [{"query-id": q, "corpus-ids": PAIR_TOP[q.rsplit("-", 1)[0]]} for q in queries],
             "qrel_diff": [{"query-id": q, "corpus-ids": ids} for q, ids in QREL_DIFF.items()]}
    lines = ["---", "configs:"]
    for name, rows in parts.items():
        split = "qrel_diff" if name == "qrel_diff" else "test"
        write(root / name / f"{split}.parquet", rows, row_group_size=2)
        lines += [f"- config_name: {name}", "  data_files:", f"  - split: {split}", f"    path: {name}/{split}.parquet"]
    (root / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")
    return root


def test_option_pairs_reads_one_row_per_og_changed_pair(tmp_path: Path) -> None:
    rows = read_mteb_retrieval(make_pairs(tmp_path / "repo"), Layout(instructions=True, candidates=True, pairs=True),
                               "test")
    assert [row["query_id"] for row in rows] == list(PAIRS)
    first = rows[0]
    assert (first["query"], first["changed_query"]) == (pair_text("p1-og"), pair_text("p1-changed"))
    assert (first["qrels"], first["changed_qrels"]) == (PAIR_QRELS["p1-og"], PAIR_QRELS["p1-changed"])
    assert first["candidates"] == first["changed_candidates"] == PAIR_TOP["p1"]
    assert [row["changed"] for row in rows] == [QREL_DIFF[p] for p in PAIRS]  # p9: no judged pair, left out


@pytest.mark.parametrize(("qrels", "message"), [
    ({**PAIR_QRELS, "p4": {"d1": 1}}, "query 'p4' ends in neither -og nor -changed"),
    ({k: v for k, v in PAIR_QRELS.items() if k != "p2-changed"}, "query 'p2-og' has qrels and its pair "
                                                                 "'p2-changed' has none")])
def test_a_query_outside_a_pair_is_one_line(tmp_path: Path, qrels: dict[str, dict[str, int]], message: str) -> None:
    repo = make_pairs(tmp_path / "repo", qrels)
    if "p4" in qrels:  # a judged query needs a query row (and an instruction, with option instructions)
        write(repo / "queries" / "test.parquet", [{"_id": q, "text": "x"} for q in [*qrels]], row_group_size=2)
        write(repo / "instruction" / "test.parquet", [{"query-id": q, "instruction": "y"} for q in qrels])
    with pytest.raises(DataError, match=message) as caught:
        read_mteb_retrieval(repo, Layout(instructions=True, candidates=True, pairs=True), "test")
    assert "\n" not in str(caught.value)


def mteb_followir(vectors: dict[str, np.ndarray]) -> dict[str, float]:
    """MTEB 2.26's evaluate_p_mrr_change transcribed: each query's run (its candidates by float64 cosine),
    get_rank_from_dict (sorted by (score, id) descending, len + 1 when absent), rank_score, the mean per pair and
    over pairs; pytrec_eval over the -og queries, the others, and all of them."""
    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    run = {q: {d: cosine(vectors[pair_text(q)], vectors[DOCS[d]]) for d in PAIR_TOP[q.rsplit("-", 1)[0]]}
           for q in PAIR_QRELS}

    def rank(query_id: str, doc: str) -> int:
        ordered = [d for d, _ in sorted(run[query_id].items(), key=lambda x: (x[1], x[0]), reverse=True)]
        return ordered.index(doc) + 1 if doc in ordered else len(ordered) + 1

    def rank_score(og: int, new: int) -> float:
        return ((1 / og) / (1 / new)) - 1 if og >= new else 1 - ((1 / new) / (1 / og))

    per_pair = [np.mean([rank_score(rank(f"{p}-og", d), rank(f"{p}-changed", d)) for d in docs])
                for p, docs in QREL_DIFF.items() if f"{p}-og" in run]
    found = {"p_mrr": float(np.mean(per_pair))}
    for prefix, chosen in (("og_", lambda q: q.endswith("-og")), ("changed_", lambda q: not q.endswith("-og")),
                           ("", lambda q: True)):
        qrels = {q: judged for q, judged in PAIR_QRELS.items() if chosen(q)}
        scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.1000"}).evaluate(
            {q: run[q] for q in qrels})
        found |= {f"{prefix}{name}": float(np.mean([s[measure] for s in scores.values()]))
                  for name, measure in (("ndcg_cut_10", "ndcg_cut_10"), ("map_cut_1000", "map_cut_1000"))}
    return found


def test_a_followir_task_imports_as_paired_reranking_and_runs_as_mteb_scores_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    (entry,) = import_tasks(["Core17InstructionRetrieval"], catalogue.load())  # as it is: p-MRR, its own hook
    spec = load_plain(entry.text)
    (source,) = spec["sources"].values()
    assert source["mirror"]["options"] == {"candidates": True, "instructions": True, "pairs": True}
    (protocol,) = spec["protocols"].values()
    assert protocol["kind"] == "paired_reranking" and protocol["options"] == {"top_k": 1000}
    assert spec["metrics"]["p_mrr"]["range"] == [-1.0, 1.0] and spec["metrics"]["p_mrr"]["mteb"]["main"]
    assert spec["metrics"]["p_mrr"]["mteb"]["score"] == "p-MRR"
    first = {key: value for key, value in spec["metrics"]["ndcg_at_10"].items() if key != "mteb"}
    for name in ("og_ndcg_cut_10", "changed_ndcg_cut_10", "og_map_cut_1000", "changed_map_cut_1000"):
        spec["metrics"][name] = first | {"metric": name, "label": name}
    path = tmp_path / "specs" / f"{entry.spec_id}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    data = tmp_path / "data"
    make_pairs(data / spec["id"])
    assert main(["fingerprint", str(path), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(path), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    texts = [*DOCS.values(), *(pair_text(q) for q in PAIR_QRELS)]
    encoded = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32)
    expected = mteb_followir({t: np.asarray(v, dtype=np.float64) for t, v in zip(texts, encoded, strict=True)})
    names = {"p_mrr": "p_mrr", "ndcg_cut_10": "ndcg_at_10", "map_cut_1000": "map_at_1000"}
    for metric, value in expected.items():
        score = results.scores["test"][names.get(metric, metric)]
        assert score.value == pytest.approx(value, abs=1e-12), metric
        assert score.n == len(PAIRS)  # the unit: pairs, a percentile interval over them
    assert results.scores["test"]["p_mrr"].interval == "percentile"
    assert expected["p_mrr"] != 0 and expected["og_ndcg_cut_10"] != expected["changed_ndcg_cut_10"]


TOPICS = ["ubuntu", "wifi", "deb", "audio", "grub", "font", "sound", "network", "upgrade", "terminal"]
GROUPED = {f"{group}_{variant}": (f"{topic} question", f"Instruction {variant} about {topic}.")  # 1-3 variants
           for group, topic in enumerate(TOPICS, start=1) for variant in ("a", "b", "c")[:1 + group % 3]}


def grouped_qrels() -> dict[str, dict[str, int]]:
    """Seeded judgments of each grouped query: one or two relevant documents, one judged irrelevant."""
    rng = np.random.default_rng(3)
    out = {}
    for query in GROUPED:
        picked = rng.permutation(list(DOCS))[:3]
        out[query] = {str(picked[0]): 2, str(picked[1]): int(rng.integers(0, 2)), str(picked[2]): 0}
    return out


def make_grouped(root: Path, qrels: dict[str, dict[str, int]]) -> Path:
    """InstructIR's layout: corpus, queries (ids `<group>_<variant>`), qrels and the instruction config."""
    parts = {"corpus": [{"_id": d, "title": "", "text": t} for d, t in DOCS.items()],
             "queries": [{"_id": q, "text": text} for q, (text, _) in GROUPED.items()],
             "default": [{"query-id": q, "corpus-id": d, "score": s} for q, judged in qrels.items()
                         for d, s in judged.items()],
             "instruction": [{"query-id": q, "instruction": told} for q, (_, told) in GROUPED.items()]}
    lines = ["---", "configs:"]
    for name, rows in parts.items():
        write(root / name / "test.parquet", rows, row_group_size=4)
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: {name}/test.parquet"]
    (root / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")
    return root


def robustness_reference(qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    """MTEB's robustness_at_10 transcribed (mteb/_evaluators/retrieval_metrics.py: qrels keys grouped by
    `key.split("_")[0]`, each group's lowest ndcg_cut_10, their mean) on pytrec_eval's per-query nDCG@10 of the
    joined queries against the corpus by float64 cosine; and the plain nDCG@10."""
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    joined = {q: f"{text} {told}" for q, (text, told) in GROUPED.items()}
    texts = [*DOCS.values(), *joined.values()]
    encoded = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32)
    vectors = {t: np.asarray(v, dtype=np.float64) for t, v in zip(texts, encoded, strict=True)}

    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.round(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), 12))

    run = {q: {d: cosine(vectors[joined[q]], vectors[DOCS[d]]) for d in DOCS} for q in qrels}
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    groups: dict[str, list[str]] = {}
    for key in qrels:
        groups.setdefault(key.split("_")[0], []).append(key)
    lowest = [min(scores[key]["ndcg_cut_10"] for key in keys) for keys in groups.values()]
    return sum(lowest) / len(lowest), float(np.mean([s["ndcg_cut_10"] for s in scores.values()]))


def test_instructir_imports_robustness_at_10_over_query_groups_and_runs_as_mteb_scores_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main

    (entry,) = import_tasks(["InstructIR"], catalogue.load())
    path = tmp_path / "specs" / f"{entry.spec_id}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(entry.text, encoding="utf-8")
    spec = load_plain(entry.text)
    (protocol,) = spec["protocols"].values()
    assert (protocol["kind"], protocol["options"]["query_groups"]) == ("corpus_retrieval", "_")
    main_metric = spec["metrics"]["robustness_at_10"]
    assert (main_metric["metric"], main_metric["mteb"]["score"], main_metric["mteb"]["main"]) == \
        ("robustness_at_10", "robustness_at_10", True)
    assert "level_scores" not in spec["card"]["caveats"] and "query groups" in spec["card"]["uncertainty"]
    qrels = grouped_qrels()
    data = tmp_path / "data"
    make_grouped(data / spec["id"], qrels)
    assert main(["fingerprint", str(path), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(path), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    robustness, ndcg = robustness_reference(qrels)
    score = results.scores["test"]["robustness_at_10"]
    assert score.value == pytest.approx(robustness, abs=1e-12)
    assert score.n == 10  # the groups
    assert score.ci_low <= score.value <= score.ci_high
    assert results.scores["test"]["ndcg_at_10"].value == pytest.approx(ndcg, abs=1e-12)
    assert robustness < ndcg  # some group's variants differ


def test_the_group_metric_weighs_each_group_by_its_first_query() -> None:
    from specrun.core.registry import METRICS
    from specrun.protocols.corpus_retrieval import query_groups

    groups = query_groups(["1_a", "1_b", "2_a", "3_a", "3_b", "3_c", "x"], "_")
    assert groups.tolist() == [0, 0, 1, 2, 2, 2, 3]
    assert query_groups(["1_a", "1_b"], None).tolist() == [0, 1]
    values = np.array([0.5, 0.2, 0.9, 0.4, 0.1, 0.7, 1.0])
    entry = METRICS["robustness_at_10"]
    assert entry.statistic(values, groups, weights=np.ones(7)) == pytest.approx((0.2 + 0.9 + 0.1 + 1.0) / 4)
    # a resample that draws group 1's first query twice and group 3's none: (2 * 0.2 + 0.9 + 1.0) / 4
    drawn = np.array([[2, 5, 1, 0, 3, 0, 1]], dtype=float)
    assert entry.statistic(values, groups, weights=drawn)[0] == pytest.approx((2 * 0.2 + 0.9 + 1.0) / 4)
    assert entry.count(values, groups) == 4
