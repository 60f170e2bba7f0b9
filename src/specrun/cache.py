"""Caches for the encoder stage and after: vectors on disk keyed by everything that changes a vector, and
results derived from exact inputs (metric estimates, plots).

Layout: <root>/embeddings/<key digest>/ holds `key.json` (the key in clear), `info.json` (the adapter's settings,
so a fully cached run needs no model) and chunk files `*.npz`, each with its vectors, the sha256 of each text, the
key digest and a checksum over all of it. A chunk is written to a temporary name and renamed (files.write_atomic),
so a reader sees a whole chunk or none: two processes filling one cache add separate chunks, and a killed process
leaves at most an unreferenced temporary file. A chunk that fails its checks (truncated, altered, another key) is
reported once, removed, and its texts are encoded again; `info.json` and derived entries carry a checksum too and
are treated the same way (a damaged info.json makes the run load the model to state its settings again). No
maintained library does verified, append-only vector caching (diskcache/joblib trust a file because it exists, as
JMTEB's cache does).

A cache that cannot be used at all (not a folder, read-only, under a missing home) stops the run before any work,
in one line (`open_cache_root`). A write that fails during the run (disk full, quota) is reported once as a
warning and the run continues without writing to the cache: the numbers do not depend on the cache, and a
half-written entry never exists because every write is atomic (`CacheWriter`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specrun.errors import CacheError
from specrun.files import digest_of_files, folder_files, memo_sha256
from specrun.workspace import CacheWriter, Warn, open_cache_root

__all__ = ["CacheError", "CacheWriter", "open_cache_root"]  # re-exported: their home is the workspace

CACHE_FORMAT = 2

@dataclass(frozen=True)
class CacheKey:
    """Everything that changes a vector, besides the text itself."""

    model: str  # the weights' content digest (hub revision only when no weights were found)
    model_files: str  # digest over every file of the model folder: weights, configs, tokenizer, modules
    adapter: str
    prompt: str | None
    max_length: int | None  # the user's override; the model's own limit is in model_files
    dtype: str
    trust_remote_code: bool = False  # code from the model folder may compute the vectors
    format: int = CACHE_FORMAT

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


def model_files_hash(directory: Path, memo_dir: Path | None = None) -> str:
    """Digest over every file the loader may read (any depth, dot-folders in the path or not), by relative path
    and content; only version-control metadata below the model folder is skipped. Large files are hashed
    through the memo, so a warm run does not read the weights again."""
    return digest_of_files([(relative, memo_sha256(directory / relative, memo_dir))
                            for relative in folder_files(directory)])


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).hexdigest().encode("ascii")


def _checksum(key_digest: str, hashes: np.ndarray, vectors: np.ndarray) -> str:
    digest = hashlib.sha256(key_digest.encode())
    digest.update(hashes.tobytes())
    digest.update(np.ascontiguousarray(vectors).tobytes())
    return digest.hexdigest()


def _info_checksum(key_digest: str, info: dict[str, Any]) -> str:
    return hashlib.sha256((key_digest + "\n" + json.dumps(info, sort_keys=True)).encode()).hexdigest()


class EmbeddingCache:
    """Vectors of one key. `warn` is told once about each chunk (or info.json) that is ignored."""

    def __init__(self, root: Path, key: CacheKey, warn: Warn, writer: CacheWriter | None = None) -> None:
        self.key = key
        self.folder = root / key.digest[:40]
        self.warn = warn
        self.writer = writer or CacheWriter(warn)
        key_file = self.folder / "key.json"
        if not key_file.exists():
            self.writer.write(key_file, json.dumps(asdict(key), indent=2))

    def lookup(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors of those texts that have one (verified chunks only)."""
        wanted = {text_hash(text): text for text in texts}
        found: dict[str, np.ndarray] = {}
        for chunk in sorted(self.folder.glob("*.npz")):
            if len(found) == len(wanted):
                break
            try:
                with np.load(chunk, allow_pickle=False) as data:
                    hashes = data["hashes"]
                    needed = [i for i, h in enumerate(hashes) if h in wanted and wanted[h] not in found]
                    if not needed:
                        continue
                    vectors = data["vectors"]
                    meta = json.loads(bytes(data["meta"]).decode())
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
                self._drop(chunk, f"unreadable ({type(exc).__name__})")
                continue
            if not isinstance(meta, dict) or meta.get("key") != self.key.digest:
                self._drop(chunk, "written for another key")
                continue
            if meta.get("checksum") != _checksum(self.key.digest, hashes, vectors) or len(vectors) != len(hashes):
                self._drop(chunk, "checksum mismatch")
                continue
            for i in needed:
                found[wanted[hashes[i]]] = vectors[i]
        return found

    def _drop(self, chunk: Path, reason: str) -> None:
        self.warn(f"cache: ignored {chunk.name} ({reason}); its texts are encoded again")
        _remove(chunk)

    def store(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if not len(texts) or not self.writer.enabled:
            return
        hashes = np.array([text_hash(text) for text in texts], dtype="S64")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        meta = {"key": self.key.digest, "checksum": _checksum(self.key.digest, hashes, vectors), "count": len(texts)}
        payload = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, hashes=hashes, vectors=vectors, meta=payload)
        self.writer.write(self.folder / f"{uuid.uuid4().hex}.npz", buffer.getvalue())

    def load_info(self) -> dict[str, Any] | None:
        """The adapter settings stored with this key, verified; None when absent or damaged (reported, removed)."""
        path = self.folder / "info.json"
        try:
            raw = path.read_bytes()
        except OSError:
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
        elif stored.get("checksum") != _info_checksum(self.key.digest, stored["info"]):
            self.drop_info("checksum mismatch")
        else:
            return stored["info"]
        return None

    def drop_info(self, reason: str) -> None:
        self.warn(f"cache: ignored info.json of {self.folder.name} ({reason}); the model is loaded to state its "
                  "settings again")
        _remove(self.folder / "info.json")

    def save_info(self, info: dict[str, Any]) -> None:
        stored = {"key": self.key.digest, "checksum": _info_checksum(self.key.digest, info), "info": info}
        self.writer.write(self.folder / "info.json", json.dumps(stored, indent=2, sort_keys=True))


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):  # a damaged entry that cannot be removed is simply ignored next time
        path.unlink(missing_ok=True)


