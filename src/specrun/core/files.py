"""File helpers every stage shares: atomic writes, a file's sha256 (remembered per file state), the files of a
folder, and where specrun keeps its cache."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from specrun.core.errors import DataError, SpecrunError

CACHE_DIR_ENV = "SPECRUN_CACHE_DIR"
VCS_FOLDERS = frozenset({".git", ".hg", ".svn"})
MEMO_MIN_BYTES = 1 << 20  # smaller files are read again: cheaper than a memo lookup, and no memo file per config


def folder_safe(text: str) -> str:
    """`text` in the characters a result folder's name may hold: every other run of characters becomes '-'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text)


def write_atomic(path: Path, content: str | bytes, *, mode: int | None = None,
                 before_replace: Callable[[], None] | None = None) -> None:
    """Write via a temporary file in the same folder and rename: readers see the old file or the new, never half.
    A killed writer leaves at most a hidden `.NAME.*.tmp` file, which nothing reads. `mode` is the new file's
    permission bits (default: 0666 less the umask); `before_replace` runs just before the rename and may raise to
    leave the old file as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("wb", dir=path.parent,  # noqa: SIM115 - closed below
                                         prefix=f".{path.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes 0600; these are ordinary files
        os.chmod(handle.name, mode)
        if before_replace is not None:
            before_replace()
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def read_regular_file(path: Path, limit: int, what: str, *, error: type[SpecrunError] = SpecrunError,
                      shown: str | None = None) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, for everything specrun reads back whole (specs,
    results, predictions). A FIFO, a device (/dev/zero) or a folder is refused from its stat, before it is opened,
    so a read never blocks or runs forever; the file is opened non-blocking and re-checked, in case it was swapped
    in between. Faults raise `error` naming the file as `shown` (default: the path)."""
    name = shown or str(path)
    try:
        before = os.stat(path)
    except OSError as exc:
        raise error(f"cannot read {what} ({exc.strerror})", file=name) from None
    except ValueError:  # a NUL in a path read from a file
        raise error(f"cannot read {what} (not a valid path)", file=repr(name)) from None
    if not stat.S_ISREG(before.st_mode):
        raise error(f"{what} is not a regular file", file=name)
    too_big = f"over the {limit}-byte limit ({what} is at most {limit} bytes)"
    if before.st_size > limit:
        raise error(f"{what} is {before.st_size} bytes, {too_big}", file=name)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise error(f"cannot read {what} ({exc.strerror})", file=name) from None
    with os.fdopen(fd, "rb") as handle:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            raise error(f"{what} changed while being read", file=name)
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read {what} ({exc.strerror})", file=name) from None
    if len(data) > limit:
        raise error(f"{what} grew {too_big} while being read", file=name)
    return data


