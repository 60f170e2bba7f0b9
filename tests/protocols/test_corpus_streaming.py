"""A corpus costs arrays, not objects: the `beir_corpus` reader streams corpus.jsonl into digests and
offsets (ids only for judged documents), the store is looked up by digest arrays, the encoder reads a window of
texts at a time back from the file, checked against their digests. Attacked here: memory per document, id-hash
and digest-key collisions, windows smaller than the corpus, duplicates, and the file changed under the run."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from specrun.core.corpus import text_digest
from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
from specrun.encoders.store import DigestMatcher
from specrun.readers import corpus_file
from specrun.readers.beir import read_beir_corpus
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.protocols.test_corpus_retrieval import corpus_spec, make_large_beir


def test_reading_a_corpus_keeps_no_object_per_document(tmp_path: Path) -> None:
    """tracemalloc over the read of 20,000 documents: under 80 bytes a document at the peak (digest 32, offset
    and id hash 8 each, with the arrays' growth), where lists of ids and texts and an id -> position dict took
    over 300; afterwards, only the digests and offsets (the ids kept are the judged documents' only)."""
    n_docs = 20_000
    folder = make_large_beir(tmp_path, n_docs, 50)
    read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]  # imports and caches warmed outside the trace
    tracemalloc.start()
    try:
        rows = read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / n_docs < 80 and held / n_docs < 50, (peak / n_docs, held / n_docs)
    corpus = rows[0]["corpus"]
    judged = {doc for row in rows for doc in row["qrels"]}
    assert len(corpus) == n_docs and set(corpus.position) == judged
    texts = [json.loads(line)["text"] for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert corpus.texts() == texts and all(corpus.position[doc] == int(doc[1:]) for doc in judged)


def test_colliding_id_hashes_are_told_apart_by_the_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every id hashed alike: the reader reads the ids back, so distinct ids pass, the judged ones are found at
    their positions, and a real repeat is still one line at its second occurrence's line."""
    monkeypatch.setattr(corpus_file, "id_hash", lambda doc_id: 7)
    folder = make_large_beir(tmp_path, 300, 20)
    rows = read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]
    corpus = rows[0]["corpus"]
    assert all(corpus.position[doc] == int(doc[1:]) for row in rows for doc in row["qrels"])
    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    lines.insert(120, json.dumps({"_id": "d37", "text": "again"}))
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="document id 'd37' appears twice") as raised:
        read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]
    assert raised.value.line == 121


def test_digests_sharing_their_first_eight_bytes_are_matched_by_all_32() -> None:
    """The store's matcher searches an 8-byte key, then compares every byte: wanted digests that share a key
    (forged) are each matched to themselves, and a shard digest that shares the key but not the rest matches
    nothing."""
    rng = np.random.default_rng(3)
    wanted = rng.integers(0, 256, (6, 32), dtype=np.uint8)
    wanted[1:4, :8] = wanted[0, :8]  # four wanted digests with one key
    impostor = wanted[0].copy()
    impostor[-1] ^= 1
    shard = np.stack([wanted[3], impostor, wanted[5], rng.integers(0, 256, 32, dtype=np.uint8), wanted[0]])
    rows, found = DigestMatcher(wanted).match(shard)
    assert sorted(zip(rows.tolist(), found.tolist(), strict=True)) == [(0, 3), (2, 5), (4, 0)]


@pytest.mark.parametrize("forged", [False, True])
def test_distinct_texts_are_found_by_digest_even_when_their_keys_collide(forged: bool) -> None:
    """`SharedCorpus.unique` sorts 8-byte keys: each distinct text once, at its first document, in file order,
    and every document mapped to its own text; with every key forged equal, the whole digests still decide."""
    from specrun.core.corpus import SharedCorpus

    rng = np.random.default_rng(4)
    texts = [f"text {i}" for i in rng.integers(0, 300, 2_000)]
    corpus = SharedCorpus.from_lists([f"d{i}" for i in range(len(texts))], texts)
    if forged:
        digests = corpus.text_digests.copy()
        digests[:, :8] = 0
        object.__setattr__(corpus, "text_digests", digests)
    first, inverse = corpus.unique()
    distinct = list(dict.fromkeys(texts))
    assert [texts[i] for i in first.tolist()] == distinct
    assert [distinct[i] for i in inverse.tolist()] == texts


