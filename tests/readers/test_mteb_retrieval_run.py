"""`mteb_retrieval` end to end: an `hf_dataset` source read from a local copy of an MTEB-layout repo, run through
`corpus_retrieval` with the hashing adapter, equal to pytrec_eval on the same vectors; and the same numbers as the
BEIR folder of the same data read by `beir_corpus`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from tests.conftest import run_ok
from tests.protocols.test_corpus_retrieval import DOCS, GRADED, HERE, independent, texts_in_order
from tests.readers.test_mteb_retrieval import write

REVISION = "0123456789abcdef0123456789abcdef01234567"


def make_mteb_repo(root: Path) -> Path:
    """The graded BEIR fixture of test_corpus_retrieval as MTEB's hub holds it: corpus parquet (a title column,
    empty), queries jsonl with an unjudged query, qrels under `default` with one split for every split."""
    repo = root / "corpusset"
    write(repo / "corpus" / "test.parquet", [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(DOCS)],
          row_group_size=4)
    write(repo / "queries" / "test.jsonl", [{"_id": q, "text": text} for q, (text, _) in GRADED.items()]
          + [{"_id": "c9", "text": "a query without qrels"}])
    write(repo / "qrels" / "test.parquet", [{"query-id": q, "corpus-id": f"d{d}", "score": s}
                                            for q, (_, judged) in GRADED.items() for d, s in judged.items()])
    (repo / "README.md").write_text(
        "---\nconfigs:\n" + "".join(f"- config_name: {name}\n  data_files:\n  - split: test\n    path: {part}\n"
                                    for name, part in [("corpus", "corpus/test.parquet"),
                                                       ("queries", "queries/test.jsonl"),
                                                       ("default", "qrels/test.parquet")]) + "---\n",
        encoding="utf-8")
    return repo


def mteb_spec(tmp_path: Path, data: Path) -> Path:
    from specrun.cli import main

    spec = load_plain((HERE / "corpus_beir.yaml").read_text(encoding="utf-8"))
    spec["sources"]["corpusset"] = {
        "type": "hf_dataset", "path": "owner/corpusset", "revision": REVISION, "licence": "cc0-1.0",
        "mirror": {"format": "mteb_retrieval", "files": {"test": "."}},
        "columns": {"query": "query", "qrels": "qrels", "corpus": "corpus"}, "ids": {"column": "query_id"}}
    del spec["splits"]["test"]["fingerprint"]
    path = tmp_path / "corpusset.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    assert main(["fingerprint", str(path), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    return path


def test_mteb_layout_end_to_end_hashing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    data = tmp_path / "data"
    make_mteb_repo(data)
    spec = mteb_spec(tmp_path, data)
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output", str(tmp_path / "o"),
                      "-q"], capsys)
    vectors = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts_in_order(), 32)
    for metric, value in independent(np.asarray(vectors), 10).items():
        score = results.scores["test"][metric]
        assert score.value == pytest.approx(value, abs=1e-9), metric
        assert score.n == len(GRADED) and score.ci_low <= score.value <= score.ci_high  # c9 dropped
    assert results.texts.total == len(DOCS) + len(GRADED)  # the corpus once, not once per query
