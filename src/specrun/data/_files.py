"""Where a source's files lie in the mirror, and the checks every read goes through: inside the mirror,
regular, pinned by sha256."""

from __future__ import annotations

from pathlib import Path

from specrun.core.errors import MissingDataError, first_line
from specrun.core.files import regular_or_folder, sha256_file
from specrun.plan import Plan
from specrun.spec import FileRef


def mirror_path(data_dir: Path, source_name: str, relative: str, plan: Plan, key: tuple[str | int, ...],
                *, must_exist: bool = True) -> Path:
    """<data-dir>/<source>/<relative>, which must stay inside <data-dir>/<source>/ (symlinks included)."""
    try:
        root = (data_dir / source_name).resolve()
        path = (root / relative).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError before Python 3.13, OSError after
        raise plan.error(key, f"{data_dir / source_name / relative} cannot be resolved ({first_line(exc)})") from None
    if not path.is_relative_to(root):
        raise plan.error(key, f"{relative!r} resolves outside the data mirror folder {root}")
    if not path.exists():
        if not must_exist:
            return path
        at = plan.error(key, f"{data_dir / source_name / relative} does not exist in the data mirror")
        raise MissingDataError(at.message, file=at.file, line=at.line, key=at.key)
    regular_or_folder(path)
    return path


def verify(path: Path, ref: FileRef, plan: Plan, key: tuple[str | int, ...]) -> None:
    """The file (or folder contents) against the sha256 pins of the spec."""
    if ref.sha256 is not None:
        check_sha256(path, ref.sha256, plan, (*key, "sha256"))
    for relative, expected in (ref.contents or {}).items():
        target = path / relative
        if not target.is_file():
            raise plan.error((*key, "contents"), f"{target} is missing or not a regular file")
        check_sha256(target, expected, plan, (*key, "contents", relative))


def check_sha256(path: Path, expected: str, plan: Plan, key: tuple[str | int, ...]) -> None:
    found = sha256_file(path)
    if found != expected:
        raise plan.error(key, f"{path} has sha256 {found}, the spec pins {expected}")
