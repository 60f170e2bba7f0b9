"""instruction_retrieval: p-MRR against a hand-worked case, the trec measures under each instruction against
pytrec_eval on the same rankings, the query text as MTEB joins it, bad inputs in one line, and the fixture spec
end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from specrun.core.contracts import NoOptions, RunContext
from specrun.core.errors import DataError
from specrun.core.types import CORPUS_CUTOFFS, Item
from specrun.protocols.instruction_retrieval import InstructionRetrievalProtocol
from specrun.protocols.ranking import p_mrr
from tests.protocols.test_kinds_cli import run, spec, write_jsonl

FIXTURE = Path(__file__).parent / "followir" / "test.jsonl"
TREC = {"ndcg": "ndcg_cut", "map": "map_cut", "recall": "recall", "precision": "P"}
COLUMNS = {name: name for name in ("query", "instruction", "changed_instruction", "candidates", "relevance",
                                   "changed_relevance")}


def test_p_mrr_by_hand() -> None:
    # ranks 1 -> 4: 1 - (1/4)/(1/1) = 0.75; ranks 3 -> 2: (1/3)/(1/2) - 1 = -1/3; mean 5/24
    assert p_mrr(np.array([1, 3]), np.array([4, 2])) == pytest.approx(5 / 24, abs=1e-15)
    assert p_mrr(np.array([2]), np.array([2])) == 0.0


def item(n: int = 3) -> Item:
    return Item(id="q", fields={"query": "q", "instruction": "a", "changed_instruction": "b",
                                "candidates": [f"d{j}" for j in range(n)], "relevance": [1, 1, 0][:n],
                                "changed_relevance": [0, 1, 0][:n]})


def test_a_hand_worked_query_ranks_under_both_instructions() -> None:
    vectors = {"q a": [1.0, 0.0], "q b": [0.0, 1.0], "d0": [1.0, 0.1], "d1": [0.6, 0.8], "d2": [0.1, 1.0]}
    asked: list[tuple[str, str]] = []

    def embed(texts, field):
        asked.extend((field, t) for t in texts)
        return np.array([vectors[t] for t in texts])

    out = InstructionRetrievalProtocol().run([item()], RunContext(embed), NoOptions()).arrays
    # under "a" d0 ranks 1 (d1 2, d2 3); under "b" d2, d1, d0: d0 (the changed document) 1 -> 3: 1 - 1/3
    assert out["p_mrr"][0] == pytest.approx(2 / 3, abs=1e-15)
    assert out["og_mrr_cut_10"][0] == 1.0 and out["changed_mrr_cut_10"][0] == 0.5
    assert ("query", "q a") in asked and ("query", "q b") in asked  # MTEB's join: query, a space, instruction


def test_trec_measures_equal_pytrec_eval_under_each_instruction() -> None:
    rng = np.random.default_rng(7)
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    items = [Item(id=r["id"], fields={k: r[k] for k in COLUMNS}) for r in rows]
    vectors: dict[str, np.ndarray] = {}
    protocol = InstructionRetrievalProtocol()
    for _, text in protocol.texts(items, NoOptions()):
        vectors.setdefault(text, rng.standard_normal(8))
    out = protocol.run(items, RunContext(lambda texts, _f: np.stack([vectors[t] for t in texts])), NoOptions()).arrays
    cut = ",".join(map(str, CORPUS_CUTOFFS))
    for which, relevance, instruction in (("og", "relevance", "instruction"),
                                          ("changed", "changed_relevance", "changed_instruction")):
        qrels = {it.id: {f"d{j}": r for j, r in enumerate(it.fields[relevance])} for it in items}
        runs = {}
        for it in items:
            q = vectors[it.fields["query"] + " " + it.fields[instruction]]
            docs = np.stack([vectors[c] for c in it.fields["candidates"]])
            cos = np.round(docs @ q / np.linalg.norm(docs, axis=1) / np.linalg.norm(q), 12)
            runs[it.id] = {f"d{j}": float(s) for j, s in enumerate(cos)}
        found = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{cut}", f"map_cut.{cut}", f"recall.{cut}",
                                                       f"P.{cut}"}).evaluate(runs)
        for ours, theirs in TREC.items():
            for k in CORPUS_CUTOFFS:
                expected = [found[i.id][f"{theirs}_{k}"] for i in items]
                np.testing.assert_allclose(out[f"{which}_{ours}_cut_{k}"], expected, atol=1e-9,
                                           err_msg=f"{which} {ours}@{k}")


def test_a_query_with_nothing_to_score_is_one_line() -> None:
    protocol = InstructionRetrievalProtocol()
    same = item()
    same.fields["changed_relevance"] = [1, 1, 0]
    with pytest.raises(DataError, match="p-MRR has nothing to score"):
        protocol.validate_items([same], NoOptions(), "f")
    none = item()
    none.fields["changed_relevance"] = [0, 0, 0]
    with pytest.raises(DataError, match="no relevant candidate under the changed instruction"):
        protocol.validate_items([none], NoOptions(), "f")
    short = item()
    short.fields["relevance"] = [1, 0]
    with pytest.raises(DataError, match="3 candidates but 2 relevance labels"):
        protocol.validate_items([short], NoOptions(), "f")


def test_the_fixture_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", rows)
    path = spec(tmp_path, "instruction_retrieval", COLUMNS, {"p_mrr": "p_mrr", "og_ndcg": "og_ndcg_cut_5",
                                                             "changed_map": "changed_map_cut_1000"})
    results, arrays = run(path, tmp_path, capsys)
    score = results.scores["test"]["p_mrr"]
    assert score.value == pytest.approx(arrays["p_mrr"].mean(), abs=1e-12)
    assert score.n == len(rows)
    assert score.ci_low <= score.value <= score.ci_high


@pytest.mark.slow  # the real model
def test_the_parity_bench_writes_vectors_and_numbers(tmp_path: Path) -> None:
    from tests.test_bench_scripts import run_bench

    run_bench("mteb_parity_followir.py", "specrun", "--work", str(tmp_path), cwd=tmp_path)
    numbers = json.loads((tmp_path / "specrun.json").read_text())
    assert -1.0 <= numbers["p_mrr"] <= 1.0 and (tmp_path / "vectors.npz").exists()
