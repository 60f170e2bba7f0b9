"""A corpus held in several files, parquet or JSON Lines, read in one streaming pass into a `SharedCorpus` that
holds no document (the hub's layout: a corpus config's split is one or more such files). Per document it keeps
its text's sha256 and where it lies: a byte offset for JSON Lines (as `corpus_file`), nothing for parquet, whose
documents are found again by row number (the row group that holds them, read a batch at a time)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from specrun.core.corpus import DIGEST_BYTES, CorpusDigest, SharedCorpus, text_digest
from specrun.core.errors import DataError, first_line
from specrun.readers.corpus_file import Document, FileSource, JudgedPositions, id_hash
from specrun.readers.jsonl import jsonl_at_offsets
from specrun.readers.parquet import BATCH_ROWS, read_parquet

COLUMNS = ("_id", "title", "text")  # what a document is made of; other columns are never decoded again


class ParquetSource:
    """Documents read back from one parquet file by row number: each row group that holds some is decoded a
    batch at a time, up to the last row asked for (one batch in memory, never the group)."""

    def __init__(self, path: Path, group_starts: np.ndarray, document: Document) -> None:
        self.path = path
        self.group_starts = group_starts  # first row of each row group, then the row count
        self.document = document

    def read(self, positions: np.ndarray) -> list[tuple[str, str]]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        out: list[tuple[str, str]] = [("", "")] * len(positions)
        if not len(positions):
            return out
        groups = np.searchsorted(self.group_starts, positions, side="right") - 1
        try:
            parquet = pq.ParquetFile(self.path)
            columns = [name for name in COLUMNS if name in parquet.schema_arrow.names]
            for group in np.unique(groups).tolist():
                where = np.flatnonzero(groups == group)
                local = positions[where] - self.group_starts[group]
                order = np.argsort(local, kind="stable")
                start, k = 0, 0
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=columns):
                    stop = start + batch.num_rows
                    last = k + int(np.searchsorted(local[order[k:]], stop))  # the rows asked for in this batch
                    rows = batch.take(pa.array(local[order[k:last]] - start)).to_pylist()
                    for index, row in zip(order[k:last].tolist(), rows, strict=True):
                        out[int(where[index])] = self._parsed(row, int(positions[where[index]]))
                    k = last
                    if k == len(order):
                        break
                    start = stop
            parquet.close()
        except (pa.ArrowException, OSError) as exc:
            raise DataError(f"the corpus cannot be read again ({first_line(exc)}); nothing was scored",
                            file=str(self.path)) from None
        return out

    def _parsed(self, row: dict[str, Any], position: int) -> tuple[str, str]:
        try:
            return self.document(row, self.path, position + 1)
        except DataError:
            raise DataError("the corpus changed while the run read it (a document read again no longer "
                            "parses); nothing was scored", file=str(self.path)) from None


class Segments:
    """Several sources one after another: position p is the document p - start of the part it falls in."""

    def __init__(self, parts: Sequence[tuple[int, Any]], total: int) -> None:
        self.starts = np.array([start for start, _ in parts] + [total], dtype=np.int64)
        self.parts = [part for _, part in parts]

    def read(self, positions: np.ndarray) -> list[tuple[str, str]]:
        positions = np.asarray(positions, dtype=np.int64)
        out: list[tuple[str, str]] = [("", "")] * len(positions)
        which = np.searchsorted(self.starts, positions, side="right") - 1
        for part in np.unique(which).tolist():
            where = np.flatnonzero(which == part)
            for at, pair in zip(where.tolist(), self.parts[part].read(positions[where] - self.starts[part]),
                                strict=True):
                out[at] = pair
        return out

    def id_at(self, position: int) -> str:
        return self.read(np.array([position]))[0][0]

    def where(self, position: int) -> tuple[Path, int]:
        """The file and the row (from 1) of a document, for an error message."""
        part = int(np.searchsorted(self.starts, position, side="right") - 1)
        return self.parts[part].path, position - int(self.starts[part]) + 1


class _Pass:
    """What one streaming pass over the corpus files gathers: per document its id hash and text digest."""

    def __init__(self) -> None:
        self.hashes = array("q")
        self.digests = bytearray()
        self.content = CorpusDigest()

    def add(self, doc_id: str, text: str) -> None:
        self.hashes.append(id_hash(doc_id))
        self.digests += text_digest(text)
        self.content.add(doc_id, text)


def _jsonl_part(path: Path, document: Document, gathered: _Pass) -> FileSource:
    offsets = array("q")
    for offset, number, record in jsonl_at_offsets(path):
        gathered.add(*document(record, path, number))
        offsets.append(offset)
    return FileSource(path, np.frombuffer(offsets, dtype=np.int64), document)


def _parquet_part(path: Path, document: Document, gathered: _Pass) -> ParquetSource:
    import pyarrow.parquet as pq

    for number, row in enumerate(read_parquet(path, None, ""), start=1):
        gathered.add(*document(row, path, number))
    meta = pq.read_metadata(path)
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    return ParquetSource(path, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64), document)


def read_corpus_files(files: Sequence[Path], document: Document) -> tuple[SharedCorpus, JudgedPositions]:
    """One pass over the files in order: a `SharedCorpus` whose `position` is the returned `JudgedPositions`
    (filled as the qrels ask; `seal` it after). A document id given twice is one line naming both rows."""
    gathered = _Pass()
    parts: list[tuple[int, Any]] = []
    for path in files:
        start = gathered.content.count
        reader = _parquet_part if path.suffix == ".parquet" else _jsonl_part
        parts.append((start, reader(path, document, gathered)))
    source = Segments(parts, gathered.content.count)
    judged = JudgedPositions(cast(FileSource, source), np.frombuffer(gathered.hashes, dtype=np.int64))
    _refuse_repeated_ids(source, judged)
    corpus = SharedCorpus(digest=gathered.content.value(),
                          text_digests=np.frombuffer(gathered.digests, dtype=np.uint8).reshape(-1, DIGEST_BYTES),
                          position=judged, source=source, origin=str(files[0].parent if len(files) > 1 else files[0]))
    return corpus, judged


def locate_all(judged: JudgedPositions, doc_ids: Iterable[str]) -> None:
    """Find many ids at once (the qrels' documents, before they are checked one by one): their candidate
    positions are read back in one sorted pass, so a parquet batch is decoded once, not once per judgment.
    What is found is remembered in `judged`; an id not found is left for its own lookup to refuse."""
    wanted = [doc_id for doc_id in dict.fromkeys(doc_ids) if doc_id not in judged.found]
    if not wanted or not len(judged.sorted):
        return
    keys = np.array([id_hash(doc_id) for doc_id in wanted], dtype=np.int64)
    lows = np.searchsorted(judged.sorted, keys, side="left")
    highs = np.searchsorted(judged.sorted, keys, side="right")
    candidates = np.unique(np.concatenate([judged.order[low:high] for low, high in zip(lows, highs, strict=True)]
                                          or [np.empty(0, dtype=np.int64)]))
    ids_at = dict(zip(candidates.tolist(), (doc_id for doc_id, _ in judged.source.read(candidates)), strict=True))
    for doc_id, low, high in zip(wanted, lows.tolist(), highs.tolist(), strict=True):
        for position in sorted(judged.order[low:high].tolist()):
            if ids_at[position] == doc_id:
                judged.found[doc_id] = position
                break


def _refuse_repeated_ids(source: Segments, judged: JudgedPositions) -> None:
    """Documents whose id hashes collide are read again; a real repeat is one line naming both places."""
    same = np.flatnonzero(judged.sorted[1:] == judged.sorted[:-1])
    if not len(same):
        return
    candidates = np.unique(np.concatenate([judged.order[same], judged.order[same + 1]]))
    first: dict[str, int] = {}
    for position, (doc_id, _) in zip(candidates.tolist(), source.read(candidates), strict=True):
        if doc_id in first:
            (file_a, row_a), (file_b, row_b) = source.where(first[doc_id]), source.where(position)
            earlier = f"row {row_a}" + ("" if file_a == file_b else f" of {file_a.name}")
            raise DataError(f"document id {doc_id!r} appears twice (first at {earlier})", file=str(file_b),
                            line=row_b)
        first[doc_id] = position