@pytest.mark.parametrize("window", [64, 1_000])
def test_a_corpus_encoded_in_windows_gives_the_numbers_of_one_window(
        window: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows much smaller than the corpus (with duplicate documents across them): every document gets its
    text's vector (the scores equal a run in one window, cold and warm), each text is encoded once, and each
    shard holds documents from one stretch of the file (its window), which is what lets the search read a chunk
    from a few shards."""
    from specrun.encoders import cached, corpus_encoding

    n_docs = 2_000
    data = tmp_path / "data"
    folder = make_large_beir(data, n_docs, 30)
    lines = (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    for i in range(0, n_docs, 97):  # duplicates far apart: document i repeats document 3
        lines[i] = json.dumps({"_id": f"d{i}", "text": json.loads(lines[3])["text"]})
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    texts = [json.loads(line)["text"] for line in lines]
    spec = corpus_spec(tmp_path, data, chunk_size=300)
    common = [str(spec), "--data-dir", str(data), "--adapter", "hashing", "--batch-size", "8", "-q"]
    whole = run_ok([*common, "--no-cache", "--output", str(tmp_path / "whole")], capsys)
    monkeypatch.setattr(corpus_encoding, "CORPUS_WINDOW_TEXTS", window)
    stored: list[bytes] = []
    store_digests = cached.EmbeddingCache.store_digests

    def recorded(self: cached.EmbeddingCache, digests: bytes, vectors: np.ndarray) -> object:
        if self.key.role == "document":
            stored.append(digests)
        return store_digests(self, digests, vectors)

    monkeypatch.setattr(cached.EmbeddingCache, "store_digests", recorded)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    cold = run_ok([*common, *cache, "--output", str(tmp_path / "cold")], capsys)
    warm = run_ok([*common, *cache, "--output", str(tmp_path / "warm")], capsys)
    assert cold.scores == warm.scores == whole.scores
    distinct = list(dict.fromkeys(texts))
    assert cold.texts.encoded - 30 == len(distinct) and warm.texts.encoded == 0
    first = {text_digest(text): i for i, text in reversed(list(enumerate(distinct)))}
    placed = [[first[shard[k:k + 32]] for k in range(0, len(shard), 32)] for shard in stored]
    assert sorted(i for shard in placed for i in shard) == list(range(len(distinct)))  # each text once
    assert all(max(shard) // window == min(shard) // window for shard in placed)  # within one window


@pytest.mark.parametrize("change", ["rewritten", "truncated"])
def test_a_corpus_file_changed_after_it_was_read_ends_the_run_in_one_line(
        change: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus is read again when its texts are encoded: a file edited in between (a document's text
    replaced, or the file cut short) is one line naming the file, exit 2, nothing written, no shard of the
    changed text; never the new text's vector under the old digest."""
    from specrun.encoders import cached

    data = tmp_path / "data"
    folder = make_large_beir(data, 500, 10)
    spec = corpus_spec(tmp_path, data)
    capsys.readouterr()
    corpus_path = folder / "corpus.jsonl"
    embeddings = cached.CachedEncoder.embeddings_of_variants

    def edited_first(self: cached.CachedEncoder, *args: object, **kwargs: object) -> object:
        content = corpus_path.read_text(encoding="utf-8")
        if change == "rewritten":
            lines = content.splitlines()
            lines[250] = json.dumps({"_id": "d250", "text": "X" * len(json.loads(lines[250])["text"])})
            corpus_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        else:
            corpus_path.write_text(content[:len(content) // 2], encoding="utf-8")
        return embeddings(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cached.CachedEncoder, "embeddings_of_variants", edited_first)
    out, cache = tmp_path / "out", tmp_path / "cache"
    code, _, err = run_cli([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--cache-dir", str(cache),
                            "--output", str(out), "-q"], capsys)
    assert_one_line_error(code, err, contains="the corpus changed while the run read it")
    assert str(corpus_path) in err and not out.exists()
    if change == "rewritten":  # the document in place, the same length: caught by its digest
        assert "is not the one read first" in err


@pytest.mark.slow
def test_a_100k_corpus_ranks_alike_in_one_chunk_and_in_chunks_from_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """100,000 synthetic documents through the CLI: one chunk with no cache, chunks of 7,000 read back from the
    store cold and warm; every query's measures (predictions.jsonl) and every score are the same numbers."""
    data = tmp_path / "data"
    make_large_beir(data, 100_000, 200)
    outputs = {}
    for name, chunk, flags in [("one chunk", 100_000, ["--no-cache"]),
                               ("cold", 7_000, ["--cache-dir", str(tmp_path / "cache")]),
                               ("warm", 7_000, ["--cache-dir", str(tmp_path / "cache")])]:
        (tmp_path / name).mkdir()
        spec = corpus_spec(tmp_path / name, data, chunk_size=chunk)
        results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "-q", "--output",
                          str(tmp_path / name / "out"), *flags], capsys)
        folder = next((tmp_path / name / "out").rglob("predictions.jsonl"))
        outputs[name] = (results.scores, folder.read_text(encoding="utf-8"))
    assert outputs["one chunk"] == outputs["cold"] == outputs["warm"]


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_odd_lines_read_as_the_text_reader_reads_them(ending: str, tmp_path: Path) -> None:
    """Lines of the corpus that are blank to `jsonl_lines` (white space, Unicode's too: a form feed, a no-break
    space) are skipped alike, every line ending text mode knows ends a line, and each document read again is
    its own line (never the blank lines after it): the texts, the ids and the error lines are the old reader's."""
    from specrun.readers.jsonl import jsonl_lines

    folder = make_large_beir(tmp_path, 40, 5)
    path = folder / "corpus.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    for at, blank in [(3, "\x0c"), (10, "\u00a0 "), (11, "\x0b"), (20, "   "), (30, "\x1c")]:
        lines.insert(at, blank)
    path.write_bytes(("\ufeff" + ending.join(lines) + ending + "\x0c").encode("utf-8"))
    expected = [record["text"] for _, record in jsonl_lines(path)]
    corpus = read_beir_corpus(folder, None, "test")[0]["corpus"]  # type: ignore[arg-type]
    assert corpus.texts() == expected and len(expected) == 40
    assert corpus.texts_at([39, 2, 3, 9]) == [expected[39], expected[2], expected[3], expected[9]]
    lines.insert(25, "{not json")
    path.write_bytes(ending.join(lines).encode("utf-8"))
    with pytest.raises(DataError) as old:
        list(jsonl_lines(path))
    with pytest.raises(DataError) as new:
        read_beir_corpus(folder, None, "test")  # type: ignore[arg-type]
    assert (new.value.message, new.value.line) == (old.value.message, old.value.line) == (
        new.value.message, 26)


def test_two_specs_sharing_documents_encode_each_text_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    """Two corpora in one invocation that share most documents: the shared texts are encoded (and counted)
    once, for the first spec, and the second spec's corpus reads them back from the store; its scores equal
    its own run alone."""
    import shutil

    import yaml

    from specrun.cli import main
    from specrun.results import Results

    data = tmp_path / "data"
    folder = make_large_beir(data, 600, 12)
    other = data / "othercorpus" / "data"
    shutil.copytree(folder, other)
    lines = (other / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    lines[:100] = [json.dumps({"_id": f"d{i}", "text": f"other text {i}"}) for i in range(100)]
    (other / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = corpus_spec(tmp_path, data)
    spec = load_plain(first.read_text(encoding="utf-8"))
    spec["id"] = spec["id"] + "-other"
    (tmp_path / "second").mkdir()
    second = tmp_path / "second" / "other.yaml"
    spec["sources"] = {"othercorpus": spec["sources"]["corpusset"]}  # the mirror's othercorpus/
    spec["splits"]["test"]["source"] = "othercorpus"
    second.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    assert main(["fingerprint", str(second), "--data-dir", str(data), "--no-cache", "--write"]) == 0
    common = ["--data-dir", str(data), "--adapter", "hashing", "-q", "--cache-dir", str(tmp_path / "cache")]
    capsys.readouterr()
    code, out, err = run_cli([str(first), str(second), *common, "--output", str(tmp_path / "both")], capsys)
    assert code == 0, err
    both = [Results.model_validate_json(Path(line).read_text()) for line in out.strip().splitlines()]
    distinct_first = len({json.loads(line)["text"] for line in
                          (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()})
    assert both[0].texts.encoded == distinct_first + 12
    assert both[1].texts.encoded == 100  # only its own documents; the queries and the rest were stored
    alone = run_ok([str(second), "--data-dir", str(data), "--adapter", "hashing", "-q", "--no-cache", "--output",
                    str(tmp_path / "alone")], capsys)
    assert both[1].scores == alone.scores
