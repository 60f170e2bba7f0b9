"""Errors a user can act on: each renders as one line and maps to exit code 2."""

from __future__ import annotations

import contextlib
import unicodedata
from collections.abc import Iterator


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (libraries' messages run to several), or its type's name."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def printable(text: str) -> str:
    """Control and format characters (ESC sequences, bidi overrides, NUL, zero-width) from data or paths shown as
    escapes, so an error line cannot move the cursor, recolour or reorder the terminal."""
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch
                   for ch in text)


def os_error_text(exc: OSError) -> str:
    """'<path>: <reason>' for an OSError, the way a user reads it (no errno tuple, no traceback)."""
    reason = exc.strerror or first_line(exc)
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


class SpecrunError(Exception):
    """Bad input (spec, data, flags): reported as one line, exit code 2, no traceback."""

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.key = key

    @classmethod
    @contextlib.contextmanager
    def named(cls, context: str) -> Iterator[None]:
        """Errors raised inside that name no file get `context: ` in front (which spec, split and protocol)."""
        try:
            yield
        except SpecrunError as exc:
            if exc.file is not None:
                raise
            raise exc.prefixed(context) from None

    def prefixed(self, context: str) -> SpecrunError:
        """The same error, of the same class, with `context: ` before its message; file, line and key kept."""
        return type(self)(f"{context}: {self.message}", file=self.file, line=self.line, key=self.key)

    def one_line(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        key = f"{self.key}: " if self.key else ""
        text = f"{where}{key}{self.message}"
        return printable(" ".join(text.split()))  # a message is one line, whatever the input held


class SpecError(SpecrunError):
    """The spec file is malformed or inconsistent."""


class DataError(SpecrunError):
    """The benchmark data does not match what the spec declares."""


class MissingDataError(DataError):
    """A file the spec names is not in the data mirror: what lets a suite run without an optional member."""


class ModelError(SpecrunError):
    """The model cannot be found, loaded or verified."""


class OfflineError(SpecrunError):
    """Something would need the network and it is not reachable."""


class CacheError(SpecrunError):
    """The cache folder cannot be used; the message names it and the flags that avoid it."""


class MetricError(SpecrunError):
    """A metric is undefined on what the model produced (NaN, constant prediction, degenerate resamples)."""


class OutputError(SpecrunError):
    """The results cannot be written where --output points (a file, read-only, full, a name too long)."""


class ResultsError(SpecrunError):
    """A results.json (or its predictions) cannot be read, or does not hold what it claims: names file and key."""


class CompareError(SpecrunError):
    """Runs cannot be compared or ranked together (other data, units, resamples, methods)."""


class PublishError(SpecrunError):
    """Results cannot be published: the licence, the hub's schema, the export or the upload refused them."""


class SuiteError(SpecrunError):
    """A suite file is malformed, names a member it cannot use, or its aggregate cannot be computed."""


class OutputInterrupted(SpecrunError):
    """Ctrl-C while writing results: exit 130, with a message saying what is on disk."""

    exit_code = 130


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C where a handler is installed (while Ray encodes) so that every cleanup runs;
    the command line exits 143 (128 + SIGTERM) where Ctrl-C exits 130."""


class UsageError(SpecrunError):
    """A bad flag or argument: one line naming it, exit 2, not argparse's usage block."""


class ProtocolError(SpecrunError):
    """A protocol kind broke its contract while running (it embedded a text it did not announce)."""


class RegistryError(SpecrunError):
    """An entry does not meet its registry's contract, or a name is registered twice (names the provider)."""


class FieldError(ValueError):
    """A raw value is not of the field's kind; the message says what was expected (the data stage adds where)."""


class PublishedError(SpecrunError):
    """A published result file (MTEB's results-repository layout) cannot be read or does not hold what it must."""
