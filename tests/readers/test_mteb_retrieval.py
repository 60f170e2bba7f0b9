"""`mteb_retrieval`: MTEB's hub retrieval repo read from a local copy (README `configs:`, parquet or jsonl), the
`<subset>-` configs, the single-split fallback, queries without qrels dropped, scores as whole numbers, the corpus
held as digests and positions and read back by row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from specrun.core.corpus import SharedCorpus
from specrun.core.errors import DataError
from specrun.readers.mteb_retrieval import read_mteb_retrieval

CORPUS = [{"_id": f"d{i}", "title": ["", "A title", None][i % 3], "text": f"document number {i}"}
          for i in range(12)]
QUERIES = [{"_id": "q1", "text": "first query"}, {"_id": "q2", "text": "second query"},
           {"_id": "q3", "text": "a query nobody judged"}, {"_id": "q4", "text": "fourth query"}]
QRELS = [{"query-id": "q4", "corpus-id": "d3", "score": 2}, {"query-id": "q1", "corpus-id": "d0", "score": 1},
         {"query-id": "q1", "corpus-id": "d11", "score": 0}, {"query-id": "q2", "corpus-id": "d7", "score": 1}]


class Layout:
    def __init__(self, **options: Any) -> None:
        self.options = options


def write(path: Path, rows: list[dict[str, Any]], row_group_size: int = 5) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def make_repo(root: Path, *, suffix: str = "parquet", prefix: str = "", qrels_config: str = "default",
              splits: dict[str, list[str]] | None = None, parts: dict[str, list[dict[str, Any]]] | None = None,
              extra_configs: tuple[str, ...] = ()) -> Path:
    """A dataset repo as MTEB's hub copies hold it: a README whose configs name each part's files per split."""
    parts = {"corpus": CORPUS, "queries": QUERIES, "qrels": QRELS, **(parts or {})}
    splits = {"corpus": ["test"], "queries": ["test"], "qrels": ["test"], **(splits or {})}
    lines = ["---", "configs:"]
    for part, rows in parts.items():
        config = f"{prefix}{part}" if prefix or part != "qrels" else qrels_config
        lines += [f"- config_name: {config}", "  data_files:"]
        for split in splits[part]:
            relative = f"{prefix}{part}/{split}.{suffix}"
            write(root / relative, rows)
            lines += [f"  - split: {split}", f"    path: {relative}"]
    for config in extra_configs:
        write(root / f"{config}.jsonl", [{"query-id": "q1", "corpus-ids": ["d0"]}])
        lines += [f"- config_name: {config}", f"  data_files: {config}.jsonl"]
    (root / "README.md").write_text("\n".join([*lines, "---", "", "# a dataset"]) + "\n", encoding="utf-8")
    return root


def texts(corpus: SharedCorpus) -> list[str]:
    return corpus.texts()


EXPECTED_TEXTS = [f"A title document number {i}" if i % 3 == 1 else f"document number {i}" for i in range(12)]


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_reads_mteb_layout(tmp_path: Path, suffix: str) -> None:
    rows = read_mteb_retrieval(make_repo(tmp_path, suffix=suffix), Layout(), "test")
    assert [row["query_id"] for row in rows] == ["q1", "q2", "q4"]  # queries' order; q3 has no qrels: dropped
    assert [row["query"] for row in rows] == ["first query", "second query", "fourth query"]
    assert rows[0]["qrels"] == {"d0": 1, "d11": 0} and rows[2]["qrels"] == {"d3": 2}
    corpus = rows[0]["corpus"]
    assert all(row["corpus"] is corpus for row in rows)
    assert len(corpus) == 12 and texts(corpus) == EXPECTED_TEXTS
    assert dict(corpus.position) == {"d0": 0, "d11": 11, "d7": 7, "d3": 3}  # judged ids only
    assert corpus.texts_at([11, 2, 6, 5]) == [EXPECTED_TEXTS[i] for i in (11, 2, 6, 5)]
    assert corpus == SharedCorpus.from_lists([d["_id"] for d in CORPUS], EXPECTED_TEXTS)  # same content digest


def test_parquet_and_jsonl_read_alike(tmp_path: Path) -> None:
    a = read_mteb_retrieval(make_repo(tmp_path / "a"), Layout(), "test")
    b = read_mteb_retrieval(make_repo(tmp_path / "b", suffix="jsonl"), Layout(), "test")
    assert [{k: v for k, v in r.items()} for r in a] == [{k: v for k, v in r.items()} for r in b]


def test_subset_configs_and_qrels_config(tmp_path: Path) -> None:
    rows = read_mteb_retrieval(make_repo(tmp_path / "s", prefix="en-"), Layout(subset="en"), "test")
    assert [row["query_id"] for row in rows] == ["q1", "q2", "q4"]
    rows = read_mteb_retrieval(make_repo(tmp_path / "q", qrels_config="qrels"), Layout(subset="default"), "test")
    assert len(rows) == 3
    with pytest.raises(DataError, match="no config 'fr-corpus' for the corpus"):
        read_mteb_retrieval(make_repo(tmp_path / "f", prefix="en-"), Layout(subset="fr"), "test")


def test_single_split_fallback(tmp_path: Path) -> None:
    """A config with one split serves any evaluated split; with several, the evaluated one must be there."""
    repo = make_repo(tmp_path, splits={"qrels": ["dev", "test"]})
    assert len(read_mteb_retrieval(repo, Layout(), "dev")) == 3  # corpus and queries: their only split, test
    with pytest.raises(DataError, match="config 'default' has no split 'train' \\(it has 'dev', 'test'\\)"):
        read_mteb_retrieval(repo, Layout(), "train")


def test_several_files_and_row_groups(tmp_path: Path) -> None:
    """A corpus split of two files (a parquet and a jsonl shard), read back across row groups and files."""
    repo = make_repo(tmp_path)
    write(repo / "corpus" / "test-0.parquet", CORPUS[:7], row_group_size=3)
    write(repo / "corpus" / "test-1.jsonl", CORPUS[7:])
    readme = repo / "README.md"
    readme.write_text(readme.read_text().replace("path: corpus/test.parquet", "path: corpus/test-*"))
    corpus = read_mteb_retrieval(repo, Layout(), "test")[0]["corpus"]
    order = np.array([11, 0, 6, 3, 7, 5, 2])
    assert corpus.texts_at(order) == [EXPECTED_TEXTS[i] for i in order]
    assert corpus.texts() == EXPECTED_TEXTS


@pytest.mark.parametrize(("score", "message"), [
    (0.5, "score 0.5 is not a whole number"), (-1, "score -1 is not a whole number"),
    ("high", "score 'high' is not a whole number"), (True, "score True is not")])
def test_score_must_be_whole(tmp_path: Path, score: object, message: str) -> None:
    repo = make_repo(tmp_path, suffix="jsonl", parts={"qrels": [*QRELS, {"query-id": "q2", "corpus-id": "d1",
                                                                        "score": score}]})
    with pytest.raises(DataError, match=message) as caught:
        read_mteb_retrieval(repo, Layout(), "test")
    assert caught.value.line == 5 and "\n" not in str(caught.value)


def test_whole_floats_and_digit_strings_are_scores(tmp_path: Path) -> None:
    qrels = [{**row, "score": float(row["score"])} for row in QRELS]
    qrels[0]["score"] = "2"
    rows = read_mteb_retrieval(make_repo(tmp_path, suffix="jsonl", parts={"qrels": qrels}), Layout(), "test")
    assert rows[2]["qrels"] == {"d3": 2} and isinstance(rows[0]["qrels"]["d0"], int)


@pytest.mark.parametrize(("parts", "message"), [
    ({"qrels": [*QRELS, {"query-id": "q9", "corpus-id": "d1", "score": 1}]}, "query 'q9' is not in the queries"),
    ({"qrels": [*QRELS, {"query-id": "q1", "corpus-id": "x", "score": 1}]}, "document 'x' is not in the corpus"),
    ({"qrels": [*QRELS, QRELS[0]]}, "query 'q4' judges document 'd3' twice"),
    ({"corpus": [*CORPUS, CORPUS[4]]}, "document id 'd4' appears twice \\(first at row 5\\)"),
    ({"queries": [*QUERIES, QUERIES[0]]}, "query id 'q1' appears twice"),
    ({"corpus": [{"_id": "d0", "text": None}]}, "'text' must be a string, got null"),
])
def test_refusals_are_one_line(tmp_path: Path, parts: dict, message: str) -> None:
    with pytest.raises(DataError, match=message) as caught:
        read_mteb_retrieval(make_repo(tmp_path, parts=parts), Layout(), "test")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("config", ["top_ranked", "instruction"])
def test_reranking_and_instruction_configs_are_refused(tmp_path: Path, config: str) -> None:
    with pytest.raises(DataError, match=f"config '{config}' holds"):
        read_mteb_retrieval(make_repo(tmp_path, extra_configs=(config,)), Layout(), "test")


@pytest.mark.parametrize(("readme", "message"), [
    ("# no front matter\n", "no front matter"), ("---\ntitle: x\n---\n", "no `configs:` list"),
    ("---\nconfigs:\n- config_name: corpus\n  data_files: corpus.csv\n---\n", "no config 'queries'")])
def test_bad_cards(tmp_path: Path, readme: str, message: str) -> None:
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    (tmp_path / "corpus.csv").write_text("x\n", encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_mteb_retrieval(tmp_path, Layout(), "test")


def test_a_document_is_stripped_as_mteb_embeds_it(tmp_path: Path) -> None:
    corpus = [{"_id": "a", "title": "", "text": "  padded text \n"}, {"_id": "b", "title": "T", "text": " body "},
              {"_id": "c", "title": None, "text": "   "}]
    qrels = [{"query-id": "q1", "corpus-id": "a", "score": 1}]
    rows = read_mteb_retrieval(make_repo(tmp_path, parts={"corpus": corpus, "qrels": qrels}), Layout(), "test")
    assert rows[0]["corpus"].texts() == ["padded text", "T  body", ""]


def test_data_files_forms(tmp_path: Path) -> None:
    """A bare pattern (split `train`, the fallback serves `test`) and a split -> pattern mapping."""
    repo = make_repo(tmp_path)
    readme = repo / "README.md"
    listed = "- config_name: corpus\n  data_files:\n  - split: test\n    path: corpus/test.parquet"
    text = readme.read_text().replace(listed, "- config_name: corpus\n  data_files: corpus/*.parquet")
    text = text.replace("- config_name: queries\n  data_files:\n  - split: test\n    path: queries/test.parquet",
                        "- config_name: queries\n  data_files: {test: queries/test.parquet}")
    assert text != readme.read_text()
    readme.write_text(text)
    rows = read_mteb_retrieval(repo, Layout(), "test")
    assert [row["query_id"] for row in rows] == ["q1", "q2", "q4"] and rows[0]["corpus"].texts() == EXPECTED_TEXTS


@pytest.mark.parametrize(("front", "said"), [
    ("configs: [unclosed", "front matter is not YAML"),
    ("size: " + "9" * 5_000, "front matter is not YAML: ValueError"),  # past Python's digit limit: was a traceback
    ("configs: " + "[" * 20_000, "front matter is not YAML"),  # nesting past the parser's depth
    ("configs:\n- config_name: default\n  data_files:\n    ? 0x" + "f" * 4_000 + "\n    : a.jsonl",
     "a data_files split name is a huge number"),  # a hex int passes the digit limit, then fails str()
], ids=["unclosed", "long-int", "deep", "huge-split"])
def test_front_matter_that_is_not_yaml_is_one_data_error(tmp_path: Path, front: str, said: str) -> None:
    make_repo(tmp_path)
    (tmp_path / "README.md").write_text(f"---\n{front}\n---\n", encoding="utf-8")
    with pytest.raises(DataError, match=said) as caught:
        read_mteb_retrieval(tmp_path, Layout(), "test")
    assert "\n" not in str(caught.value)
