"""A tree of files (hub files to -o) written all or nothing beside the folder it goes to."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from specrun.core.errors import OutputError
from specrun.outputs import fs
from specrun.outputs._sets import PendingSet, SetKind, make_parents, remove_created


def _tree_names(files: Mapping[str, str | bytes]) -> list[PurePosixPath]:
    names = [PurePosixPath(name) for name in files]
    for name in names:
        if name.is_absolute() or not name.parts or any(part in ("", ".", "..") for part in name.parts):
            raise ValueError(f"not a relative file path: {str(name)!r}")
    return names


def write_file_tree(folder: Path, files: Mapping[str, str | bytes], label: str) -> None:
    """Write files (relative paths, subfolders allowed) under `folder` all or nothing: every file is staged in a
    hidden sibling folder first. A folder that does not exist yet is the staged one renamed in; into an existing
    folder each file is renamed in, the file it replaces kept aside until all are in, and put back if one fails.
    Faults are one OutputError naming `label`; files already in `folder` that are not in `files` stay."""
    names = _tree_names(files)
    target = Path(os.path.realpath(folder) if os.path.isdir(folder) else os.path.abspath(folder))  # a link's folder
    unit = PendingSet(target, {}, SetKind(label, ("*",)))  # files already there stay: nothing is replaced whole
    make_parents(unit)
    staging: Path | None = None
    moved: list[tuple[Path, Path | None]] = []  # (target file, where the file it replaced went)
    current = str(folder)
    try:
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{fs.hidden_stem(target.name)}{fs.STAGING_TAG}"))
        os.chmod(staging, 0o777 & ~fs.current_umask())
        for name, content in zip(names, files.values(), strict=True):
            current = str(name)
            path = staging.joinpath(*name.parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            fs.write_new_file(path, content)
        fs.fsync_dir(staging)
        if not os.path.lexists(target):
            os.rename(staging, target)
            staging = None
            return
        for name in _move_in(staging, target, names, moved):
            current = str(name)
        moved.clear()
    except OSError as exc:
        _put_back(moved)
        raise OutputError(f"{label}: cannot write {current}: {exc.strerror or exc}; nothing was written "
                          "there") from None
    finally:
        if staging is not None:
            with contextlib.suppress(OSError):
                fs.remove_path(staging)
        if not os.path.lexists(target):
            remove_created([unit])


def _move_in(staging: Path, target: Path, names: list[PurePosixPath],
             moved: list[tuple[Path, Path | None]]) -> Iterator[PurePosixPath]:
    """Rename each staged file into the existing folder, yielding its name first; the file it replaces is kept
    aside under the staging folder, and every step is recorded in `moved` so that `_put_back` can undo it."""
    aside = staging / f".old{fs.STAGING_TAG}{secrets.token_hex(4)}"
    aside.mkdir()
    real_target = target.resolve()
    for index, name in enumerate(names):
        yield name
        destination = target.joinpath(*name.parts)
        if not destination.parent.resolve().is_relative_to(real_target):  # a link there leads out of -o
            raise OSError(errno.EXDEV, f"{name.parent} there is a link out of the folder")
        for parent in reversed(destination.parents):
            if parent != target and parent.is_relative_to(target) and not os.path.lexists(parent):
                parent.mkdir()
                moved.append((parent, None))
        kept = None
        if os.path.lexists(destination):
            if destination.is_dir() and not destination.is_symlink():
                raise OSError(errno.EISDIR, f"{name} is a folder there")
            kept = aside / str(index)
            os.rename(destination, kept)
        moved.append((destination, kept))
        os.rename(staging.joinpath(*name.parts), destination)


def _put_back(moved: list[tuple[Path, Path | None]]) -> None:
    """Undo `_move_in`: each moved file out again, each replaced file back, each folder made removed."""
    for destination, kept in reversed(moved):
        with contextlib.suppress(OSError):
            if kept is None and destination.is_dir():
                destination.rmdir()
                continue
            if os.path.lexists(destination) and not destination.is_dir():
                destination.unlink()
            if kept is not None:
                os.rename(kept, destination)
