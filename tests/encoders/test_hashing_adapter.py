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