class DerivedCache:
    """Things computed from exact inputs (metric estimates, plots), stored under the sha256 of those inputs and of
    the library versions that compute them: a fully cached run needs neither scipy nor matplotlib. Each entry
    starts with a line of its own key and the sha256 of key and payload; one that does not match (truncated,
    edited, swapped with another, garbage) is reported once, removed and recomputed."""

    def __init__(self, folder: Path, versions: dict[str, str], warn: Warn | None = None,
                 writer: CacheWriter | None = None) -> None:
        self.folder = folder
        self.versions = versions
        self.warn: Warn = warn or (lambda message: None)
        self.writer = writer or CacheWriter(self.warn)

    def key(self, *parts: object, arrays: Sequence[np.ndarray] = ()) -> str:
        digest = hashlib.sha256(json.dumps([CACHE_FORMAT, self.versions, *parts], sort_keys=True).encode())
        for array in arrays:
            values = np.ascontiguousarray(array, dtype=np.float64)
            digest.update(str(values.shape).encode() + values.tobytes())
        return digest.hexdigest()

    @staticmethod
    def _entry_checksum(key: str, payload: bytes) -> str:
        return hashlib.sha256(key.encode() + b"\n" + payload).hexdigest()

    def get(self, key: str, what: str = "entry") -> bytes | None:
        """The payload stored under `key`, verified; None when absent or damaged (then reported and removed)."""
        try:
            raw = (self.folder / key).read_bytes()
        except OSError:
            return None
        header, newline, payload = raw.partition(b"\n")
        fields = header.split(b" ")
        if not newline or len(fields) != 2:
            reason = "unreadable"
        elif fields[0] != key.encode():
            reason = "written for another key"
        elif fields[1] != self._entry_checksum(key, payload).encode():
            reason = "checksum mismatch"
        else:
            return payload
        self.discard(key, what, reason)
        return None

    def discard(self, key: str, what: str, reason: str) -> None:
        """Report and remove a damaged entry (also for a payload its reader cannot parse)."""
        self.warn(f"cache: ignored {what} {key[:12]} ({reason}); computed again")
        _remove(self.folder / key)

    def put(self, key: str, payload: bytes) -> None:
        header = f"{key} {self._entry_checksum(key, payload)}\n".encode()
        self.writer.write(self.folder / key, header + payload)
