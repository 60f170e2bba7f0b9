"""The spec's shared value types: the patterns and constrained strings every part of the model uses, and what
both source types build on (a layout, item ids, the reference to one split's file). A module of its own so the
two source types can live apart from the spec model without an import cycle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from specrun.core import registry
from specrun.core.types import Strict

REVISION_PATTERN = r"^[0-9a-f]{40}$"
FINGERPRINT_PATTERN = r"^sha256:[0-9a-f]{64}$"
NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"
HUB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$"

Revision = Annotated[str, Field(pattern=REVISION_PATTERN, description="Full 40-hex commit hash.")]
Fingerprint = Annotated[str, Field(pattern=FINGERPRINT_PATTERN, description="sha256 of the mapped items.")]
MAX_NAME = 64  # ids, split, source, protocol and metric names become folder and file names: keep them short
MAX_PATH_PART = 255  # bytes in one path component: what ext4, xfs, btrfs and tmpfs accept
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=MAX_NAME)]
Count = Annotated[int, Field(strict=True)]  # a YAML `true` is not the number 1
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def _visible(value: str) -> str:
    if not value.strip():
        raise ValueError("must hold text, not only white space")
    return value


Text = Annotated[str, Field(min_length=1), AfterValidator(_visible)]


class Layout(Strict):
    """How a source's files are read: the format, and its options."""

    format: Annotated[str, Field(json_schema_extra=lambda schema: schema.update(enum=sorted(registry.READERS)),
                                 description="A registered reader (`specrun list --formats`).")]
    options: dict[Name, Any] = Field(default_factory=dict, description=(
        "Options of the format, typed by its reader (`specrun list --formats`): tsv/csv take quoting, names, "
        "optional_names and extra_fields; xls takes names; plugins their own."))


class ItemIds(Strict):
    """How items are named: a column of the data, or the row number (0-based, zero-padded to `width`)."""

    prefix: str = ""
    column: str | None = None
    width: Count = Field(0, ge=0, le=12)


@dataclass(frozen=True)
class FileRef:
    """One source split's file: where it lies in the mirror and, for git sources, where upstream and its hash."""

    mirror: str
    repo_path: str | None = None
    sha256: str | None = None
    member: str | None = None
    contents: dict[str, str] | None = None
    member_sha256: str | None = None

    @property
    def pinned(self) -> bool:
        return self.sha256 is not None or bool(self.contents) or self.member_sha256 is not None
