"""One shard of the vector store: a JSON header line (key digest, count, dimension, checksum over key, shape,
digests and vectors) padded to 64 bytes, the raw sha256 of each text, then the float32 rows; written whole or not
at all, verified in one streamed pass before use, and read a row at a time when asked (`ShardRows`: positional
reads whose file state is checked around every read, never a memory map)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specrun.core.derived import keyed_checksum, keyed_hasher
from specrun.core.errors import CacheError
from specrun.core.files import open_regular_file

ROW_BITS = 32  # a text's place is one int, block << ROW_BITS | row: no tuple per text in the index


SHARD_SUFFIX = ".shard"


SHARD_MAGIC = "specrun-shard/1"


SHARD_ALIGN = 64  # the header is padded to this, so the vectors start aligned for a memory map


READ_BLOCK = 1 << 22


FileState = tuple[int, int, int, int, int]  # device, inode, size, mtime, ctime


RUN_GAP = 16  # wanted rows at most this far apart are read in one positional read with the rows between


def file_state(fd: int) -> FileState:
    state = os.fstat(fd)
    return state.st_dev, state.st_ino, state.st_size, state.st_mtime_ns, state.st_ctime_ns


class ShardChanged(CacheError):
    """A shard's file is not what was verified (rewritten, truncated, replaced or removed since)."""


@dataclass(frozen=True)
class ShardRows:
    """The float32 rows of a verified shard, read from the file when asked (`rows[indices]`), one positional read
    per run of nearby rows. The file's state (device, inode, size, mtime, ctime) is compared with the verified one
    before and after each read: any write moves ctime, so the rows returned are the verified bytes. When only ctime
    moved (another process changed its mode, links or attributes), the whole shard is verified again against its
    checksum and the run goes on if it still matches. This assumes a file system whose ctime moves with every
    write (Linux local file systems; on coarse timestamps a rewrite within one tick could go unseen)."""

    path: Path
    count: int
    dim: int
    offset: int  # where the vectors start
    state: FileState  # as verified
    key: str = ""  # the key digest and the header's checksum, to verify again
    checksum: str = ""

    @property
    def shape(self) -> tuple[int, int]:
        return self.count, self.dim

    def __len__(self) -> int:
        return self.count

    def _changed(self) -> ShardChanged:
        return ShardChanged(f"cache: shard {self.path.name} changed on disk after it was verified (rewritten, "
                            "truncated or replaced by another process); nothing was written: run again (every "
                            "shard is verified again then)", file=str(self.path.parent))

    def _same(self, fd: int) -> None:
        """The file is the verified one, or ShardChanged."""
        now = file_state(fd)
        if now == self.state:
            return
        if now[:4] != self.state[:4] or not self.checksum:
            raise self._changed()
        digest = keyed_hasher(self.key)  # only ctime moved: the bytes are verified again
        digest.update(shard_shape(self.count, self.dim))
        position = self.offset - 32 * self.count
        while block := os.pread(fd, READ_BLOCK, position):
            digest.update(block)
            position += len(block)
        if digest.hexdigest() != self.checksum or file_state(fd) != now:
            raise self._changed()
        object.__setattr__(self, "state", now)

    def __getitem__(self, rows: int | slice | np.ndarray | Sequence[int]) -> np.ndarray:
        if isinstance(rows, (int, np.integer)):
            return self[np.array([rows])][0]
        if isinstance(rows, slice):
            wanted = np.arange(self.count)[rows]
        else:
            given = np.asarray(rows)
            if given.ndim != 1 or (given.size and not np.issubdtype(given.dtype, np.integer)):
                raise IndexError("shard rows are asked for by a 1-D array of row numbers")
            wanted = given.astype(np.int64)
        out = np.empty((len(wanted), self.dim), dtype=np.float32)
        if not len(wanted):
            return out
        if wanted.min() < 0 or wanted.max() >= self.count:
            raise IndexError(f"rows outside the shard's {self.count}")
        unique, inverse = np.unique(wanted, return_inverse=True)
        read = np.empty((len(unique), self.dim), dtype=np.float32)
        row_bytes = 4 * self.dim
        cuts = np.flatnonzero(np.diff(unique) > RUN_GAP) + 1
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            raise self._changed() from None
        try:
            self._same(fd)
            for group in np.split(np.arange(len(unique)), cuts):
                first, last = int(unique[group[0]]), int(unique[group[-1]])
                size = (last - first + 1) * row_bytes
                data = os.pread(fd, size, self.offset + first * row_bytes)
                if len(data) != size:
                    raise self._changed()
                read[group] = np.frombuffer(data, dtype="<f4").reshape(-1, self.dim)[unique[group] - first]
            self._same(fd)
        except OSError:
            raise self._changed() from None
        finally:
            os.close(fd)
        out[:] = read[inverse.reshape(-1)]
        return out


Block = np.ndarray | ShardRows  # a group's vectors in memory (nothing cached) or a verified shard's


def shard_shape(count: int, dim: int) -> bytes:
    """What a shard's checksum covers before its digests and vectors."""
    return f"{count}\n{dim}\n".encode()


def encode_shard(key_digest: str, digests: bytes, vectors: np.ndarray) -> tuple[bytes, int]:
    """The bytes of a shard, and where its vectors start. The checksum covers key, shape, digests and vectors."""
    count, dim = vectors.shape
    body = digests + np.ascontiguousarray(vectors, dtype="<f4").tobytes()
    checksum = keyed_checksum(key_digest, shard_shape(count, dim) + body)
    header = json.dumps({"format": SHARD_MAGIC, "key": key_digest, "count": count, "dim": dim,
                         "checksum": checksum}).encode()
    size = -(-(len(header) + 1) // SHARD_ALIGN) * SHARD_ALIGN
    return header.ljust(size - 1) + b"\n" + body, size + len(digests)


class ShardError(Exception):
    """Why a shard cannot be used; the message is the reason reported."""


def read_shard_header(path: Path) -> tuple[dict[str, Any], int]:
    """The header of a shard and where its digests start; ShardError when it cannot be a whole shard."""
    try:
        with open_regular_file(path) as handle:
            head = handle.read(4096)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise ShardError(f"unreadable ({exc.strerror or type(exc).__name__})") from None
    line, newline, _ = head.partition(b"\n")
    try:
        header = json.loads(line.decode()) if newline else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        header = None
    if not isinstance(header, dict) or header.get("format") != SHARD_MAGIC or not all(
            isinstance(header.get(name), int) and 0 <= header[name] < 1 << ROW_BITS for name in ("count", "dim")):
        raise ShardError("unreadable (no shard header)")
    start = len(line) + 1
    if size != start + header["count"] * (32 + 4 * header["dim"]):
        raise ShardError("unreadable (truncated or extended)")
    return header, start
