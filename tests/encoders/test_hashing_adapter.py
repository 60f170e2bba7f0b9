"""The hashing adapter's vectors against a plain computation from its definition (blake2b of each lower-cased word
and character trigram, a signed count a slot, L2-normalised), bit for bit: the adapter sums each word's cached
counts instead, which must change no bit (the counts are whole numbers)."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import HashingAdapter

TEXTS = ["A cat sat on the mat.", "", "   ", "!!!", "a", "ab", "ab ab ab", "Straße und Äpfel", "日本語のテキスト",
         "x" * 700, "the the the", "query: a cat", "Don't split-words; 3.14 and 42", "\t\n", "ÀÉÎ õü"]


def plain(text: str, max_length: int, dimensions: int = 64) -> np.ndarray:
    words = re.findall(r"\w+", text.lower())[:max_length]
    features = words + [word[i:i + 3] for word in words for i in range(max(1, len(word) - 2))]
    vector = np.zeros(dimensions)
    for feature in features or [text]:
        value = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
        vector[value % dimensions] += 1.0 if value >> 63 else -1.0
    norm = np.linalg.norm(vector)
    return (vector / norm if norm else vector).astype(np.float32)


@pytest.mark.parametrize(("max_length", "prompt"), [(512, ""), (512, "query: "), (2, ""), (2, "passage: ")])
def test_vectors_equal_the_plain_definition_bit_for_bit(max_length: int, prompt: str) -> None:
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing", max_length=max_length), ["cpu"])
    got = adapter.encode_group(TEXTS, 4, prompt=prompt)
    want = np.stack([plain(prompt + text, max_length) for text in TEXTS])
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 64)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert adapter.encode_group([], 4).shape == (0, 64)


def test_a_group_of_long_texts_is_summed_in_runs_of_words_bit_for_bit_in_bounded_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The words' rows are gathered a run of whole texts at a time (WORD_ROWS words; a longer text alone): runs
    that split anywhere, empty texts between them and a text longer than a run give the plain definition's bits,
    and a group of 512 texts of 512 words holds a few MB at its peak (gathering all of them at once: 135 MB)."""
    import tracemalloc

    from specrun.encoders import adapters

    monkeypatch.setattr(adapters, "WORD_ROWS", 50)
    words = [f"w{i}x" for i in range(300)]
    texts = [" ".join(words[(7 * i) % 300:(7 * i) % 300 + n]) for i, n in enumerate([3, 0, 49, 50, 51, 120, 0, 1, 8])]
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    got = adapter.encode_group(["", *texts, "!!!"], 4)
    want = np.stack([plain(text, 512) for text in ["", *texts, "!!!"]])
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    monkeypatch.undo()
    group = [" ".join(f"t{(i * 13 + j) % 5000}" for j in range(512)) for i in range(512)]
    adapter.encode_group(group[:2], 4)  # the words' cached counts made outside the trace
    tracemalloc.start()
    try:
        adapter.encode_group(group, 4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24 * 2**20, peak
