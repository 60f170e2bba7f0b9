"""Writing a run's output files: each spec's set (results.json, report.md, predictions, plots) lands as one unit.

The set for ROOT/<spec>/<model>/ is written into a hidden sibling `ROOT/<spec>/.<model>.tmp-<random>/`, each file
and the folder fsynced, and then swapped in:

* Where the kernel can (Linux renameat2 RENAME_EXCHANGE: ext4, xfs, btrfs, tmpfs, ...) the staged folder and the
  current one are exchanged in one atomic step: at every instant ROOT/<spec>/<model> is the old whole set or the
  new whole set, never missing and never mixed. The old set, now under the hidden name, is then removed.
* Elsewhere the current folder is renamed aside to `.<model>.old-<random>` and the staged one renamed in; for the
  microseconds between the two renames the folder is absent (a reader gets "no such file"), never mixed. A writer
  killed in that window leaves the old set under the `.old-` name; the next writer restores it before anything else.

A reader that reads results.json and then predictions.jsonl by path may straddle a swap; results.json pins the
predictions by sha256, so such a reader detects it (compare and read_predictions check the pin).

Several specs in one run: every set is staged first; only when all are staged are they swapped in, one after the
other. A swap that fails undoes the swaps before it, so a run's sets go in all together or not at all (a process
killed between two swaps leaves some folders new and some old, each whole).

A folder is replaced only when every entry in it is a file its writer could have written there (each set names
its kind: `SetKind`, the names it owns): a folder that holds anything else (a suite's files where a spec's run
goes, a user's notes) is refused before anything is staged, so no run deletes a file it did not write.

Concurrent writers are serialised by `fcntl.flock` on `ROOT/<spec>/.<model>.lock` (several folders are locked in
path order, so two runs never deadlock); the last writer wins, whole. Under the lock, temporaries left by killed
writers (`.<model>.tmp-*`, `.<model>.old-*`, and the older `.NAME.*.tmp` files inside the folder) are removed. The
lock file is removed again by its holder (a waiter that then locks a removed file notices and locks the new one),
so a finished run leaves only its folders.

Ctrl-C (exit 130, OutputInterrupted): while waiting for a lock it ends the run at once, nothing written; while
staging, the staged folders are removed before any swap (nothing written, the old sets stay); once the swaps have
begun it is held back until every set is in, and the message says they were written whole. SIGKILL at any point
leaves each folder old or new, whole, plus hidden temporaries that the next writer removes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from specrun.core.errors import OutputError, OutputInterrupted
from specrun.outputs import fs
from specrun.outputs._owned import SetKind, check_owned
from specrun.outputs._preflight import preflight_output_folders


@dataclass
class Pauses:
    """Seconds the writer sleeps once every set is staged (before the first swap) and after the first swap (Ctrl-C
    held back): 0 in every run. Tests set them in the process they start (tests/test_trust_outputs.py launches
    specrun through a few lines that set these first), to signal a writer at exactly those moments; setting
    `released` (from a signal handler there) ends a pause at once, so a test waits on its own event, not a clock."""

    before_swap: float = 0.0
    during_swap: float = 0.0
    released: bool = False


PAUSES = Pauses()


class _Sigint:
    """A SIGINT handler that holds Ctrl-C back while files are being swapped, and raises it only where that is
    safe (waiting for the lock). Installed only in the main thread, the only one Python delivers signals to."""

    def __init__(self) -> None:
        self.received = False
        self.raise_now = False
        self.previous: Any = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        if self.raise_now:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Sigint]:
        try:
            self.previous = signal.getsignal(signal.SIGINT)
            if self.previous in (signal.SIG_IGN, None):
                yield self
                return
            signal.signal(signal.SIGINT, self)
        except ValueError:  # not the main thread: no Ctrl-C can reach this code
            yield self
            return
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, self.previous)

    @contextlib.contextmanager
    def raising(self) -> Iterator[None]:
        """Ctrl-C raises KeyboardInterrupt at once inside this block (also if it came just before)."""
        self.raise_now = True
        try:
            if self.received:
                raise KeyboardInterrupt
            yield
        finally:
            self.raise_now = False


@dataclass
class PendingSet:
    folder: Path
    files: dict[str, str | bytes]
    kind: SetKind
    existed: bool = False
    lock_fd: int | None = None
    created: list[Path] = field(default_factory=list)  # parent folders this run made, deepest last
    staging: Path | None = None
    aside: Path | None = None  # where the old set went in the two-rename fallback
    swapped: str = ""  # "", "renamed" (no old set), "exchanged", "aside"


OutputSet = tuple[Path, dict[str, str | bytes], SetKind]


def write_output_sets(sets: Sequence[OutputSet]) -> None:
    """Write each (folder, name -> content, kind) set as one unit; see the module's docstring for how and why."""
    units = sorted({Path(os.path.abspath(folder)): PendingSet(Path(os.path.abspath(folder)), dict(files), kind)
                    for folder, files, kind in sets}.values(), key=lambda unit: str(unit.folder))
    if not units:
        return
    for unit in units:
        for name in unit.files:
            if Path(name).name != name or name.startswith("."):
                raise ValueError(f"not a plain file name: {name!r}")
            if not unit.kind.owns(name):
                raise ValueError(f"{name!r} is not a name {unit.kind.what} owns")
    preflight_output_folders([unit.folder for unit in units])
    sigint = _Sigint()
    with sigint.installed():
        try:
            _lock_all(units, sigint)
            _write_locked(units, sigint)
        except KeyboardInterrupt:  # only raised while waiting for a lock; later, Ctrl-C is held back
            raise OutputInterrupted(f"interrupted while waiting for another specrun writing to {_where(units)}; "
                                    "nothing was written") from None
        finally:
            _unlock_all(units)
            remove_created(units)


