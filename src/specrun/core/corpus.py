"""A corpus shared by many items: the documents of a BEIR-style set, read once and referenced by every query row,
so Q queries cost Q references, never Q x N texts.

What stays in memory is what a search and its measures need, never the documents: for each document the sha256
of its text (32 bytes, what the embedding store is indexed by) and where its text lies (`TextSource`: a byte
offset); the ids only of the documents the qrels judge. Texts are read
again from their source when they are encoded or published, and each one read is checked against its digest, so a
file changed during the run is one line, never another document's vector.

An item's fingerprint, a card cell or a published table shows the corpus as its content digest
(`corpus:<N> documents:sha256:<hex>`, the `fingerprint_value`), never as the whole corpus. Positions are file
order, which is also the tie order of corpus search."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, overload

import numpy as np

from specrun.core.errors import DataError

DIGEST_BYTES = 32  # sha256


def text_digest(text: str) -> bytes:
    """The raw sha256 of a text's UTF-8: what the embedding store indexes a vector by."""
    return hashlib.sha256(text.encode("utf-8")).digest()


class TextSource(Protocol):
    """Where a corpus' documents are read from, by position: (id, text) pairs in the order asked."""

    def read(self, positions: np.ndarray) -> list[tuple[str, str]]: ...


@dataclass(frozen=True)
class ListSource:
    """Documents held as lists (a kind's example, tests, small corpora)."""

    ids: Sequence[str]
    texts: Sequence[str]

    def read(self, positions: np.ndarray) -> list[tuple[str, str]]:
        return [(self.ids[p], self.texts[p]) for p in positions.tolist()]


