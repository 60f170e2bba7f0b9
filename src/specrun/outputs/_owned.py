"""Which files a writer owns in the folders it replaces whole: a folder that holds anything else is refused, so a
run never deletes a file it did not write (a suite's files where a spec's run goes, a subsets' mean, a user's)."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from specrun.core.errors import OutputError


@dataclass(frozen=True)
class SetKind:
    """Who writes a folder (`what`, for messages) and every name it may have written there (fnmatch patterns): the
    old set is replaced only when it holds nothing else."""

    what: str
    names: tuple[str, ...]

    def owns(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names)


def check_owned(folder: Path, kind: SetKind) -> None:
    """The old set is replaced whole: refused when it holds an entry its writer never writes there (another kind
    of run's files, a user's), which the swap would delete."""
    foreign = sorted(name for name in os.listdir(folder) if not kind.owns(name))
    if foreign:
        more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise OutputError(f"cannot write {kind.what} to {folder}: it holds {foreign[0]!r}{more}, which "
                          f"{kind.what} does not write and would delete; move it away or write elsewhere; "
                          "nothing was written")
