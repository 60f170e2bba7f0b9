"""`extends: other.yaml`: a spec written as overrides of another. The files are merged at the YAML level, before
the model validates anything, so the model, the plan and every later stage see one ordinary spec; each key path
keeps the file and line it was written in, so an error in an inherited key names the parent file.

Merge rules: mappings merge by key (recursively); a list or a scalar replaces the inherited value whole; a key
given `null` in a mapping that merges is removed (there is then nothing to validate). A parent may extend
another (a chain); a cycle is refused."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from specrun.core.errors import SpecrunError, first_line
from specrun.yamlsafe import MAX_NODES, MAX_SPEC_BYTES, KeyPath, LocatedYaml, read_yaml

EXTENDS = "extends"
MAX_CHAIN = 32  # files in one chain: far beyond any real reuse, short of a runaway
_SUFFIXES = (".yaml", ".yml")


def read_spec_yaml(path: Path, display: str) -> tuple[LocatedYaml, tuple[str, ...]]:
    """A spec file with its `extends` chain merged in, and the chain's files (as shown), nearest parent first.
    A file without `extends` is returned as read, its sha256 that of its bytes."""
    return _read(path, display, ())


def chain_sha256(path: Path) -> str | None:
    """The sha256 a spec is recorded by (its bytes; with `extends`, its whole chain's), or None when it cannot be
    read as one: for finding the spec a results file names, without validating every candidate."""
    try:
        return read_spec_yaml(path, str(path))[0].sha256
    except SpecrunError:
        return None


def _read(path: Path, display: str, below: tuple[tuple[Path, str], ...]) -> tuple[LocatedYaml, tuple[str, ...]]:
    """read_spec_yaml for one file of a chain; `below` holds the files that extend it (identity, as shown)."""
    located = read_yaml(path, display)
    data = located.data
    if not isinstance(data, dict) or EXTENDS not in data:
        return located, ()
    key: KeyPath = (EXTENDS,)
    value = _extends_value(located)
    parent_path, parent_display, chain = _parent(located, value, path, display, below)
    parent, parents = _read(parent_path, parent_display, chain)
    if not isinstance(parent.data, dict):
        raise located.error(key, f"{value}: {parent_display} holds a {type(parent.data).__name__}, not a mapping "
                                 "of spec keys")
    lines: dict[KeyPath, int] = {}
    files: dict[KeyPath, str] = {}
    child = {name: item for name, item in data.items() if name != EXTENDS}
    merged = _merge(parent.data, child, (), parent, located, lines, files)
    if len(lines) > MAX_NODES:
        raise located.error(key, f"the merged spec holds more than {MAX_NODES} keys and values, the most one spec "
                                 "may hold; a spec is small")
    out = LocatedYaml(merged, lines, display, {p: f for p, f in files.items() if f != display})
    out.sha256 = hashlib.sha256(f"specrun extends\n{located.sha256}\n{parent.sha256}\n".encode()).hexdigest()
    return out, (parent_display, *parents)


def _extends_value(located: LocatedYaml) -> str:
    """The `extends` value, refused unless it is the path of a .yaml or .yml file relative to the spec's folder."""
    key: KeyPath = (EXTENDS,)
    value = located.data[EXTENDS]
    if not isinstance(value, str) or not value.strip():
        raise located.error(key, f"expected the path of a .yaml or .yml file, relative to this file's folder "
                                 f"(got {value!r})")
    if Path(value).is_absolute():
        raise located.error(key, f"{value}: an absolute path; give the path relative to this file's folder")
    if not value.lower().endswith(_SUFFIXES):
        raise located.error(key, f"{value}: expected a .yaml or .yml file")
    return value


def _parent(located: LocatedYaml, value: str, path: Path, display: str, below: tuple[tuple[Path, str], ...],
            ) -> tuple[Path, str, tuple[tuple[Path, str], ...]]:
    """The parent file `extends` names (its path, as shown) and the chain that reaches it, refused before it is
    read when it closes a cycle, is not a file, or makes the chain too long or too large."""
    key: KeyPath = (EXTENDS,)
    parent_path = path.parent / value
    parent_display = os.path.normpath(os.path.join(os.path.dirname(display), value))
    try:
        chain = (*below, (_identity(path), display))
        parent_identity = _identity(parent_path)
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError before Python 3.13, OSError after
        raise located.error(key, f"{value}: {parent_display} cannot be resolved ({first_line(exc)})") from None
    seen = [identity for identity, _ in chain]
    if parent_identity in seen:
        start = seen.index(parent_identity)
        cycle = " -> ".join([shown for _, shown in chain[start:]] + [parent_display])
        raise located.error(key, f"a cycle ({cycle}); a spec cannot extend itself, directly or through others")
    if not parent_path.exists():
        raise located.error(key, f"{value}: no such file (looked for {parent_display})")
    if not parent_path.is_file():
        raise located.error(key, f"{value}: {parent_display} is not a regular file")
    if len(chain) >= MAX_CHAIN:
        raise located.error(key, f"a chain of more than {MAX_CHAIN} files; flatten some of them")
    if sum(_size(identity) for identity, _ in chain) + _size(parent_identity) > MAX_SPEC_BYTES:
        raise located.error(key, f"the chain's files hold more than {MAX_SPEC_BYTES} bytes together, the most one "
                                 "spec may hold; a spec is small")
    return parent_path, parent_display, chain


def merge_located(base: LocatedYaml, over: LocatedYaml) -> LocatedYaml:
    """`over` merged onto `base` by the rules above, each key path located where it was written (a subset's
    overrides onto its spec)."""
    lines: dict[KeyPath, int] = {}
    files: dict[KeyPath, str] = {}
    merged = _merge(base.data, over.data, (), base, over, lines, files)
    out = LocatedYaml(merged, lines, base.file, {p: f for p, f in files.items() if f != base.file})
    out.sha256 = base.sha256
    return out


def _identity(path: Path) -> Path:
    """One file however it is named (a relative path, a link): what a cycle is found by."""
    return path.resolve()


def _size(identity: Path) -> int:
    """A file's size in bytes (0 where it cannot be read: reading it then says why)."""
    try:
        return identity.stat().st_size
    except OSError:
        return 0


def _merge(base: Any, over: Any, path: KeyPath, parent: LocatedYaml, child: LocatedYaml,
           lines: dict[KeyPath, int], files: dict[KeyPath, str]) -> Any:
    """`over` (the child's value) merged onto `base` (the parent's), recording where each kept path was written."""
    if not (isinstance(base, dict) and isinstance(over, dict)):
        _place(child, over, path, lines, files)
        return over
    _place_one(child, path, lines, files)  # a merged mapping is where the child wrote it
    out: dict[str, Any] = {}
    for name, value in base.items():
        if name not in over:
            out[name] = value
            _place(parent, value, (*path, name), lines, files)
        elif over[name] is not None:
            out[name] = _merge(value, over[name], (*path, name), parent, child, lines, files)
        else:  # removed: a key then missing is reported where the child removed it
            _place_one(child, (*path, name), lines, files)
    for name, value in over.items():
        if name not in base and value is not None:
            out[name] = value
            _place(child, value, (*path, name), lines, files)
    return out


def _place(document: LocatedYaml, value: Any, path: KeyPath, lines: dict[KeyPath, int],
           files: dict[KeyPath, str]) -> None:
    """Every path of `value` (at `path`) located where `document` has it."""
    _place_one(document, path, lines, files)
    if isinstance(value, dict):
        for name, item in value.items():
            _place(document, item, (*path, name), lines, files)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _place(document, item, (*path, index), lines, files)


def _place_one(document: LocatedYaml, path: KeyPath, lines: dict[KeyPath, int], files: dict[KeyPath, str]) -> None:
    if path in document.lines:
        lines[path] = document.lines[path]
        files[path] = document.file_of(path)