class CorpusDigest:
    """The content digest of a corpus, fed one document at a time in file order."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.count = 0

    def add(self, doc_id: str, text: str) -> None:
        self._hash.update(json.dumps([doc_id, text], ensure_ascii=False).encode("utf-8"))
        self._hash.update(b"\n")
        self.count += 1

    def value(self) -> str:
        return f"corpus:{self.count} documents:sha256:{self._hash.hexdigest()}"


@dataclass(frozen=True, eq=False)
class SharedCorpus:
    """`text_digests` (N, 32) uint8, one row per document in file order; `position` maps the id of every
    document the qrels name (every document, for a corpus made from lists) to its position; `origin` names the
    source in error messages."""

    digest: str
    text_digests: np.ndarray
    position: Mapping[str, int]
    source: TextSource = field(repr=False)
    origin: str = ""

    @classmethod
    def from_lists(cls, ids: Sequence[str], texts: Sequence[str], origin: str = "") -> SharedCorpus:
        if len(ids) != len(texts):
            raise ValueError("a corpus needs one id per text")
        digest = CorpusDigest()
        for doc_id, text in zip(ids, texts, strict=True):
            digest.add(doc_id, text)
        return cls(digest=digest.value(), text_digests=digests_of(texts),
                   position={doc_id: i for i, doc_id in enumerate(ids)}, source=ListSource(list(ids), list(texts)),
                   origin=origin)

    def fingerprint_value(self) -> str:
        """What an item fingerprint hashes in the corpus' place: its content digest."""
        return self.digest

    def __str__(self) -> str:
        return self.digest

    def __len__(self) -> int:
        return len(self.text_digests)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SharedCorpus) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def texts_at(self, positions: np.ndarray | Sequence[int]) -> list[str]:
        """The texts at those positions, in that order, each checked against its digest."""
        positions = np.asarray(positions, dtype=np.int64)
        texts = [text for _, text in self.source.read(positions)]
        self._check(positions, texts)
        return texts

    def texts(self, start: int = 0, stop: int | None = None) -> list[str]:
        return self.texts_at(np.arange(start, len(self) if stop is None else stop))

    def rows(self, block: int = 65_536) -> Iterator[tuple[str, str]]:
        """Every (id, text) in file order, read a block at a time and checked."""
        for start in range(0, len(self), block):
            positions = np.arange(start, min(start + block, len(self)))
            pairs = self.source.read(positions)
            self._check(positions, [text for _, text in pairs])
            yield from pairs

    def slice(self, start: int, stop: int) -> CorpusSlice:
        """Documents start..stop as a sequence of texts, which an encoder stage that holds the corpus' vectors
        serves from them without reading a text."""
        return CorpusSlice(self, start, min(stop, len(self)))

    def unique(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions of each distinct text's first document, for each document the index of its text among
        those, both in file order): the corpus' texts embedded once each. Sorted by the digests' first 8 bytes
        as integers (8 bytes a document, not a copy of the digests); documents that share those are compared
        on all 32, and a key shared by distinct digests is ordered by the whole digest."""
        digests = self.text_digests
        keys = np.ascontiguousarray(digests[:, :8]).view("<u8").ravel()
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        pairs = np.flatnonzero(keys[1:] == keys[:-1])  # neighbours with one key: usually the same text
        del keys
        same = (digests[order[pairs]] == digests[order[pairs + 1]]).all(axis=1)
        if not same.all():  # a key shared by distinct digests (about 1 in 2^64 pairs): sort those runs wholly
            done = 0
            for start in np.unique(pairs[~same]).tolist():
                if start < done:
                    continue  # inside a run sorted already
                stop = start + 1
                while stop < len(order) and (digests[order[stop], :8] == digests[order[start], :8]).all():
                    stop += 1
                while start > 0 and (digests[order[start - 1], :8] == digests[order[start], :8]).all():
                    start -= 1
                run = order[start:stop]
                order[start:stop] = run[sorted(range(len(run)), key=lambda i: (digests[run[i]].tobytes(), run[i]))]
                done = stop
            same = (digests[order[pairs]] == digests[order[pairs + 1]]).all(axis=1)
        starts = np.ones(len(order), dtype=bool)
        starts[pairs[same] + 1] = False
        group = np.cumsum(starts) - 1  # each sorted document's distinct text, in key order
        first = order[starts]  # its first document: stable sorts keep positions ascending within a text
        by_position = np.argsort(first, kind="stable")  # distinct texts in file order of their first document
        rank = np.empty_like(by_position)
        rank[by_position] = np.arange(len(by_position))
        inverse = np.empty(len(order), dtype=np.int64)
        inverse[order] = rank[group]
        return first[by_position], inverse

    def _check(self, positions: np.ndarray, texts: list[str]) -> None:
        if len(texts) != len(positions) or (len(texts) and not np.array_equal(
                digests_of(texts), self.text_digests[positions])):
            raise DataError("the corpus changed while the run read it (a document read again is not the one "
                            "read first); nothing was scored", file=self.origin or None)


def digests_of(texts: Sequence[str]) -> np.ndarray:
    """(len(texts), 32) uint8: each text's sha256."""
    out = np.frombuffer(b"".join(text_digest(text) for text in texts), dtype=np.uint8)
    return out.reshape(len(texts), DIGEST_BYTES)


@dataclass(frozen=True)
class CorpusSlice(Sequence[str]):
    """Documents start..stop of a corpus, read as texts when indexed (each checked against its digest)."""

    corpus: SharedCorpus
    start: int
    stop: int

    def __len__(self) -> int:
        return max(0, self.stop - self.start)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        positions = np.arange(self.start, self.stop)[index]
        if isinstance(index, slice):
            return self.corpus.texts_at(positions)
        return self.corpus.texts_at([int(positions)])[0]

    def __iter__(self) -> Iterator[str]:
        for start in range(self.start, self.stop, 65_536):
            yield from self.corpus.texts(start, min(start + 65_536, self.stop))


def fingerprint_default(value: object) -> str:
    """`json.dumps(default=...)` for item fields: a value with a `fingerprint_value` hook stands for its digest."""
    hook = getattr(value, "fingerprint_value", None)
    if hook is None:
        raise TypeError(f"an item field of type {type(value).__name__} has no fingerprint_value()")
    return hook()