def _where(units: Sequence[PendingSet]) -> str:
    return str(units[0].folder) + (f" (and {len(units) - 1} more)" if len(units) > 1 else "")


def _kept(units: Sequence[PendingSet]) -> str:
    return ", the previous results are unchanged" if any(unit.existed for unit in units) else ""


def _lock_all(units: Sequence[PendingSet], sigint: _Sigint) -> None:
    """Lock every folder, in path order (as every writer does, so two runs never deadlock)."""
    for unit in units:
        unit.existed = os.path.lexists(unit.folder)
    for unit in units:
        try:
            unit.lock_fd = _lock(unit, sigint)
        except OSError as exc:
            raise OutputError(f"cannot write results to {unit.folder}: {exc.strerror or exc}; nothing was written"
                              f"{_kept(units)}") from None


def _lock(unit: PendingSet, sigint: _Sigint) -> int:
    """flock the folder's lock file, making the parent folders first; retried when the file we locked was removed
    meanwhile by the previous holder (then a newer lock file is the one that counts)."""
    path = fs.lock_path(unit.folder)
    for _ in range(100):
        try:
            make_parents(unit)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
        except FileNotFoundError:  # a failing writer removed the empty parent just now
            continue
        except OSError as exc:  # a link planted there (ELOOP) is never followed out of the output root
            if exc.errno != errno.ELOOP:
                raise
            raise OutputError(f"cannot lock {path}: it is a symbolic link, not specrun's lock file; remove it and "
                              "run again; nothing was written") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OutputError(f"cannot lock {path}: it is not a regular file; remove it and run again; nothing "
                              "was written")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"specrun: warning: waiting for another specrun writing to {unit.folder}", file=sys.stderr)
                with sigint.raising():
                    fcntl.flock(fd, fcntl.LOCK_EX)
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise OutputError(f"cannot lock {path}: it keeps being replaced")


def make_parents(unit: PendingSet) -> None:
    missing: list[Path] = []
    parent = unit.folder.parent
    while not os.path.lexists(parent):
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
            unit.created.append(folder)


def _unlock_all(units: Sequence[PendingSet]) -> None:
    """Remove each lock file while still holding it, then release it."""
    for unit in units:
        if unit.lock_fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(fs.lock_path(unit.folder))
            os.close(unit.lock_fd)
            unit.lock_fd = None


def remove_created(units: Sequence[PendingSet]) -> None:
    """Parent folders this run created and left empty (a failed run) go again: nothing is left behind."""
    for unit in units:
        for folder in reversed(unit.created):
            with contextlib.suppress(OSError):
                folder.rmdir()


def _clean_stale(unit: PendingSet) -> None:
    """Under the lock: put back an old set a killed writer left aside, then remove every temporary of this folder."""
    stem = fs.hidden_stem(unit.folder.name)
    parent = unit.folder.parent
    olds = sorted(parent.glob(f".{glob.escape(stem)}{fs.OLD_TAG}*"), key=lambda p: p.lstat().st_mtime)
    if olds and not os.path.lexists(unit.folder):
        os.rename(olds.pop(), unit.folder)
    for stale in [*olds, *parent.glob(f".{glob.escape(stem)}{fs.STAGING_TAG}*")]:
        fs.remove_path(stale)
    if unit.folder.is_dir() and not unit.folder.is_symlink():
        for stale in unit.folder.glob(".*.tmp"):  # left by the per-file writes of older versions
            fs.remove_path(stale)


