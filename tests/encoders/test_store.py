"""The streaming store: vectors stay in shards on disk, a lookup reads only digests (and verifies a shard before
serving any of its rows), `Embeddings.embed` reads only the rows asked for, and a shard changed after it was
verified is refused at use, never read."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import EncoderInfo
from specrun.encoders.shards import ROW_BITS, ShardChanged, ShardRows, read_shard_header
from specrun.encoders.store import CacheKey, EmbeddingCache, text_digest
from specrun.encoders.vectors import Embeddings

KEY = CacheKey(model="a" * 64, model_files="b" * 64, settings=EncoderSettings(adapter="x"))
INFO = EncoderInfo(settings=EncoderSettings(adapter="x", max_length=8), pooling="none", normalize=False, device="cpu")


def filled(root: Path, count: int, dim: int, per_shard: int) -> tuple[EmbeddingCache, list[str], np.ndarray]:
    cache = EmbeddingCache(root, KEY, warn=print)
    texts = [f"text {i}" for i in range(count)]
    vectors = np.random.default_rng(0).standard_normal((count, dim)).astype(np.float32)
    for start in range(0, count, per_shard):
        cache.store(texts[start:start + per_shard], vectors[start:start + per_shard])
    return cache, texts, vectors


def embeddings_of(cache: EmbeddingCache, texts: list[str]) -> Embeddings:
    found = cache.lookup(texts)
    return Embeddings(blocks=found.blocks, row_of=found.where, info=INFO, encoded=frozenset())


def test_lookup_keeps_shards_on_disk_and_embed_gathers_rows_in_the_order_asked(tmp_path: Path) -> None:
    cache, texts, vectors = filled(tmp_path, 1000, 16, 128)
    assert len(cache.shards()) == 8
    wanted = [*texts[::-1][:700], "text 5", "text 5"]  # reversed, across shards, a duplicate
    found = cache.lookup(wanted)
    assert len(found) == 701 and all(isinstance(block, ShardRows) for block in found.blocks)
    embeddings = embeddings_of(cache, texts)
    rows = [texts.index(text) for text in wanted]
    assert np.array_equal(embeddings.embed(wanted), vectors[rows])
    assert embeddings.embed([]).shape == (0, 16)
    assert np.array_equal(found["text 5"], vectors[5])  # still reads as a mapping text -> vector
    number, row = divmod(found.where["text 5"], 1 << ROW_BITS)
    block, first = found.blocks[number], 5 - row  # shards hold consecutive texts here
    assert np.array_equal(block[np.array([3, 3, 100, 0, 127])], vectors[[first + r for r in (3, 3, 100, 0, 127)]])
    assert np.array_equal(block[10:20], vectors[first + 10:first + 20]) and block[[]].shape == (0, 16)


def _rewrite_in_place(path: Path) -> None:
    with path.open("r+b") as handle:  # same file, same size: only its bytes change
        handle.seek(-4, 2)
        handle.write(b"\0\0\x80\x7f")


@pytest.mark.parametrize("change", ["rewritten", "truncated", "replaced", "removed"])
def test_a_shard_changed_after_verification_is_refused_at_use(change: str, tmp_path: Path) -> None:
    """What was verified is what is read: a shard rewritten in place (the last vector made inf), truncated (a
    memory map would die of SIGBUS), replaced by a copy or removed after the lookup is one CacheError line."""
    cache, texts, vectors = filled(tmp_path, 300, 8, 100)
    embeddings = embeddings_of(cache, texts)
    assert np.array_equal(embeddings.embed(texts), vectors)
    victim = cache.shards()[0]
    if change == "rewritten":
        _rewrite_in_place(victim)
    elif change == "truncated":
        with victim.open("r+b") as handle:
            handle.truncate(victim.stat().st_size // 2)
    elif change == "replaced":
        copy = victim.with_suffix(".copy")
        copy.write_bytes(victim.read_bytes())
        copy.replace(victim)
    else:
        victim.unlink()
    with pytest.raises(ShardChanged, match="changed on disk after it was verified"):
        embeddings.embed(texts)


def test_a_shard_without_a_wanted_text_is_not_read_past_its_digests(tmp_path: Path) -> None:
    cache, texts, _ = filled(tmp_path, 300, 8, 100)
    messages: list[str] = []
    last = cache.shards()
    owner = {path: read_shard_header(path)[0]["count"] for path in last}
    assert set(owner.values()) == {100}
    found = EmbeddingCache(tmp_path, KEY, warn=messages.append).lookup(texts[:10])
    assert len(found) == 10 and len(found.blocks) == 1 and messages == []


def test_a_damaged_shard_costs_only_its_own_texts(tmp_path: Path) -> None:
    cache, texts, vectors = filled(tmp_path, 300, 8, 100)
    victim = cache.shards()[1]
    header, start = read_shard_header(victim)
    digests = victim.read_bytes()[start:start + 32 * header["count"]]
    owned = {digests[i:i + 32] for i in range(0, len(digests), 32)}
    lost = {text for text in texts if text_digest(text) in owned}
    raw = bytearray(victim.read_bytes())
    raw[-1] ^= 0x01  # one bit of one vector
    victim.write_bytes(bytes(raw))
    messages: list[str] = []
    found = EmbeddingCache(tmp_path, KEY, warn=messages.append).lookup(texts)
    assert len(messages) == 1 and "checksum mismatch" in messages[0] and not victim.exists()
    assert set(texts) - set(found) == lost and len(lost) == 100
    survivors = [text for text in texts if text in found]
    assert np.array_equal(embeddings_of(cache, survivors).embed(survivors),
                          vectors[[texts.index(text) for text in survivors]])


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_asking_for_a_slice_never_materialises_the_whole_matrix(tmp_path: Path) -> None:
    """A protocol asking for 15,000 of 60,000 vectors: peak Python-tracked memory is that slice plus the index,
    not the 60,000 x 384 matrix (92 MB) the dict-based cache built, twice, before."""
    count, dim = 60_000, 384
    cache, texts, vectors = filled(tmp_path, count, dim, 8192)
    full = vectors.nbytes
    del vectors
    tracemalloc.start()
    embeddings = embeddings_of(cache, texts)
    index_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    part = embeddings.embed(texts[20_000:35_000])
    slice_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert part.shape == (15_000, dim)
    assert index_peak < full / 4, (index_peak, full)
    assert slice_peak < index_peak + 3 * part.nbytes, (slice_peak, part.nbytes)
    assert slice_peak < full, (slice_peak, full)


def test_a_mode_change_by_another_process_is_verified_again_not_refused(tmp_path: Path) -> None:
    """chmod moves ctime but not a byte: the shard is verified again and serves its rows; a rewrite after the
    chmod is still refused."""
    import os

    cache, texts, vectors = filled(tmp_path, 300, 8, 100)
    embeddings = embeddings_of(cache, texts)
    for shard in cache.shards():
        os.chmod(shard, 0o600)
    assert np.array_equal(embeddings.embed(texts), vectors)
    _rewrite_in_place(cache.shards()[0])
    with pytest.raises(ShardChanged):
        embeddings.embed(texts)


def test_a_shard_swapped_right_after_it_was_written_is_one_cache_error(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process replaces the shard between its rename and its read-back: one CacheError line, never a
    shard whose rows are not the ones just written."""
    from specrun.core.errors import CacheError
    from specrun.core.workspace import CacheWriter

    cache, _, _ = filled(tmp_path, 100, 8, 100)
    other = cache.shards()[0].read_bytes()
    write = CacheWriter.write

    def write_then_swap(self: CacheWriter, path: Path, content: str | bytes) -> bool:
        done = write(self, path, content)
        path.write_bytes(other)  # a whole, valid shard of the same key, with other texts
        return done

    monkeypatch.setattr(CacheWriter, "write", write_then_swap)
    with pytest.raises(CacheError, match="changed before it was read back"):
        cache.store(["new text"], np.ones((1, 8), dtype=np.float32))


def test_shard_rows_take_row_numbers_only(tmp_path: Path) -> None:
    cache, texts, _ = filled(tmp_path, 100, 8, 100)
    block = cache.lookup(texts).blocks[0]
    for bad in (np.ones(100, dtype=bool), np.array([0.5]), np.zeros((2, 2), dtype=np.int64)):
        with pytest.raises(IndexError):
            block[bad]
