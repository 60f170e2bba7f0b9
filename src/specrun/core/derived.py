"""Results derived from exact inputs (metric estimates, plots), cached beside the workspace that owns the folder,
under the sha256 of those inputs and of the libraries that compute them, each entry checked before use; and the
keyed checksum every cache file carries (the vector store's shards and info.json too)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from specrun.core.files import open_regular_file
from specrun.core.workspace import CacheWriter, Warn, Workspace

CACHE_FORMAT = 3  # 3: memory-mappable shards (2 wrote .npz chunks, now never read); part of every cache key
DERIVED_VERSIONS = ("specrun", "numpy", "scipy", "matplotlib")  # the libraries an estimate or a plot depends on


def keyed_hasher(key: str) -> Any:
    """The one checksum of every file the caches write (shards, info.json, derived entries): sha256 over the
    entry's key, a newline, then its payload, so an entry copied under another key fails like a damaged one.
    Returned open, for payloads that are streamed."""
    return hashlib.sha256(key.encode() + b"\n")


def keyed_checksum(key: str, payload: bytes) -> str:
    digest = keyed_hasher(key)
    digest.update(payload)
    return digest.hexdigest()


def remove_entry(path: Path) -> None:
    """A damaged entry removed: a file, or a folder in its place (else every later run would warn and go
    uncached again); one that cannot be removed is simply ignored next time."""
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def arrays_digest(digest: Any, arrays: Sequence[np.ndarray]) -> Any:
    """`digest` (a hashlib object) updated with each array as float64: its shape, then its bytes (the shape fixes
    how many bytes follow, so no two lists of arrays read alike). Returned for chaining."""
    for array in arrays:
        values = np.ascontiguousarray(array, dtype=np.float64)
        digest.update(str(values.shape).encode() + values.tobytes())
    return digest


def derived_cache(workspace: Workspace, versions: dict[str, str]) -> DerivedCache | None:
    """The workspace's cache of estimates and plots, keyed by the libraries they depend on (none with
    --no-cache)."""
    if workspace.derived is None:
        return None
    return DerivedCache(workspace.derived, {name: versions.get(name, "") for name in DERIVED_VERSIONS},
                        workspace.warn, workspace.writer)


DERIVED_LIMIT = 64 << 20  # an estimate or a plot is far smaller: a larger entry is not one


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
        return arrays_digest(digest, arrays).hexdigest()

    def get(self, key: str, what: str = "entry") -> bytes | None:
        """The payload stored under `key`, verified; None when absent or damaged (then reported and removed)."""
        path = self.folder / key
        if not path.exists() and not path.is_symlink():
            return None
        try:
            with open_regular_file(path) as handle:
                raw = handle.read(DERIVED_LIMIT + 1)
        except OSError as exc:
            self.discard(key, what, exc.strerror or "unreadable")
            return None
        if len(raw) > DERIVED_LIMIT:
            self.discard(key, what, f"over {DERIVED_LIMIT} bytes")
            return None
        header, newline, payload = raw.partition(b"\n")
        fields = header.split(b" ")
        if not newline or len(fields) != 2:
            reason = "unreadable"
        elif fields[0] != key.encode():
            reason = "written for another key"
        elif fields[1] != keyed_checksum(key, payload).encode():
            reason = "checksum mismatch"
        else:
            return payload
        self.discard(key, what, reason)
        return None

    def discard(self, key: str, what: str, reason: str) -> None:
        """Report and remove a damaged entry (also for a payload its reader cannot parse)."""
        self.warn(f"cache: ignored {what} {key[:12]} ({reason}); computed again")
        remove_entry(self.folder / key)

    def put(self, key: str, payload: bytes) -> None:
        header = f"{key} {keyed_checksum(key, payload)}\n".encode()
        self.writer.write(self.folder / key, header + payload)
