"""Reading a spec file: safe YAML with lines kept, the typed model, the cross-key checks; and writing its
fingerprints back with its comments kept."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from specrun.core.errors import SpecError
from specrun.core.registry import did_you_mean
from specrun.core.workspace import Warn, warn_stderr
from specrun.spec._references import check_references
from specrun.spec.errors import first_error
from specrun.spec.extends import merge_located, read_spec_yaml
from specrun.spec.model import Spec, spec_model
from specrun.yamlsafe import KeyPath, LocatedYaml, dotted


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec with where it came from: errors found later (data, metrics) still point at lines.
    `sha256` is that of the file's bytes, or, for a spec that `extends` others, of the whole chain's (editing a
    parent changes it); `extends` names the chain's other files, nearest first."""

    spec: Spec
    path: Path
    display: str
    sha256: str
    located: LocatedYaml
    extends: tuple[str, ...] = field(default=())
    subset: str | None = None  # the subset of the file's spec this is (its id is `<id>.<subset>`)
    parent: Spec | None = None  # for a subset: the file's spec (its id, title and subsets' order)

    def error(self, path: KeyPath, message: str) -> SpecError:
        return self.located.error(path, message)


def load_spec(path: Path | str, *, require_fingerprints: bool = True, warn: Warn = warn_stderr) -> LoadedSpec:
    path = Path(path)
    located, chain = read_spec_yaml(path, str(path))
    if not isinstance(located.data, dict):
        raise SpecError("expected a mapping of spec keys at the top level", file=located.file, line=1)
    model = spec_model()
    moved: list[tuple[str, ...]] = []
    try:
        spec = model.model_validate(located.data, context={"moved_reader_options": moved})
    except ValidationError as exc:
        raise first_error(exc, located, model) from None
    if not spec.subsets:  # a spec with subsets is checked as each of its subsets (below): what runs
        check_references(spec, located, require_fingerprints)
    for key_path in moved:
        source = key_path[:-1]
        warn(f"{located.file_of(key_path)}:{located.line_of(key_path)}: {dotted(key_path)}: deprecated at the "
             f"source's top level; give it under `{dotted((*source, 'options'))}` (read as if it were there)")
    loaded = LoadedSpec(spec=spec, path=path, display=str(path), sha256=located.sha256, located=located,
                        extends=chain)
    if spec.subsets:
        subset_specs(loaded, require_fingerprints=require_fingerprints)  # every subset valid, or one line
    return loaded


SUBSET_KEYS_REFUSED = ("id", "subsets", "extends")


def subset_specs(loaded: LoadedSpec, names: Sequence[str] | None = None, *,
                 require_fingerprints: bool = True) -> list[LoadedSpec]:
    """A spec with `subsets`: one spec per subset (all, or those named, in the spec's order), each its overrides
    merged onto the spec and validated as a spec of its own, id `<id>.<subset>` (in lower case: two names that
    differ only in case are refused), title `<title> (<subset>)` unless the subset sets one. A spec without
    subsets is itself; a name it does not have is one line."""
    subsets = loaded.spec.subsets
    if not subsets:
        if names:
            raise SpecError(f"{loaded.spec.id} declares no subsets; --subsets applies to specs that do",
                            file=loaded.display)
        return [loaded]
    unknown = [name for name in names or () if name not in subsets]
    if unknown:
        raise SpecError(f"no subset {unknown[0]!r}{did_you_mean(unknown[0], list(subsets))}; its subsets: "
                        f"{', '.join(subsets)}", file=loaded.display, line=loaded.located.line_of(("subsets",)),
                        key="subsets")
    lowered: dict[str, str] = {}
    for name in subsets:
        if lowered.setdefault(name.lower(), name) != name:
            raise loaded.error(("subsets", name), f"subsets {lowered[name.lower()]!r} and {name!r} differ only in "
                                                  "case (each runs as `<id>.<subset>` in lower case)")
    chosen = [name for name in subsets if names is None or name in names]
    return [_subset_spec(loaded, name, require_fingerprints) for name in chosen]


