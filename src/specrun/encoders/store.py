"""Caches for the encoder stage and after: vectors on disk keyed by everything that changes a vector, and
results derived from exact inputs (metric estimates, plots).

Layout: <root>/embeddings/<key digest>/ holds `key.json` (the key in clear), `info.json` (the adapter's settings,
so a fully cached run needs no model) and shards `*.shard`, one per finished group of batches: a JSON header line
(key digest, count, dimension, checksum over key, shape, digests and vectors) padded to 64 bytes, the raw sha256 of
each text, then the float32 rows. A reader keeps only the digests and reads the rows it is asked for when it is
asked (`ShardRows`, positional reads, never a memory map), so a run never holds a dict of every vector, a protocol
that asks for 50,000 rows reads those rows only, and a shard rewritten, truncated or replaced after it was verified
is one line (its file state is checked around every read), never a changed vector or a SIGBUS. A shard is
written to a temporary name and renamed (core.files.write_atomic), so a reader sees a whole shard or none: two
processes filling one cache add separate shards, and a killed process leaves at most an unreferenced temporary
file. A shard that holds a wanted text is verified (one streamed pass) before any of its rows is used; one that
fails its checks (truncated, altered, another key) is reported once, removed, and its texts are encoded again;
`info.json` and derived entries carry a checksum too and are treated the same way (a damaged info.json makes the
run load the model to state its settings again). No maintained library does verified, append-only vector caching
(diskcache/joblib trust a file because it exists, as JMTEB's cache does).

A cache that cannot be used at all (not a folder, read-only, under a missing home) stops the run before any work,
in one line (`core.workspace.open_cache_root`). A write that fails during the run (disk full, quota) is reported
once as a warning and the run continues without writing to the cache: the numbers do not depend on the cache, and
a half-written entry never exists because every write is atomic (`CacheWriter`).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specrun.core.corpus import DIGEST_BYTES, text_digest
from specrun.core.derived import CACHE_FORMAT, keyed_checksum, keyed_hasher, remove_entry
from specrun.core.errors import CacheError
from specrun.core.files import digest_of_files, folder_files, memo_sha256, open_regular_file
from specrun.core.settings import EncoderSettings
from specrun.core.workspace import CacheWriter, Warn
from specrun.encoders.shards import (
    READ_BLOCK,
    ROW_BITS,
    SHARD_SUFFIX,
    Block,
    FileState,
    ShardError,
    ShardRows,
    encode_shard,
    file_state,
    read_shard_header,
    shard_shape,
)


@dataclass(frozen=True)
class CacheKey:
    """Everything that changes a vector, besides the text itself."""

    model: str  # the weights' content digest (hub revision only when no weights were found)
    model_files: str  # digest over every file of the model folder: weights, configs, tokenizer, modules
    settings: EncoderSettings  # resolved (adapter chosen, prompts' texts); its keyed fields are in the key
    role: str = "symmetric"  # the model's path the texts went through (encode_query, encode_document, encode)
    prompt: str = ""  # the text put before each: what the view's prompt resolved to
    format: int = CACHE_FORMAT

    def fields(self) -> dict[str, Any]:
        """The key in clear, flat: what key.json holds and the digest is made of."""
        return {"model": self.model, "model_files": self.model_files, **self.settings.cache_fields(),
                "role": self.role, "prompt": self.prompt, "format": self.format}

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.fields(), sort_keys=True).encode()).hexdigest()


def model_files_hash(directory: Path, memo_dir: Path | None = None) -> str:
    """Digest over every file the loader may read (any depth, dot-folders in the path or not), by relative path
    and content; only version-control metadata below the model folder is skipped. Large files are hashed
    through the memo, so a warm run does not read the weights again."""
    return digest_of_files([(relative, memo_sha256(directory / relative, memo_dir))
                            for relative in folder_files(directory)])


def info_checksum(key_digest: str, info: dict[str, Any]) -> str:
    return keyed_checksum(key_digest, json.dumps(info, sort_keys=True).encode())


def place(block: int, row: int) -> int:
    return block << ROW_BITS | row


class Found(Mapping[str, np.ndarray]):
    """Cached vectors found for some texts, without a dict of vectors: blocks (verified shards or arrays) and, for
    each text, its place (`place(block, row)`). Reads as a mapping text -> vector, one row at a time."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.where: dict[str, int] = {}

    def add_block(self, block: Block) -> int:
        self.blocks.append(block)
        return len(self.blocks) - 1

    def __getitem__(self, text: str) -> np.ndarray:
        where = self.where[text]
        return np.asarray(self.blocks[where >> ROW_BITS][where & ((1 << ROW_BITS) - 1)])

    def __iter__(self) -> Iterator[str]:
        return iter(self.where)

    def __len__(self) -> int:
        return len(self.where)

    def __contains__(self, text: object) -> bool:
        return text in self.where