def open_regular_file(path: Path) -> BinaryIO:
    """Open a file specrun itself wrote (a cache entry, a memo) for reading, refusing anything that is not a
    regular file without blocking: a FIFO planted in the cache would otherwise hang the open, /dev/zero behind a
    link would read forever. Raises OSError, which every cache reader treats as a damaged entry."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


_SAID_DAMAGED: set[Path] = set()
_HASHED_HERE: dict[str, str] = {}  # file state -> the digest this process read: a memo that no disk fault reaches
# A file changed less than this before it was read is not remembered in the process: a rewrite within one tick of
# a coarse file clock (4 ms on many kernels) keeps its size, times and inode, so its state would not tell (git's
# "racy" entries). Files of a model folder are older than this by the time a run reads them.
RACY_NS = 2_000_000_000


def _damaged(memo: Path, path: Path) -> None:
    """A memo entry that cannot be believed is said once per process, then replaced: never silently."""
    if memo not in _SAID_DAMAGED:
        _SAID_DAMAGED.add(memo)
        print(f"specrun: warning: {memo}: a damaged hash memo entry for {path}; hashing the file again and "
              "replacing the entry", file=sys.stderr)


def memo_sha256(path: Path, memo_dir: Path | None) -> str:
    """sha256 of a file, remembered in `memo_dir` per file state (device, inode, size, mtime, ctime, path) as git's
    index does, so a fully cached run does not read 100 MB of weights again. Any write to the file changes its
    ctime, hence its state. An entry holds the digest and a checksum over state and digest, so a damaged entry is
    said once and hashed again, never read as another digest. A file state this process hashed already (a
    suite's members, a new cache folder, runs without a memo folder) is not read again, unless the file had just
    changed when it was read (RACY_NS). Without a memo folder (--no-cache) nothing is written."""
    stated_at = time.time_ns()
    stat = path.stat()
    if stat.st_size < MEMO_MIN_BYTES:
        return sha256_file(path)
    state = f"{stat.st_dev}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{path.resolve()}"
    if memo_dir is None:
        return _HASHED_HERE.get(state) or _remembered(state, sha256_file(path), stated_at, stat)
    memo = memo_dir / hashlib.sha256(state.encode()).hexdigest()

    def checked(digest: str) -> str:
        return digest + " " + hashlib.sha256(f"{state}\n{digest}".encode()).hexdigest()

    remembered = None
    try:
        with open_regular_file(memo) as handle:
            known = handle.read(200).decode().strip()
        digest = known.partition(" ")[0]
        if len(digest) == 64 and known == checked(digest):
            return digest
        _damaged(memo, path)
    except FileNotFoundError:
        remembered = _HASHED_HERE.get(state)  # no entry (a new memo folder): this process read this state before
    except (OSError, UnicodeDecodeError):
        _damaged(memo, path)
    digest = remembered or _remembered(state, sha256_file(path), stated_at, stat)
    with contextlib.suppress(OSError):  # a full cache only costs the hash again next time
        write_atomic(memo, checked(digest))
    return digest


def _remembered(state: str, digest: str, stated_at: int, stat: os.stat_result) -> str:
    """`digest`, kept in the process for `state` unless the file had just changed when it was read."""
    if stated_at - max(stat.st_mtime_ns, stat.st_ctime_ns) > RACY_NS:
        _HASHED_HERE[state] = digest
    return digest


def folder_files(directory: Path) -> list[Path]:
    """Every file below `directory` (relative paths, sorted), at any depth, hidden ones included, except
    version-control metadata below it (.git, .hg, .svn). Symbolic links are followed, to files (hub snapshots are
    links into a blob store) and to folders (a loader reads through them, so a key must too), wherever they point:
    what counts is what a loader would read. Each real folder is walked once (a second link to it adds nothing a
    change could hide behind: its files are the same files), and a link back to a folder above it (a loop) is
    one line. The walk is iterative, so no depth of folders exhausts the stack, and it lists each folder by its
    real path, so no lookup crosses more than one entry's links: a path through a web of folder links crosses one
    link per folder, and Linux refuses more than 40 links in one lookup, counted across its retries (a lookup
    retried under concurrent file activity counts the links of its first try again), so a walk by such paths
    failed now and then on a loaded machine."""
    found: list[Path] = []
    top = directory.stat()
    walked = {(top.st_dev, top.st_ino)}
    pending: list[tuple[str, Path, frozenset[tuple[int, int]]]] = [(str(directory), Path(), frozenset(walked))]
    while pending:
        real, logical, ancestors = pending.pop()
        try:
            entries = sorted(os.scandir(real), key=lambda entry: entry.name)
        except OSError as exc:
            raise SpecrunError(f"cannot list a folder ({exc.strerror})", file=str(directory / logical)) from None
        for entry in entries:
            relative = logical / entry.name
            try:
                is_dir = entry.is_dir()  # follows links
                is_file = not is_dir and entry.is_file()
                state = os.stat(entry.path) if is_dir else None
            except OSError as exc:  # e.g. more links in a row than the system follows: no loader reads it either
                raise SpecrunError(f"cannot follow {relative.as_posix()} ({exc.strerror})",
                                   file=str(directory)) from None
            if is_file:
                found.append(relative)
            elif state is not None and entry.name not in VCS_FOLDERS:
                node = (state.st_dev, state.st_ino)
                if node in ancestors:
                    raise SpecrunError(f"{relative.as_posix()} links back to a folder above it (a loop); remove "
                                       "the link", file=str(directory))
                if node not in walked:
                    walked.add(node)
                    pending.append((os.path.realpath(entry.path), relative, ancestors | {node}))
    return sorted(found, key=lambda p: p.as_posix())


def folder_state(directory: Path) -> str:
    """A digest of every file's state below `directory` (relative path, device, inode, size, mtime, ctime, links
    followed): taken before a folder is hashed and again after it is loaded, it shows any write, replacement,
    addition or removal in between (a write always moves ctime), without reading the files again."""
    digest = hashlib.sha256()
    for relative in folder_files(directory):
        try:
            state = (directory / relative).stat()
        except OSError:
            digest.update(relative.as_posix().encode("utf-8") + b"\0gone\n")
            continue
        digest.update(f"{relative.as_posix()}\0{state.st_dev}:{state.st_ino}:{state.st_size}:{state.st_mtime_ns}:"
                      f"{state.st_ctime_ns}\n".encode())
    return digest.hexdigest()


def digest_of_files(pairs: list[tuple[Path, str]]) -> str:
    """One sha256 over (relative path, sha256) pairs: renaming, adding or changing any file changes it."""
    digest = hashlib.sha256()
    for relative, sha in pairs:
        digest.update(relative.as_posix().encode("utf-8") + b"\0" + sha.encode("ascii") + b"\n")
    return digest.hexdigest()


def cache_root_origin() -> tuple[Path, str]:
    """The default cache root and the setting that chose it ($SPECRUN_CACHE_DIR, $XDG_CACHE_HOME or $HOME), so an
    unusable one can be reported by the name the user can change."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]), f"${CACHE_DIR_ENV}"
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "specrun", "$XDG_CACHE_HOME"
    return Path.home() / ".cache" / "specrun", "$HOME"