@contextlib.contextmanager
def _prefixed(context: str) -> Iterator[None]:
    """A spec error raised inside names the subset it is in (file, line and key kept)."""
    try:
        yield
    except SpecError as exc:
        raise exc.prefixed(context) from None


def _subset_spec(loaded: LoadedSpec, name: str, require_fingerprints: bool) -> LoadedSpec:
    located = loaded.located
    prefix = ("subsets", name)
    patch = loaded.spec.subsets[name]  # type: ignore[index]
    for key in SUBSET_KEYS_REFUSED:
        if key in patch:
            raise located.error((*prefix, key), "a subset cannot set it (a subset's id is `<id>.<subset>`)")
    base_data = {key: value for key, value in located.data.items() if key != "subsets"}
    base = LocatedYaml(base_data, located.lines, located.file, located.files)
    base.sha256 = located.sha256
    over_data = {"id": f"{loaded.spec.id}.{name.lower()}", "title": f"{loaded.spec.title} ({name})", **patch}
    over_lines = {path[2:]: line for path, line in located.lines.items() if path[:2] == prefix and len(path) > 2}
    over_lines[("id",)] = over_lines[("title",)] = located.line_of(prefix)
    over_files = {path[2:]: located.file_of(path) for path in located.lines if path[:2] == prefix and len(path) > 2}
    merged = merge_located(base, LocatedYaml(over_data, over_lines, located.file, over_files))
    model = spec_model()
    try:
        spec = model.model_validate(merged.data)
    except ValidationError as exc:
        raise first_error(exc, merged, model).prefixed(f"subset {name}") from None
    with _prefixed(f"subset {name}"):
        check_references(spec, merged, require_fingerprints)
    return LoadedSpec(spec=spec, path=loaded.path, display=loaded.display, sha256=loaded.sha256, located=merged,
                      extends=loaded.extends, subset=name, parent=loaded.spec)


def _set_fingerprints(document: Any, fingerprints: dict[str, str], subsets: dict[str, dict[str, str]]) -> list[str]:
    """Each value set in the round-trip document (`[SUBSET/]SPLIT` where it changed)."""
    changed = []
    for name, value in fingerprints.items():
        split = document["splits"][name]
        if split.get("fingerprint") != value:
            split["fingerprint"] = value
            changed.append(name)
    for subset, found in subsets.items():
        override = document["subsets"][subset]
        if override is None:  # a subset of no keys of its own (`name:`)
            override = document["subsets"][subset] = {}
        for name, value in found.items():
            split = override.setdefault("splits", {}).setdefault(name, {})
            if split.get("fingerprint") != value:
                split["fingerprint"] = value
                changed.append(f"{subset}/{name}")
    return changed


SourceFiles = dict[str, dict[str, str]]  # source -> {path inside the hub repo: sha256}


def _set_files(document: Any, files: SourceFiles, subsets: dict[str, SourceFiles]) -> list[str]:
    """Each hub source's `files:` set whole (`[SUBSET/]sources.NAME.files` where it changed). A spec with subsets
    pins them per subset (each may read another config): an entry of the spec's own would merge into each
    subset's, so it goes."""
    changed = []
    for name, pins in files.items():
        if dict(document["sources"][name].get("files") or {}) != pins:
            document["sources"][name]["files"] = dict(pins)
            changed.append(f"sources.{name}.files")
        for subset, override in (document.get("subsets") or {}).items():  # would merge into the spec's own
            if "files" in ((override or {}).get("sources") or {}).get(name, {}):
                del override["sources"][name]["files"]
                changed.append(f"{subset}/sources.{name}.files")
                if not override["sources"][name]:  # nothing else of the subset's own: no empty mappings left
                    del override["sources"][name]
                if not override["sources"]:
                    del override["sources"]
    for subset, found in subsets.items():
        if document["subsets"][subset] is None:
            document["subsets"][subset] = {}
        override = document["subsets"][subset]
        for name, pins in found.items():
            if "files" in document["sources"][name]:
                del document["sources"][name]["files"]
                changed.append(f"sources.{name}.files")
            entry = override.setdefault("sources", {}).setdefault(name, {})
            if dict(entry.get("files") or {}) != pins:
                entry["files"] = dict(pins)
                changed.append(f"{subset}/sources.{name}.files")
    return changed


