"""Output folders checked before any work: names a filesystem takes, a root that is a folder and writable."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from specrun.core.errors import OutputError


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _path_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_PATH_MAX")
    except (OSError, ValueError):
        return 4096


def _existing_ancestor(path: Path) -> Path:
    """The nearest part of path that exists (path itself, a parent, ..., the filesystem root)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _check_names(path: Path, label: str) -> None:
    """Every component of an absolute path fits the filesystem's NAME_MAX, and the path PATH_MAX."""
    base = _existing_ancestor(path)
    limit = _name_max(base if base.is_dir() else base.parent)
    for part in path.parts[1:]:
        if len(os.fsencode(part)) > limit:
            raise OutputError(f"{label}: the name {part[:40]}... is {len(os.fsencode(part))} bytes long; "
                              f"this filesystem allows {limit}")
    if len(os.fsencode(str(path))) + 300 > _path_max(base if base.is_dir() else base.parent):
        raise OutputError(f"{label}: the path is {len(os.fsencode(str(path)))} bytes long; with the result files "
                          f"below it, it would pass this system's limit of {_path_max(base)}")


def preflight_output_root(root: Path) -> None:
    """Fail before any work when the results root cannot take files (a file, read-only, ...): one line, exit 2.
    Called by the runner at the start of a run. It creates nothing: a run that fails later leaves no folder."""
    label = f"--output {root}"
    path = Path(os.path.abspath(root))
    _check_names(path, label)
    base = _existing_ancestor(path)
    if not base.is_dir():
        where = "is a file" if base == path else f"{base} is a file"
        raise OutputError(f"{label}: {where}, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        reason = "read-only file system" if _read_only(base) else "permission denied"
        raise OutputError(f"{label}: cannot create files in {base} ({reason})")
    stats = os.statvfs(base)
    blocks = stats.f_bfree if os.geteuid() == 0 else stats.f_bavail
    if blocks == 0 or (stats.f_files > 0 and stats.f_favail == 0):
        raise OutputError(f"{label}: no space left on the device holding {base}")


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def preflight_output_folders(folders: Sequence[Path]) -> None:
    """The same checks for the set folders themselves, once the model (and so each folder's name) is known: a
    name too long, or a file where a folder must go. The runner may call it before encoding."""
    for folder in folders:
        path = Path(os.path.abspath(folder))
        _check_names(path, str(folder))
        for parent in (path.parent, path):
            if os.path.lexists(parent) and not parent.is_dir():
                raise OutputError(f"{folder}: {parent} is a file, not a folder")