def probe_writable_dir(path: Path) -> None:
    """Create `path` if needed and prove a file can be made in it (raises OSError otherwise): root ignores
    permission bits, so only an actual write tells a read-only mount."""
    path.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path, prefix=".probe.", suffix=".tmp")
    os.close(handle)
    os.unlink(name)


def regular_or_folder(path: Path) -> None:
    """Refuse a FIFO, socket or device before anything opens it: reading one hangs or never ends."""
    mode = path.stat().st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise DataError("not a regular file or folder (a FIFO, socket or device is never read)", file=str(path))


def open_regular(path: Path, what: str) -> None:
    """A file a folder format needs: present and regular, or one line naming it."""
    if not path.exists():
        raise DataError(f"{what} is missing", file=str(path))
    regular_or_folder(path)
    if path.is_dir():
        raise DataError(f"{what} is a folder, expected a file", file=str(path))


def undecodable_at(path: Path) -> tuple[int, int, int] | None:
    """(line, byte offset, byte) of the first byte of the file that is not UTF-8, or None: what a reader that
    decodes ahead of its parser (csv reads 8 KiB at a time) says instead of the line its parser had reached.
    Read in blocks: memory stays bounded for a corpus of any size."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    lines, offset = 1, 0
    with path.open("rb") as handle:
        while True:
            block = handle.read(1 << 20)
            pending = len(decoder.getstate()[0])
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:  # exc.object: the bytes held back from the last block, then this one
                return (lines + exc.object[: exc.start].count(b"\n"), offset - pending + exc.start,
                        exc.object[exc.start])
            if not block:
                return None
            lines += block.count(b"\n")
            offset += len(block)


def not_utf8(path: Path) -> DataError:
    """The one-line error for a data file that is not UTF-8, at the line and offset of its first bad byte."""
    found = undecodable_at(path)
    if found is None:  # the file changed since the reader failed: say what is known
        return DataError("not UTF-8; save the file as UTF-8", file=str(path))
    line, offset, byte = found
    return DataError(f"not UTF-8 (byte 0x{byte:02x} at offset {offset}); save the file as UTF-8", file=str(path),
                     line=line)
