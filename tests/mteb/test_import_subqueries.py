"""`specrun import mteb MindSmallReranking`: MTEB's max_over_subqueries (queries whose ids share the part before
their last '_' are one query; each document scores its highest similarity over the subqueries' runs) as
corpus_reranking's option `max_over_subqueries`; the imported spec run end to end on a local hub snapshot in MTEB's
reranking layout with the hashing adapter, equal to MTEB's merge (re-implemented here from
mteb/_evaluators/retrieval_metrics.py) and pytrec_eval on the same vectors. mteb is never imported."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from specrun.core.corpus import SharedCorpus
from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
from specrun.core.types import Item
from specrun.mteb import catalogue
from specrun.mteb.importer import refusals
from specrun.protocols.corpus_reranking import merged_ranking, subquery_groups
from tests.conftest import run_cli, run_ok
from tests.readers.test_mteb_retrieval import write

DOCS = {"n1": "Stocks rally as the central bank holds rates", "n2": "Local team wins the championship final",
        "n3": "New phone release date announced", "n4": "Storm brings heavy rain to the coast",
        "n5": "Recipe: a quick weeknight pasta", "n6": "Election results are in for the city council",
        "n7": "Stocks rally as the central bank holds rates"}  # n1's text: an exact tie, ordered by id
HISTORY = {"u1": ["Markets fall on rate fears", "Championship preview: the final four"],
           "u2": ["Weather warning for the weekend", "Smartphone sales slow down", "Easy pasta recipes"],
           "u3": ["City council votes on the budget"],
           "u_4": ["Rain and wind hit the region", "Bank holds interest rates steady"]}  # group 'u_4'
QRELS = {"u1": {"n1": 1, "n2": 0, "n7": 0, "n5": 0}, "u2": {"n3": 1, "n4": 1, "n5": 0},
         "u3": {"n6": 0, "n2": 0}, "u_4": {"n4": 1, "n1": 0, "n6": 0}}  # u3: none relevant, scored 0
CANDIDATES = {"u1": [["n1", "n2", "n7"], ["n2", "n5", "n1"]], "u2": [["n3", "n4", "n5"], ["n4", "n5"], ["n5"]],
              "u3": [["n6", "n2"]], "u_4": [["n4", "n1"], ["n6", "n4", "n1"]]}
REVISION = "227478e3235572039f4f7661840e059f31ef6eb1"


def subqueries() -> dict[str, tuple[str, str, list[str]]]:
    """Subquery id (`<group>_<n>`, MTEB's MIND layout) -> (group, text, candidates)."""
    return {f"{group}_{n}": (group, text, CANDIDATES[group][n]) for group, texts in HISTORY.items()
            for n, text in enumerate(texts)}


def make_snapshot(root: Path) -> Path:
    """MTEB's layout of a Reranking repo: corpus, queries, default (qrels) and top_ranked configs, parquet; each
    subquery judged with its group's qrels, as MTEB's MIND data holds them."""
    parts = {"corpus": [{"_id": d, "title": "", "text": t} for d, t in DOCS.items()],
             "queries": [{"_id": q, "text": text} for q, (_, text, _) in subqueries().items()],
             "default": [{"query-id": q, "corpus-id": d, "score": s} for q, (group, _, _) in subqueries().items()
                         for d, s in QRELS[group].items()],
             "top_ranked": [{"query-id": q, "corpus-ids": ids} for q, (_, _, ids) in subqueries().items()]}
    lines = ["---", "configs:"]
    for name, rows in parts.items():
        write(root / name / "test.parquet", rows, row_group_size=3)
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: {name}/test.parquet"]
    (root / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")
    return root


def mteb_reference(vectors: dict[str, np.ndarray]) -> dict[str, float]:
    """MTEB's max_over_subqueries on the subqueries' runs (float64 cosine): grouped by
    `"_".join(id.split("_")[:-1])`, each document at its max, scored by pytrec_eval; MTEB's own MRR sorts by score
    then id, descending."""
    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.round(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), 12))

    results = {q: {d: cosine(vectors[text], vectors[DOCS[d]]) for d in ids} for q, (_, text, ids) in
               subqueries().items()}
    qrels = {q: QRELS[group] for q, (group, _, _) in subqueries().items()}
    keys: dict[str, list[str]] = defaultdict(list)
    for key in qrels:
        keys["_".join(key.split("_")[:-1])].append(key)
    run: dict[str, dict[str, float]] = {}
    merged_qrels = {}
    for base, ids in keys.items():
        scores: dict[str, float] = {}
        for full in ids:
            for doc, score in results[full].items():
                scores[doc] = max(score, scores.get(doc, score))
        run[base], merged_qrels[base] = scores, qrels[ids[-1]]
    found = pytrec_eval.RelevanceEvaluator(merged_qrels, {"map_cut.1000", "ndcg_cut.10"}).evaluate(run)
    mrr = []
    for base, scores in run.items():
        ranked = [d for d, _ in sorted(scores.items(), key=lambda pair: (pair[1], pair[0]), reverse=True)][:10]
        mrr.append(next((1 / (r + 1) for r, d in enumerate(ranked) if merged_qrels[base].get(d, 0) > 0), 0.0))
    assert set(found) == set(HISTORY)
    return {"max_over_subqueries_map_at_1000": float(np.mean([found[q]["map_cut_1000"] for q in found])),
            "max_over_subqueries_ndcg_at_10": float(np.mean([found[q]["ndcg_cut_10"] for q in found])),
            "max_over_subqueries_mrr_at_10": float(np.mean(mrr))}


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    code, out, err = run_cli(["import", "mteb", "MindSmallReranking", "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    return Path(out.split()[0])


def test_mind_small_reranking_imports_with_max_over_subqueries(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert refusals(catalogue.task("MindSmallReranking")) == []
    spec = load_plain(imported(tmp_path, capsys).read_text(encoding="utf-8"))
    assert spec["protocols"]["rerank"]["kind"] == "corpus_reranking"
    assert spec["protocols"]["rerank"]["options"] == {"top_k": 1000, "max_over_subqueries": True}
    assert list(spec["metrics"]) == ["max_over_subqueries_map_at_1000", "max_over_subqueries_mrr_at_10",
                                     "max_over_subqueries_ndcg_at_10"]
    main = spec["metrics"]["max_over_subqueries_map_at_1000"]
    assert (main["metric"], main["mteb"]["score"], main["mteb"]["main"]) == (
        "map_cut_1000", "max_over_subqueries_map_at_1000", True)
    assert spec["sources"]["mindsmallreranking"]["revision"] == REVISION


def test_an_imported_mind_spec_runs_on_a_local_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    spec = imported(tmp_path, capsys)
    data = tmp_path / "data"
    make_snapshot(data / "mindsmallreranking")
    assert main(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    texts = [*DOCS.values(), *(text for group in HISTORY.values() for text in group)]
    encoded = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32)
    expected = mteb_reference({text: np.asarray(vector, dtype=np.float64)
                               for text, vector in zip(texts, encoded, strict=True)})
    for metric, value in expected.items():
        score = results.scores["test"][metric]
        assert score.value == pytest.approx(value, abs=1e-12), metric
        assert score.n == len(HISTORY)  # the unit: the merged query
    assert 0 < expected["max_over_subqueries_map_at_1000"] < 1


def _items(ids_qrels: dict[str, dict[str, int]]) -> list[Item]:
    corpus = SharedCorpus.from_lists(ids=["d0", "d1"], texts=["a", "b"])
    return [Item(id=key, fields={"query": key, "qrels": qrels, "corpus": corpus, "candidates": ["d0"]})
            for key, qrels in ids_qrels.items()]


def test_subquery_groups_follow_mteb_and_refuse_what_it_leaves_to_chance() -> None:
    groups = subquery_groups(_items({"a_b_1": {"d0": 1}, "c_0": {"d1": 1}, "a_b_2": {"d0": 1}}))
    assert groups == {"a_b": [0, 2], "c": [1]}
    with pytest.raises(DataError, match="qrels differ from those of 'a_1'") as caught:
        subquery_groups(_items({"a_1": {"d0": 1}, "a_2": {"d1": 1}}))
    assert "\n" not in str(caught.value)
    with pytest.raises(DataError, match="has none"):
        subquery_groups(_items({"plain": {"d0": 1}}))


def test_the_merged_run_takes_each_documents_max_ranks_ties_by_id_descending_and_cuts_at_top_k() -> None:
    corpus = SharedCorpus.from_lists(ids=["a", "b", "c", "d"], texts=["1", "2", "3", "4"])
    items = [Item(id=key, fields={"query": key, "qrels": {}, "corpus": corpus, "candidates": ["a", "b", "c", "d"]})
             for key in ("g_0", "g_1", "h_0")]
    runs = [(np.array([0, 1]), np.array([0.9, 0.2])), (np.array([1, 2, 3]), np.array([0.5, 0.9, 0.1])),
            (np.array([3, 0]), np.array([0.4, 0.4]))]
    ranked = merged_ranking(items, runs, [[0, 1], [2]], corpus, top_k=3)
    assert ranked.tolist() == [[2, 0, 1], [3, 0, -1]]  # g: c and a tie at 0.9 (c first), b at its max 0.5