class DigestMatcher:
    """Finds which of a set of distinct sha256 digests a shard's digests are, with sorted arrays instead of a
    dict of every text: the first 8 bytes as an integer key, searched, then all 32 bytes compared."""

    def __init__(self, wanted: np.ndarray, rows: np.ndarray | None = None) -> None:
        """`wanted[rows]` (all of `wanted` without `rows`) are the digests looked for, read in place."""
        self.wanted = wanted
        self.rows = np.arange(len(wanted)) if rows is None else rows
        keys = _keys(wanted[self.rows, :8])
        self.order = np.argsort(keys, kind="stable")
        self.sorted = keys[self.order]

    def __len__(self) -> int:
        return len(self.rows)

    def _digests(self, index: np.ndarray) -> np.ndarray:
        return self.wanted[self.rows[index]]

    def match(self, digests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows of `digests`, indices into the wanted digests) of every row that is a wanted digest."""
        if not len(self.sorted) or not len(digests):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        keys = _keys(digests)
        lo = np.searchsorted(self.sorted, keys, side="left")
        hi = np.searchsorted(self.sorted, keys, side="right")
        rows = np.flatnonzero(hi > lo)
        single = rows[hi[rows] - lo[rows] == 1]  # one wanted digest with that key: compare its 32 bytes
        index = self.order[lo[single]]
        same = (self._digests(index) == digests[single]).all(axis=1)
        found_rows, found = [single[same]], [index[same]]
        for row in rows[hi[rows] - lo[rows] > 1].tolist():  # 8-byte keys shared by wanted digests: rare
            for at in range(lo[row], hi[row]):
                if (self._digests(self.order[at:at + 1])[0] == digests[row]).all():
                    found_rows.append(np.array([row]))
                    found.append(np.array([self.order[at]]))
        return np.concatenate(found_rows).astype(np.int64), np.concatenate(found).astype(np.int64)


def _keys(digests: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(digests[:, :8]).view("<u8").ravel()


class EmbeddingCache:
    """Vectors of one key, in append-only shards. `warn` is told once about each shard (or info.json) ignored."""

    def __init__(self, root: Path, key: CacheKey, warn: Warn, writer: CacheWriter | None = None) -> None:
        self.key = key
        self.folder = root / key.digest[:40]
        self.warn = warn
        self.writer = writer or CacheWriter(warn)
        key_file = self.folder / "key.json"
        if not key_file.exists():
            self.writer.write(key_file, json.dumps(key.fields(), indent=2))

    def shards(self) -> list[Path]:
        return sorted(self.folder.glob(f"*{SHARD_SUFFIX}"))

    def lookup(self, texts: Sequence[str]) -> Found:
        """Where the cached vectors of those texts are (`lookup_digests`, by each text's sha256)."""
        unique = list(dict.fromkeys(texts))
        found = Found()
        wanted = np.frombuffer(b"".join(text_digest(text) for text in unique), dtype=np.uint8)
        found.blocks, places = self.lookup_digests(wanted.reshape(len(unique), DIGEST_BYTES))
        found.where = {text: int(at) for text, at in zip(unique, places.tolist(), strict=True) if at >= 0}
        return found

    def lookup_digests(self, wanted: np.ndarray, rows: np.ndarray | None = None) -> tuple[list[Block], np.ndarray]:
        """The blocks holding cached vectors of those distinct digests ((M, 32) uint8, or the M rows `rows` of
        them, read in place) and each one's place (`place(block, row)`), -1 where none is cached. Only each
        shard's header and digests are read, plus, for a shard that holds a digest still wanted, one streamed
        pass to verify its checksum before any of its rows is used; vectors stay on disk, read when asked for
        (`ShardRows`). Nothing here is per text but arrays."""
        matcher = DigestMatcher(wanted, rows)
        places = np.full(len(matcher), -1, dtype=np.int64)
        blocks: list[Block] = []
        missing = len(matcher)
        dim: int | None = None
        for path in self.shards():
            if not missing:
                break
            try:
                header, start = read_shard_header(path)
                if header.get("key") != self.key.digest:
                    raise ShardError("written for another key")
                count = header["count"]
                if dim is not None and count and header["dim"] != dim:
                    raise ShardError(f"{header['dim']} dimensions, other shards {dim}")
                verified = self._verified_digests(path, header, start, matcher, places)
            except ShardError as exc:
                self._drop(path, str(exc))
                continue
            if verified is None:
                continue
            (rows, indices), state = verified
            blocks.append(ShardRows(path, count, header["dim"], start + 32 * count, state, self.key.digest,
                                    header["checksum"]))
            dim = header["dim"]
            new = places[indices] < 0
            rows, indices = rows[new], indices[new]
            indices, first = np.unique(indices, return_index=True)  # a text twice in a shard: its first row
            places[indices] = (len(blocks) - 1) << ROW_BITS | rows[first]
            missing -= len(indices)
        return blocks, places

    def _verified_digests(self, path: Path, header: dict[str, Any], start: int, matcher: DigestMatcher,
                          places: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], FileState] | None:
        """(rows of the shard, indices of the wanted digests they hold) and the file state they were verified in,
        when the shard holds a digest still wanted (its checksum then verified), else None."""
        count = header["count"]
        try:
            with open_regular_file(path) as handle:
                state = file_state(handle.fileno())
                if state[2] != start + count * (32 + 4 * header["dim"]):
                    raise ShardError("unreadable (truncated or extended)")
                handle.seek(start)
                digests = handle.read(32 * count)
                if len(digests) != 32 * count:
                    raise ShardError("unreadable (truncated or extended)")
                matched = matcher.match(np.frombuffer(digests, dtype=np.uint8).reshape(count, DIGEST_BYTES))
                if not (places[matched[1]] < 0).any():
                    return None
                checksum = keyed_hasher(self.key.digest)
                checksum.update(shard_shape(count, header["dim"]) + digests)
                for block in iter(lambda: handle.read(READ_BLOCK), b""):
                    checksum.update(block)
                if file_state(handle.fileno()) != state:
                    raise ShardError("changed while it was verified")
        except OSError as exc:
            raise ShardError(f"unreadable ({type(exc).__name__})") from None
        if header.get("checksum") != checksum.hexdigest():
            raise ShardError("checksum mismatch")
        return matched, state

    def _drop(self, shard: Path, reason: str) -> None:
        self.warn(f"cache: ignored {shard.name} ({reason}); its texts are encoded again")
        remove_entry(shard)

    def store(self, texts: Sequence[str], vectors: np.ndarray) -> ShardRows | None:
        """Write one shard atomically; its rows, to read back when asked instead of holding the vectors, when
        written (verified as any shard is: what is read back is what was written)."""
        return self.store_digests(b"".join(text_digest(text) for text in texts), vectors)

    def store_digests(self, digests: bytes, vectors: np.ndarray) -> ShardRows | None:
        """`store` for texts given by their digests (32 bytes each, one per row)."""
        count = len(digests) // DIGEST_BYTES
        if not count or not self.writer.enabled:
            return None
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        content, offset = encode_shard(self.key.digest, digests, vectors)
        path = self.folder / f"{uuid.uuid4().hex}{SHARD_SUFFIX}"
        if not self.writer.write(path, content):
            return None
        written = json.loads(content.partition(b"\n")[0])["checksum"]
        try:  # read back as any shard is read: what is used later is what was written
            header, start = read_shard_header(path)
            first = np.frombuffer(digests, dtype=np.uint8, count=DIGEST_BYTES).reshape(1, DIGEST_BYTES)
            verified = self._verified_digests(path, header, start, DigestMatcher(first),
                                              np.full(1, -1, dtype=np.int64))
            if verified is None or header["checksum"] != written:
                raise ShardError("other content")
        except ShardError as exc:
            raise CacheError(f"cache: the shard {path.name} just written changed before it was read back "
                             f"({exc}); is another process writing into {self.folder}? Nothing of it was used",
                             file=str(self.folder)) from None
        return ShardRows(path, count, vectors.shape[1], offset, verified[1], self.key.digest, written)

    def load_info(self) -> dict[str, Any] | None:
        """The adapter settings stored with this key, verified; None when absent or damaged (reported, removed)."""
        path = self.folder / "info.json"
        if not path.exists() and not path.is_symlink():
            return None
        try:
            with open_regular_file(path) as handle:
                raw = handle.read(1 << 20)
        except OSError:
            self.drop_info("unreadable: not a regular file")
            return None
        try:
            stored = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.drop_info("unreadable")
            return None
        if not isinstance(stored, dict) or not isinstance(stored.get("info"), dict):
            self.drop_info("unreadable")
        elif stored.get("key") != self.key.digest:
            self.drop_info("written for another key")
        elif stored.get("checksum") != info_checksum(self.key.digest, stored["info"]):
            self.drop_info("checksum mismatch")
        else:
            return stored["info"]
        return None

    def drop_info(self, reason: str) -> None:
        self.warn(f"cache: ignored info.json of {self.folder.name} ({reason}); the model is loaded to state its "
                  "settings again")
        remove_entry(self.folder / "info.json")

    def save_info(self, info: dict[str, Any]) -> None:
        stored = {"key": self.key.digest, "checksum": info_checksum(self.key.digest, info), "info": info}
        self.writer.write(self.folder / "info.json", json.dumps(stored, indent=2, sort_keys=True))
