"""File helpers every stage shares: atomic writes, a file's sha256, and where specrun keeps its cache."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

CACHE_DIR_ENV = "SPECRUN_CACHE_DIR"


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write via a temporary file in the same folder and rename: readers see the old file or the new, never half.
    A killed writer leaves at most a hidden `.NAME.*.tmp` file, which nothing reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("wb", dir=path.parent,  # noqa: SIM115 - closed below
                                         prefix=f".{path.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(handle.name, 0o666 & ~umask)  # mkstemp makes 0600; these are ordinary files
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def cache_root() -> Path:
    """$SPECRUN_CACHE_DIR, else $XDG_CACHE_HOME/specrun, else ~/.cache/specrun."""
    base = os.environ.get(CACHE_DIR_ENV) or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "specrun"
    return Path(base)
