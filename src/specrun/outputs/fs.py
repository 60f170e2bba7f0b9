"""The filesystem steps every writer here takes: the atomic exchange (Linux renameat2), hidden sibling names,
fsynced files and folders. Writers call these through the module (`fs.write_new_file`), so a test patches one place."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

STAGING_TAG = ".tmp-"


OLD_TAG = ".old-"


LOCK_SUFFIX = ".lock"


_AT_FDCWD = -100


_RENAME_EXCHANGE = 2


_STEM_MAX = 200  # the hidden names add at most 14 characters; NAME_MAX is 255 on every common filesystem


def _load_renameat2() -> Any:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_renameat2 = _load_renameat2()


def exchange_paths(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths; False where the kernel or filesystem cannot (then the caller renames)."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def hidden_stem(name: str) -> str:
    """The model folder's name as used in its hidden siblings' names: shortened (deterministically) when long, so
    `.<stem>.tmp-<random>` still fits in NAME_MAX."""
    if len(os.fsencode(name)) <= _STEM_MAX:
        return name
    return name[:_STEM_MAX // 2] + "-" + hashlib.sha256(os.fsencode(name)).hexdigest()[:16]


def lock_path(folder: Path) -> Path:
    return folder.parent / f".{hidden_stem(folder.name)}{LOCK_SUFFIX}"


def hidden_sibling(folder: Path, tag: str) -> Path:
    return folder.parent / f".{hidden_stem(folder.name)}{tag}{secrets.token_hex(4)}"


def remove_path(path: Path) -> None:
    """Remove a file, a link or a whole folder, whatever is there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_new_file(path: Path, content: str | bytes) -> None:
    """One new file, written whole and fsynced."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
