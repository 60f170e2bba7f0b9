"""Reading a spec file: safe YAML with lines kept, the typed model, the cross-key checks; and writing its
fingerprints back with its comments kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from specrun.core.errors import SpecError
from specrun.core.workspace import Warn, warn_stderr
from specrun.spec.errors import first_error
from specrun.spec.extends import read_spec_yaml
from specrun.spec.model import Spec, spec_model
from specrun.spec.references import check_references
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
    check_references(spec, located, require_fingerprints)
    for key_path in moved:
        source = key_path[:-1]
        warn(f"{located.file_of(key_path)}:{located.line_of(key_path)}: {dotted(key_path)}: deprecated at the "
             f"source's top level; give it under `{dotted((*source, 'options'))}` (read as if it were there)")
    return LoadedSpec(spec=spec, path=path, display=str(path), sha256=located.sha256, located=located,
                      extends=chain)


def write_fingerprints(path: Path, fingerprints: dict[str, str], *, read_sha256: str | None = None) -> list[str]:
    """Set `splits.<name>.fingerprint` in the spec file, keeping its comments, order and layout (ruamel.yaml's
    round-trip mode; PyYAML would drop every comment), its line endings, BOM and mode. A symlinked spec is
    written through to its target. Refused in one line: a read-only file, mixed line endings, and a file whose
    bytes differ from `read_sha256` (the spec the fingerprints were computed from) or change before the rename.
    Returns the splits whose value changed."""
    import codecs
    import hashlib
    import io
    import os
    import stat

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
    bom = raw.startswith(codecs.BOM_UTF8)
    text = raw.decode("utf-8-sig")
    crlf = text.count("\r\n")
    if crlf and (crlf != text.count("\n") or crlf != text.count("\r")):
        raise SpecError("mixes CRLF and LF line endings; nothing was written; convert it to one of them first",
                        file=shown)
    yaml_rt = YAML()  # round-trip: comments and key order survive
    yaml_rt.preserve_quotes = True
    yaml_rt.width = 4096  # never re-wrap the author's lines
    document = yaml_rt.load(text.replace("\r\n", "\n"))
    changed = []
    for name, value in fingerprints.items():
        split = document["splits"][name]
        if split.get("fingerprint") != value:
            split["fingerprint"] = value
            changed.append(name)
    if changed:
        mode = stat.S_IMODE(os.stat(target).st_mode)
        if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
            raise SpecError(f"is read-only (mode {mode:04o}); nothing was written; make it writable to write its "
                            "fingerprints, or copy the printed ones in by hand", file=shown)
        buffer = io.StringIO()
        yaml_rt.dump(document, buffer)
        out = buffer.getvalue().replace("\n", "\r\n") if crlf else buffer.getvalue()

        def unchanged() -> None:
            if read() != raw:
                raise SpecError(edited, file=shown)

        write_atomic(target, (codecs.BOM_UTF8 if bom else b"") + out.encode("utf-8"), mode=mode,
                     before_replace=unchanged)
    return changed
