"""publish-benchmark of a corpus-retrieval spec (issue 20): the corpus, queries and qrels go up in the layout of
MTEB's retrieval datasets on the hub (mteb/scifact: configs `corpus` (_id, title, text), `queries` (_id, text) and
`default` (query-id, corpus-id, score) per split), with the documents' texts, never a digest in their place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from tests.conftest import assert_one_line_error, files_under, run_cli

HERE = Path(__file__).resolve().parent
CORPUS_SPEC = HERE.parent / "protocols" / "corpus_beir.yaml"
DOCS = [("d0", "Gardening", "Tomatoes need sun."), ("d1", "", "Java strings become ints with parseInt."),
        ("d2", "Arrays", "An index past the end throws."), ("d3", "", "Unrelated text about the weather.")]
QUERIES = {"q1": "How do I water tomatoes?", "q2": "String to int in Java", "q3": "array index exception"}
QRELS = {"test": [("q1", "d0", 2), ("q1", "d3", 0), ("q2", "d1", 1)], "dev": [("q3", "d2", 1), ("q1", "d0", 1)]}


def corpus_set(tmp_path: Path) -> tuple[Path, Path]:
    """A BEIR folder (two qrels splits over one corpus, titles on some documents) and its spec, fingerprinted,
    with the data marked redistributable."""
    from specrun.cli import main

    folder = tmp_path / "data" / "corpusset" / "data"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n"
                                                 for i, t, x in DOCS), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": x}) + "\n"
                                                  for q, x in QUERIES.items()), encoding="utf-8")
    for split, rows in QRELS.items():
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows), encoding="utf-8")
    spec = load_plain(CORPUS_SPEC.read_text(encoding="utf-8"))
    source = spec["sources"]["corpusset"]
    source["fetch"] = True
    source["files"] = {"test": {"path": "data"}, "dev": {"path": "data"}}
    spec["splits"] = {"test": {"source": "corpusset", "source_split": "test"},
                      "dev": {"source": "corpusset", "source_split": "dev"}}
    spec["subset"]["splits"] = {"test": "all", "dev": "all"}
    spec["citation"] = "@misc{corpusset,\n  title = {A corpus set}\n}"
    path = tmp_path / "corpusset.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    assert main(["fingerprint", str(path), "--data-dir", str(tmp_path / "data"), "--no-cache", "--write"]) == 0
    return path, tmp_path / "data"


def rows(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def test_corpus_queries_and_qrels_are_uploaded_as_mteb_lays_them_out(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from huggingface_hub import DatasetCard

    spec, data = corpus_set(tmp_path)
    out = tmp_path / "out"
    code, dry, err = run_cli(["publish-benchmark", str(spec), "--repo", "o/corpusset", "--data-dir", str(data),
                              "--no-cache", "-o", str(out)], capsys)
    assert code == 0, err
    assert files_under(out) == ["README.md", "corpus.parquet", "eval.yaml", "qrels/dev.parquet",
                                "qrels/test.parquet", "queries.parquet"]
    for name in ("corpus.parquet", "queries.parquet", "qrels/test.parquet", "qrels/dev.parquet"):
        assert f"--- {name} (" in dry
    # every document's text, as it was embedded (title and text joined, as the reader joins them)
    assert rows(out / "corpus.parquet") == [{"_id": i, "text": f"{t} {x}" if t else x} for i, t, x in DOCS]
    assert rows(out / "queries.parquet") == [{"_id": q, "text": QUERIES[q]} for q in ("q1", "q2", "q3")]
    for split, judged in QRELS.items():
        assert rows(out / "qrels" / f"{split}.parquet") == [{"query-id": q, "corpus-id": d, "score": s}
                                                            for q, d, s in judged]
    assert b"corpus:4 documents:sha256:" not in b"".join(p.read_bytes() for p in out.rglob("*.parquet"))
    card = DatasetCard.load(out / "README.md")
    assert card.data.to_dict()["configs"] == [
        {"config_name": "default", "data_files": [{"split": "test", "path": "qrels/test.parquet"},
                                                  {"split": "dev", "path": "qrels/dev.parquet"}]},
        {"config_name": "corpus", "data_files": [{"split": "corpus", "path": "corpus.parquet"}]},
        {"config_name": "queries", "data_files": [{"split": "queries", "path": "queries.parquet"}]}]
    assert card.data.task_categories == ["text-retrieval"] and card.data.size_categories == ["n<1K"]
    assert card.text.endswith("## Citation\n\n```bibtex\n@misc{corpusset,\n  title = {A corpus set}\n}\n```\n")
    tasks = load_plain((out / "eval.yaml").read_text(encoding="utf-8"))["tasks"]
    assert {(task["config"], task["split"]) for task in tasks} == {("default", "test"), ("default", "dev")}


def test_the_configs_load_with_datasets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import datasets

    spec, data = corpus_set(tmp_path)
    out = tmp_path / "out"
    code, _, err = run_cli(["publish-benchmark", str(spec), "--data-dir", str(data), "--no-cache", "-o", str(out)],
                           capsys)
    assert code == 0, err
    cache = str(tmp_path / "hf-cache")
    corpus = datasets.load_dataset(str(out), "corpus", split="corpus", cache_dir=cache)
    assert corpus.column_names == ["_id", "text"] and corpus[0] == {"_id": "d0", "text": "Gardening Tomatoes need sun."}
    queries = datasets.load_dataset(str(out), "queries", split="queries", cache_dir=cache)
    assert len(queries) == 3
    qrels = datasets.load_dataset(str(out), "default", split="test", cache_dir=cache)
    assert qrels.column_names == ["query-id", "corpus-id", "score"] and len(qrels) == 3


def test_queries_with_two_texts_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Two splits from two query files that give one id two texts: the one queries config cannot hold both."""
    spec, data = corpus_set(tmp_path)
    other = data / "corpusset" / "other"
    other.mkdir()
    for name in ("corpus.jsonl", "qrels"):
        (other / name).symlink_to(data / "corpusset" / "data" / name)
    (other / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": x + "?"}) + "\n"
                                                 for q, x in QUERIES.items()), encoding="utf-8")
    document = load_plain(spec.read_text(encoding="utf-8"))
    document["sources"]["corpusset"]["files"]["dev"] = {"path": "other"}
    del document["splits"]["dev"]["fingerprint"]
    spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    from specrun.cli import main

    assert main(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    code, _, err = run_cli(["publish-benchmark", str(spec), "--data-dir", str(data), "--no-cache", "-o", str(out)],
                           capsys)
    assert_one_line_error(code, err, contains="query 'q1' has two texts in the evaluated splits")
    assert not out.exists()
