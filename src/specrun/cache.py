"""Caches for the encoder stage and after: vectors on disk keyed by everything that changes a vector, and
results derived from exact inputs (metric estimates, plots).

Layout: <root>/embeddings/<key digest>/ holds `key.json` (the key in clear), `info.json` (the adapter's settings,
so a fully cached run needs no model) and chunk files `*.npz`, each with its vectors, the sha256 of each text, the
key digest and a checksum over all of it. A chunk is written to a temporary name and renamed (files.write_atomic),
so a reader sees a whole chunk or none: two processes filling one cache add separate chunks, and a killed process
leaves at most an unreferenced temporary file. A chunk that fails its checks (truncated, altered, another key) is
reported once, removed, and its texts are encoded again. No maintained library does verified, append-only vector
caching (diskcache/joblib trust a file because it exists, as JMTEB's cache does).
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specrun.files import write_atomic

CACHE_FORMAT = 1
MODEL_FILES_SKIPPED = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".onnx", ".msgpack", ".md", ".gitattributes")


@dataclass(frozen=True)
class CacheKey:
    """Everything that changes a vector, besides the text itself."""

    model: str  # weights sha256, or hub revision when no weights file is recognised
    model_files: str  # sha256 over the model's other files: pooling, normalisation, tokenizer, max length
    adapter: str
    prompt: str | None
    max_length: int | None  # the user's override; the model's own limit is in model_files
    dtype: str
    format: int = CACHE_FORMAT

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


def model_files_hash(directory: Path) -> str:
    """sha256 over every file of a model directory except weights and docs, with their relative paths."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        if path.name.endswith(MODEL_FILES_SKIPPED) or any(part.startswith(".") for part in path.parts[-3:]):
            continue
        digest.update(str(path.relative_to(directory)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).hexdigest().encode("ascii")


def _checksum(key_digest: str, hashes: np.ndarray, vectors: np.ndarray) -> str:
    digest = hashlib.sha256(key_digest.encode())
    digest.update(hashes.tobytes())
    digest.update(np.ascontiguousarray(vectors).tobytes())
    return digest.hexdigest()


class EmbeddingCache:
    """Vectors of one key. `warn` is told once about each chunk that is ignored."""

    def __init__(self, root: Path, key: CacheKey, warn: Callable[[str], None]) -> None:
        self.key = key
        self.folder = root / key.digest[:40]
        self.warn = warn
        self.folder.mkdir(parents=True, exist_ok=True)
        key_file = self.folder / "key.json"
        if not key_file.exists():
            write_atomic(key_file, json.dumps(asdict(key), indent=2))

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
            if meta.get("key") != self.key.digest:
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
        chunk.unlink(missing_ok=True)

    def store(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if not len(texts):
            return
        hashes = np.array([text_hash(text) for text in texts], dtype="S64")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        meta = {"key": self.key.digest, "checksum": _checksum(self.key.digest, hashes, vectors), "count": len(texts)}
        payload = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        path = self.folder / f"{uuid.uuid4().hex}.npz"
        buffer = io.BytesIO()
        np.savez(buffer, hashes=hashes, vectors=vectors, meta=payload)
        write_atomic(path, buffer.getvalue())

    def load_info(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.folder / "info.json").read_text())
        except (OSError, json.JSONDecodeError):
            return None

    def save_info(self, info: dict[str, Any]) -> None:
        write_atomic(self.folder / "info.json", json.dumps(info, indent=2))


class DerivedCache:
    """Things computed from exact inputs (metric estimates, plots), stored under the sha256 of those inputs and of
    the library versions that compute them: a fully cached run needs neither scipy nor matplotlib. Each entry
    starts with its own key; one that does not is recomputed."""

    def __init__(self, folder: Path, versions: dict[str, str]) -> None:
        self.folder = folder
        self.versions = versions

    def key(self, *parts: object, arrays: Sequence[np.ndarray] = ()) -> str:
        digest = hashlib.sha256(json.dumps([CACHE_FORMAT, self.versions, *parts], sort_keys=True).encode())
        for array in arrays:
            values = np.ascontiguousarray(array, dtype=np.float64)
            digest.update(str(values.shape).encode() + values.tobytes())
        return digest.hexdigest()

    def get(self, key: str) -> bytes | None:
        try:
            raw = (self.folder / key).read_bytes()
        except OSError:
            return None
        header = key.encode() + b"\n"
        return raw[len(header):] if raw.startswith(header) else None

    def put(self, key: str, payload: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomic(self.folder / key, key.encode() + b"\n" + payload)
