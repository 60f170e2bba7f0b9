"""A BEIR corpus.jsonl read in one streaming pass into a `SharedCorpus` that holds no document: per document its
byte offset and its text's sha256, nothing else; ids are kept only for the documents a qrels line names
(`JudgedPositions`). Texts are read again by offset when they are encoded or published, checked against their
digests (`SharedCorpus.texts_at`)."""

from __future__ import annotations

import hashlib
import os
import re
from array import array
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from specrun.core.corpus import DIGEST_BYTES, CorpusDigest, SharedCorpus, text_digest
from specrun.core.errors import DataError
from specrun.readers.jsonl import jsonl_at_offsets, parse_line

SPAN_BYTES = 1 << 22  # documents closer than this are read in one positional read
LINE_END = re.compile(rb"[\r\n]")  # JSON holds no raw line break inside a string: the first ends the line

Document = Callable[[Any, Path, int], tuple[str, str]]  # (record, file, line) -> (id, text), or one line


class FileSource:
    """Documents read back from corpus.jsonl by byte offset."""

    def __init__(self, path: Path, offsets: np.ndarray, document: Document) -> None:
        self.path = path
        self.offsets = offsets
        self.document = document

    def _ends(self, positions: np.ndarray, size: int) -> np.ndarray:
        following = positions + 1
        ends = np.full(len(positions), size, dtype=np.int64)
        inside = following < len(self.offsets)
        ends[inside] = self.offsets[following[inside]]
        return ends

    def read(self, positions: np.ndarray) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = [("", "")] * len(positions)
        if not len(positions):
            return out
        order = np.argsort(positions, kind="stable")
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise DataError(f"the corpus cannot be read again ({exc.strerror}); nothing was scored",
                            file=str(self.path)) from None
        try:
            size = os.fstat(fd).st_size
            starts = self.offsets[positions[order]]
            ends = self._ends(positions[order], size)
            first = 0
            while first < len(order):
                last = first  # one span: documents in order whose bytes lie within SPAN_BYTES of the first
                while last + 1 < len(order) and ends[last + 1] - starts[first] <= SPAN_BYTES:
                    last += 1
                base = int(starts[first])
                data = os.pread(fd, int(ends[last]) - base, base)
                for k in range(first, last + 1):
                    line = data[int(starts[k]) - base:int(ends[k]) - base]
                    end = LINE_END.search(line)  # its own line: blank lines before the next are not its
                    out[int(order[k])] = self._parsed(line[:end.start()] if end else line)
                first = last + 1
        finally:
            os.close(fd)
        return out

    def _parsed(self, line: bytes) -> tuple[str, str]:
        try:
            return self.document(parse_line(line, self.path, 0), self.path, 0)
        except DataError:
            raise DataError("the corpus changed while the run read it (a document read again no longer "
                            "parses); nothing was scored", file=str(self.path)) from None

    def id_at(self, position: int) -> str:
        return self.read(np.array([position]))[0][0]


class JudgedPositions(Mapping[str, int]):
    """id -> position for the ids asked about (the qrels' documents), found by a sorted array of id hashes and
    confirmed by reading the id at that position; what is found is remembered, so it ends as the judged ids'
    map. Iterating gives only those."""

    def __init__(self, source: FileSource, id_hashes: np.ndarray) -> None:
        self.source = source
        self.order = np.argsort(id_hashes, kind="stable")
        self.sorted = id_hashes[self.order]
        self.found: dict[str, int] = {}

    def seal(self) -> None:
        """Every id the run will ask about has been asked (the qrels are read): the id hashes are let go, and
        only the found ids remain (16 bytes a document fewer for the rest of the run)."""
        self.order = self.sorted = np.empty(0, dtype=np.int64)

    def locate(self, doc_id: str) -> int | None:
        if doc_id in self.found:
            return self.found[doc_id]
        key = id_hash(doc_id)
        at = int(np.searchsorted(self.sorted, key))
        while at < len(self.sorted) and self.sorted[at] == key:
            position = int(self.order[at])
            if self.source.id_at(position) == doc_id:
                self.found[doc_id] = position
                return position
            at += 1
        return None

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self.locate(doc_id) is not None

    def __getitem__(self, doc_id: str) -> int:
        position = self.locate(doc_id)
        if position is None:
            raise KeyError(doc_id)
        return position

    def __iter__(self) -> Iterator[str]:
        return iter(self.found)

    def __len__(self) -> int:
        return len(self.found)


def id_hash(doc_id: str) -> int:
    """A document id as a signed 64-bit integer, the same in every process (unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little", signed=True)


def line_number(path: Path, offset: int) -> int:
    """The line a byte offset lies on (for an error message: counted only then)."""
    with path.open("rb") as handle:
        return handle.read(offset).count(b"\n") + 1


def read_corpus_file(path: Path, document: Document) -> tuple[SharedCorpus, JudgedPositions]:
    """One pass over corpus.jsonl: a `SharedCorpus` whose `position` is the returned `JudgedPositions` (filled
    as the qrels ask). A document id given twice is one line naming the second one's line."""
    offsets, hashes = array("q"), array("q")
    digests = bytearray()
    content = CorpusDigest()
    for offset, number, record in jsonl_at_offsets(path):
        doc_id, text = document(record, path, number)
        offsets.append(offset)
        hashes.append(id_hash(doc_id))
        digests += text_digest(text)
        content.add(doc_id, text)
    source = FileSource(path, np.frombuffer(offsets, dtype=np.int64), document)
    id_hashes = np.frombuffer(hashes, dtype=np.int64)
    judged = JudgedPositions(source, id_hashes)
    _refuse_repeated_ids(path, source, judged)
    corpus = SharedCorpus(digest=content.value(),
                          text_digests=np.frombuffer(digests, dtype=np.uint8).reshape(-1, DIGEST_BYTES),
                          position=judged, source=source,
                          origin=str(path))
    return corpus, judged


def _refuse_repeated_ids(path: Path, source: FileSource, judged: JudgedPositions) -> None:
    """Documents whose id hashes collide are read again; a real repeat is one line at its second occurrence."""
    same = np.flatnonzero(judged.sorted[1:] == judged.sorted[:-1])
    if not len(same):
        return
    candidates = np.unique(np.concatenate([judged.order[same], judged.order[same + 1]]))
    first: dict[str, int] = {}
    repeats = []
    for position, (doc_id, _) in zip(candidates.tolist(), source.read(candidates), strict=True):
        if doc_id in first:
            repeats.append((position, doc_id))
        else:
            first[doc_id] = position
    if repeats:
        position, doc_id = min(repeats)
        raise DataError(f"document id {doc_id!r} appears twice", file=str(path),
                        line=line_number(path, int(source.offsets[position])))
