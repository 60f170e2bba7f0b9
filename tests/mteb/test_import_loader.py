"""`specrun import mteb MrTidyRetrieval`: a class whose load_data only calls MTEB's `_load_data_retrieval` (configs
`<subset>-qrels` and `<subset>-queries` at split test, `<subset>-corpus` at split train) imports with
`mteb_retrieval`'s option `corpus_split: train`; the spec of its `japanese` subset (JMTEB(v2)'s choice) run end to
end on a local hub snapshot in that layout with the hashing adapter, equal to pytrec_eval on the same vectors. The
snapshot's corpus config also has a `test` split of other documents: the fallback to the evaluated split would read
those, MTEB's loader reads `train`. mteb is never imported."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.importer import refusals, spec_text
from specrun.readers.mteb_retrieval import read_mteb_retrieval
from tests.conftest import run_ok
from tests.readers.test_mteb_retrieval import Layout, write

VERSION = catalogue.load().provenance.mteb_version
DOCS = {"d1": ("東京", "東京は日本の首都です"), "d2": ("富士山", "富士山は日本で一番高い山です"),
        "d3": ("", "寿司は魚と米の料理です"), "d4": ("大阪", "大阪は食べ物で有名な都市です"),
        "d5": ("京都", "京都には古い寺がたくさんあります"), "d6": ("", "新幹線は速い電車です")}
DECOYS = {"x1": ("", "別の分割の文書"), "x2": ("", "評価されない文書")}  # the corpus config's test split
QUERIES = {"q1": "日本の首都はどこですか", "q2": "日本で一番高い山は", "q3": "古い寺が多い都市",
           "q4": "誰も判定していない質問"}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1, "d6": 0}, "q3": {"d5": 1, "d4": 1}}


def make_snapshot(root: Path, subset: str = "japanese") -> Path:
    """mteb/mrtidy's layout as `_load_data_retrieval` reads it: `<subset>-corpus` (train; here also a decoy
    test split), `<subset>-queries` and `<subset>-qrels` (test), parquet."""
    parts = {"corpus": {"train": [{"_id": d, "title": t, "text": x} for d, (t, x) in DOCS.items()],
                        "test": [{"_id": d, "title": t, "text": x} for d, (t, x) in DECOYS.items()]},
             "queries": {"test": [{"_id": q, "text": t} for q, t in QUERIES.items()]},
             "qrels": {"test": [{"query-id": q, "corpus-id": d, "score": s} for q, judged in QRELS.items()
                                for d, s in judged.items()]}}
    lines = ["---", "configs:"]
    for part, splits in parts.items():
        lines += [f"- config_name: {subset}-{part}", "  data_files:"]
        for split, rows in splits.items():
            write(root / f"{subset}-{part}" / f"{split}.parquet", rows)
            lines += [f"  - split: {split}", f"    path: {subset}-{part}/{split}.parquet"]
    (root / "README.md").write_text("\n".join([*lines, "---", ""]), encoding="utf-8")
    return root


def test_mr_tidy_imports_with_its_loaders_corpus_split(tmp_path: Path) -> None:
    task = catalogue.task("MrTidyRetrieval")
    assert task.hook_calls["load_data"] == ["_load_data_retrieval"] and refusals(task) == []
    spec = load_plain(spec_text(task.model_copy(update={"hf_subsets": ["japanese"]}), VERSION))
    (source,) = spec["sources"].values()
    assert source["mirror"]["options"] == {"subset": "japanese", "instructions": False, "corpus_split": "train"}
    assert spec["protocols"]["search"]["kind"] == "corpus_retrieval"
    other = catalogue.task("CodeRAGOnlineTutorials")  # a load_data of its own: still refused
    assert refusals(other)[0].startswith("overrides load_data")


def test_the_reader_reads_the_corpus_from_the_split_asked(tmp_path: Path) -> None:
    repo = make_snapshot(tmp_path / "repo")
    with pytest.raises(DataError, match="document 'd1' is not in the corpus"):  # the test split's: the decoys
        read_mteb_retrieval(repo, Layout(subset="japanese"), "test")
    rows = read_mteb_retrieval(repo, Layout(subset="japanese", corpus_split="train"), "test")
    assert [row["query_id"] for row in rows] == ["q1", "q2", "q3"]  # q4: no qrels
    assert len(rows[0]["corpus"]) == len(DOCS)
    with pytest.raises(DataError, match="has no split 'dev' \\(option corpus_split") as caught:
        read_mteb_retrieval(repo, Layout(subset="japanese", corpus_split="dev"), "test")
    assert "\n" not in str(caught.value)


def reference(vectors: dict[str, np.ndarray]) -> dict[str, float]:
    """pytrec_eval on MTEB's run: every query with qrels ranks the whole (train) corpus by float64 cosine, each
    document's text its title and text joined by a space (the text alone where the title is empty)."""
    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.round(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), 12))

    run = {q: {d: cosine(vectors[QUERIES[q]], vectors[f"{t} {x}".strip()]) for d, (t, x) in DOCS.items()}
           for q in QRELS}
    found = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10", "map_cut.10", "recall.100"}).evaluate(run)
    return {"ndcg_at_10": float(np.mean([found[q]["ndcg_cut_10"] for q in QRELS])),
            "map_at_10": float(np.mean([found[q]["map_cut_10"] for q in QRELS])),
            "recall_at_100": float(np.mean([found[q]["recall_100"] for q in QRELS]))}


def test_the_japanese_subset_runs_on_a_local_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    task = catalogue.task("MrTidyRetrieval").model_copy(update={"hf_subsets": ["japanese"]})
    spec = tmp_path / "mrtidyretrieval.yaml"
    spec.write_text(spec_text(task, VERSION), encoding="utf-8")
    data = tmp_path / "data"
    make_snapshot(data / "mrtidyretrieval")
    assert main(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    texts = [*(f"{t} {x}".strip() for t, x in DOCS.values()), *QUERIES.values()]
    encoded = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32)
    expected = reference({text: np.asarray(vector, dtype=np.float64) for text, vector in zip(texts, encoded,
                                                                                            strict=True)})
    for metric, value in expected.items():
        score = results.scores["test"][metric]
        assert score.value == pytest.approx(value, abs=1e-12), metric
        assert score.n == len(QRELS)
    assert 0 < expected["ndcg_at_10"] < 1
