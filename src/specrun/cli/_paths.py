"""-o checked before any work: a file where a folder is wanted (or the reverse) is one line, not a rename error
after the work is done."""

from __future__ import annotations

from pathlib import Path

from specrun.core.errors import UsageError


def output_file(output: str | None) -> Path | None:
    """-o FILE must name a file: a folder there is one line, before any work (not a rename error after it)."""
    if output is None:
        return None
    path = Path(output)
    if path.is_dir():
        raise UsageError(f"-o {output}: is a folder; expected a file name")
    if path.exists() and not path.is_file():
        raise UsageError(f"-o {output}: is not a regular file")
    return path


def output_folder(output: str | None) -> Path | None:
    """-o DIR must be a folder or not exist yet; a file there is one line, before anything is written."""
    if output is None:
        return None
    path = Path(output)
    if path.exists() and not path.is_dir():
        raise UsageError(f"-o {output}: is not a folder; expected a folder for the files")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"-o {output}: {parent} is not a folder")
    return path


__all__ = ["output_file", "output_folder"]