def write_fingerprints(path: Path, fingerprints: dict[str, str], *, read_sha256: str | None = None,
                       subsets: dict[str, dict[str, str]] | None = None,
                       files: tuple[SourceFiles, dict[str, SourceFiles]] | None = None) -> list[str]:
    """Set `splits.<name>.fingerprint` (and `subsets.<subset>.splits.<name>.fingerprint`) in the spec file, and
    a hub source's per-file pins `sources.<name>.files` (`subsets.<subset>.sources.<name>.files`) where given,
    keeping its comments, order and layout (ruamel.yaml's round-trip mode; PyYAML would drop every comment), its
    line endings, BOM and mode. A symlinked spec is written through to its target. Refused in one line: a
    read-only file, mixed line endings, and a file whose bytes differ from `read_sha256` (the spec the
    fingerprints were computed from) or change before the rename. Returns the keys whose value changed."""
    import codecs
    import hashlib
    import io

    from ruamel.yaml import YAML

    from specrun.core.files import read_regular_file, write_atomic
    from specrun.yamlsafe import MAX_SPEC_BYTES

    shown = str(path)
    target = path.resolve()  # a link is written through: the temporary file goes beside the target

    def read() -> bytes:
        return read_regular_file(target, MAX_SPEC_BYTES, "a spec", error=SpecError, shown=shown)

    raw = read()
    edited = ("changed since its fingerprints were computed (edited while this ran?); nothing was written; run "
              "fingerprint --write again")
    if read_sha256 is not None and hashlib.sha256(raw).hexdigest() != read_sha256:
        raise SpecError(edited, file=shown)
    bom, text, crlf = _line_endings(raw, shown)
    yaml_rt = YAML()  # round-trip: comments and key order survive
    yaml_rt.preserve_quotes = True
    yaml_rt.width = 4096  # never re-wrap the author's lines
    document = yaml_rt.load(text)
    changed = _set_fingerprints(document, fingerprints, subsets or {})
    changed += _set_files(document, *files) if files else []
    if changed:
        mode = _writable_mode(target, shown)
        buffer = io.StringIO()
        yaml_rt.dump(document, buffer)
        out = buffer.getvalue().replace("\n", "\r\n") if crlf else buffer.getvalue()

        def unchanged() -> None:
            if read() != raw:
                raise SpecError(edited, file=shown)

        write_atomic(target, (codecs.BOM_UTF8 if bom else b"") + out.encode("utf-8"), mode=mode,
                     before_replace=unchanged)
    return changed


def _writable_mode(target: Path, shown: str) -> int:
    """The spec file's permission bits, which its rewrite keeps; a file this user may not write is refused before
    anything is written."""
    import os
    import stat

    mode = stat.S_IMODE(os.stat(target).st_mode)
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise SpecError(f"is read-only (mode {mode:04o}); nothing was written; make it writable to write its "
                        "fingerprints, or copy the printed ones in by hand", file=shown)
    return mode


def _line_endings(raw: bytes, shown: str) -> tuple[bool, str, bool]:
    """(a BOM, the text with LF line ends, CRLF line ends): what a rewrite keeps; mixed line ends are refused."""
    import codecs

    text = raw.decode("utf-8-sig")
    crlf = text.count("\r\n")
    if crlf and (crlf != text.count("\n") or crlf != text.count("\r")):
        raise SpecError("mixes CRLF and LF line endings; nothing was written; convert it to one of them first",
                        file=shown)
    return raw.startswith(codecs.BOM_UTF8), text.replace("\r\n", "\n"), bool(crlf)