def _write_locked(units: Sequence[PendingSet], sigint: _Sigint) -> None:
    try:
        for unit in units:
            _clean_stale(unit)
            unit.existed = os.path.lexists(unit.folder)
            if unit.existed and not unit.folder.is_dir():
                raise OutputError(f"cannot write results to {unit.folder}: a file is there, not a folder; "
                                  "nothing was written")
            if unit.existed:
                check_owned(unit.folder, unit.kind)
        for unit in units:
            _stage(unit, sigint)
        _pause(PAUSES.before_swap, sigint)
        if sigint.received:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        _discard_staging(units)
        raise OutputInterrupted(f"interrupted while writing results to {_where(units)}; nothing was written"
                                f"{_kept(units)}") from None
    except OSError as exc:
        where = _failed_where(units)
        _discard_staging(units)
        raise OutputError(f"cannot write results to {where}: {exc.strerror or exc}; "
                          f"nothing was written{_kept(units)}") from None
    except BaseException:
        _discard_staging(units)
        raise
    _commit(units)
    if sigint.received:
        raise OutputInterrupted(f"interrupted while writing results; they were written whole to {_where(units)}")


def _failed_where(units: Sequence[PendingSet]) -> str:
    """The folder being staged when the fault came (the last one with a staging folder), else the first."""
    staged = [unit for unit in units if unit.staging is not None]
    return str((staged[-1] if staged else units[0]).folder)


def _stage(unit: PendingSet, sigint: _Sigint) -> None:
    """Write the set into a fresh hidden sibling folder, every file and the folder fsynced; results.json last."""
    prefix = f".{fs.hidden_stem(unit.folder.name)}{fs.STAGING_TAG}"
    unit.staging = Path(tempfile.mkdtemp(dir=unit.folder.parent, prefix=prefix))
    mask = fs.current_umask()
    os.chmod(unit.staging, 0o777 & ~mask)  # mkdtemp makes 0700; this is an ordinary folder
    for name in sorted(unit.files, key=lambda n: n == "results.json"):
        if sigint.received:
            raise KeyboardInterrupt
        fs.write_new_file(unit.staging / name, unit.files[name])
    fs.fsync_dir(unit.staging)


def _discard_staging(units: Sequence[PendingSet]) -> None:
    for unit in units:
        if unit.staging is not None:
            with contextlib.suppress(OSError):
                fs.remove_path(unit.staging)
            unit.staging = None


def _pause(seconds: float, sigint: _Sigint) -> None:
    """Test-only (see Pauses): sleep, ending early on Ctrl-C or once released."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not sigint.received and not PAUSES.released:
        time.sleep(0.02)


def _swap(unit: PendingSet) -> None:
    """Put the staged set in place of the folder; afterwards unit.staging (or unit.aside) holds the old set."""
    assert unit.staging is not None
    if not os.path.lexists(unit.folder):
        os.rename(unit.staging, unit.folder)
        unit.swapped = "renamed"
    elif fs.exchange_paths(unit.staging, unit.folder):
        unit.swapped = "exchanged"
    else:
        unit.aside = fs.hidden_sibling(unit.folder, fs.OLD_TAG)
        os.rename(unit.folder, unit.aside)
        try:
            os.rename(unit.staging, unit.folder)
        except BaseException:
            os.rename(unit.aside, unit.folder)
            unit.aside = None
            raise
        unit.swapped = "aside"


def _unswap(unit: PendingSet) -> None:
    """Undo _swap: the old set (or no folder) back in place, the new one back under the staging name."""
    assert unit.staging is not None
    if unit.swapped == "renamed":
        os.rename(unit.folder, unit.staging)
    elif unit.swapped == "exchanged":
        if not fs.exchange_paths(unit.staging, unit.folder):
            raise OSError(errno.ENOTSUP, "cannot exchange back")
    elif unit.swapped == "aside" and unit.aside is not None:
        os.rename(unit.folder, unit.staging)
        os.rename(unit.aside, unit.folder)
        unit.aside = None
    unit.swapped = ""


def _commit(units: Sequence[PendingSet]) -> None:
    """Swap every staged set in (Ctrl-C is held back meanwhile); a failed swap undoes those before it."""
    done: list[PendingSet] = []
    try:
        for index, unit in enumerate(units):
            _swap(unit)
            done.append(unit)
            if index == 0:
                _pause(PAUSES.during_swap, _Sigint())
    except OSError as exc:
        failed = units[len(done)].folder
        undone = []
        for unit in reversed(done):
            try:
                _unswap(unit)
                undone.append(unit)
            except OSError:
                pass
        kept_new = [str(unit.folder) for unit in done if unit not in undone]
        _discard_staging(units)
        if kept_new:
            raise OutputError(f"cannot write results to {failed}: {exc.strerror or exc}; only "
                              f"{', '.join(kept_new)} got the new results (each folder is whole)") from None
        raise OutputError(f"cannot write results to {failed}: {exc.strerror or exc}; nothing was written"
                          f"{_kept(units)}") from None
    for unit in units:
        with contextlib.suppress(OSError):  # the renames are durable once the parent folder is synced
            fs.fsync_dir(unit.folder.parent)
    for unit in units:  # the old sets, now under hidden names
        for old in (unit.staging if unit.swapped == "exchanged" else None, unit.aside):
            if old is not None:
                with contextlib.suppress(OSError):
                    fs.remove_path(old)
        unit.staging = unit.aside = None
