"""The one owner of specrun's disk state: embeddings, derived estimates and plots, remembered file hashes and
downloads, all under one root resolved once from --cache-dir, $SPECRUN_CACHE_DIR, $XDG_CACHE_HOME or $HOME.

With --no-cache nothing persistent is written anywhere: no cache, no hash memo, and downloads go to a temporary
folder removed when the process ends. Every stage that needs disk state receives the workspace; none computes a
path of its own.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from specrun.core.errors import CacheError, first_line, os_error_text
from specrun.core.files import cache_root_origin, probe_writable_dir, write_atomic

Warn = Callable[[str], None]


def warn_stderr(message: str) -> None:
    print(f"specrun: warning: {message}", file=sys.stderr)


class CacheWriter:
    """Every cache write goes through here. The first failure (a full disk, a quota) is reported once and turns
    writing off for the rest of the run: the run goes on and its results are the same, only not cached.
    Nothing half-written stays behind, since each write is atomic (core.files.write_atomic)."""

    def __init__(self, warn: Warn) -> None:
        self.warn = warn
        self.enabled = True

    def write(self, path: Path, content: str | bytes) -> bool:
        if not self.enabled:
            return False
        try:
            write_atomic(path, content)
            return True
        except OSError as exc:
            self.enabled = False
            reason = os_error_text(exc) if exc.filename else f"{path}: {exc.strerror or first_line(exc)}"
            self.warn(f"cache: cannot write {reason}; this run continues without caching")
            return False


def open_cache_root(root: Path, origin: str) -> Path:
    """Check, before any work, that `root` (chosen by `origin`: --cache-dir, $SPECRUN_CACHE_DIR, $XDG_CACHE_HOME
    or $HOME) can hold the cache; one line naming the path otherwise. A missing home is never created."""
    advice = "pass --cache-dir DIR or --no-cache"
    if origin == "$HOME":
        home = root.parent.parent
        if not home.is_dir():
            state = "is not a directory" if home.exists() else "does not exist"
            raise CacheError(f"cannot keep the cache in {root}: the home directory {home} ($HOME) {state}; {advice}")
    if root.exists() and not root.is_dir():
        raise CacheError(f"cache directory {root} ({origin}) is a file, not a directory; {advice}")
    try:
        probe_writable_dir(root)
    except OSError as exc:
        raise CacheError(f"cache directory {root} ({origin}) cannot be written: {os_error_text(exc)}; "
                         f"{advice}") from None
    return root


@dataclass
class Workspace:
    """Where disk state lives for one invocation; `root` None means --no-cache."""

    root: Path | None
    origin: str
    warn: Warn = warn_stderr
    writer: CacheWriter = field(init=False)
    _checked: bool = field(default=False, init=False)
    _scratch: Path | None = field(default=None, init=False)
    _vectors: Path | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.writer = CacheWriter(self.warn)

    @classmethod
    def resolve(cls, cache_dir: str | None = None, no_cache: bool = False, warn: Warn = warn_stderr) -> Workspace:
        """The workspace the flags and environment name; nothing on disk is touched yet."""
        if no_cache:
            return cls(None, "--no-cache", warn)
        if cache_dir:
            return cls(Path(cache_dir), "--cache-dir", warn)
        root, origin = cache_root_origin()
        return cls(root, origin, warn)

    def check(self) -> Workspace:
        """Prove the root usable (one line naming it otherwise); done once, before any work that needs it."""
        if self.root is not None and not self._checked:
            open_cache_root(self.root, self.origin)
            self._checked = True
        return self

    @property
    def persistent(self) -> bool:
        return self.root is not None

    def _folder(self, name: str) -> Path | None:
        return None if self.root is None else self.check().root / name  # type: ignore[operator]

    @property
    def embeddings(self) -> Path | None:
        return self._folder("embeddings")

    @property
    def derived(self) -> Path | None:
        return self._folder("derived")

    @property
    def memo(self) -> Path | None:
        """Remembered sha256 of large files (model weights), keyed by file state."""
        return self._folder("file-hashes")

    def downloads(self) -> Path:
        """Downloaded source files: in the cache, or (with --no-cache) a folder removed when the process ends."""
        folder = self._folder("git")
        if folder is not None:
            return folder
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="specrun-downloads-"))
            scratch = self._scratch
            atexit.register(lambda: shutil.rmtree(scratch, ignore_errors=True))
        return self._scratch

    def scratch_vectors(self) -> Path | None:
        """With --no-cache, where this run's vectors wait on disk until it ends (a folder in $TMPDIR removed when
        the run or the process ends), so that a run never holds every vector in memory, cached or not; None with a
        cache, whose embeddings folder is that place, or when no temporary folder can be made."""
        if self.root is not None:
            return None
        if self._vectors is None:
            try:
                self._vectors = Path(tempfile.mkdtemp(prefix="specrun-vectors-"))
            except OSError:  # no writable temporary folder: the run's vectors stay in memory, as they fit or not
                return None
            vectors = self._vectors
            atexit.register(lambda: shutil.rmtree(vectors, ignore_errors=True))
        return self._vectors

    def close(self) -> None:
        for scratch in (self._scratch, self._vectors):
            if scratch is not None:
                with contextlib.suppress(OSError):
                    shutil.rmtree(scratch)
        self._scratch = self._vectors = None
