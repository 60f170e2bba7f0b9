"""Reading a spec file: safe YAML with lines kept, the typed model, the cross-key checks; and writing its
fingerprints back with its comments kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from specrun.core.errors import SpecError
from specrun.spec.errors import first_error
from specrun.spec.model import Spec, spec_model
from specrun.spec.references import check_references
from specrun.yamlsafe import KeyPath, LocatedYaml, read_yaml


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec with where it came from: errors found later (data, metrics) still point at lines."""

    spec: Spec
    path: Path
    display: str
    sha256: str
    located: LocatedYaml

    def error(self, path: KeyPath, message: str) -> SpecError:
        return self.located.error(path, message)


def load_spec(path: Path | str, *, require_fingerprints: bool = True) -> LoadedSpec:
    path = Path(path)
    located = read_yaml(path, str(path))
    if not isinstance(located.data, dict):
        raise SpecError("expected a mapping of spec keys at the top level", file=located.file, line=1)
    model = spec_model()
    try:
        spec = model.model_validate(located.data)
    except ValidationError as exc:
        raise first_error(exc, located, model) from None
    check_references(spec, located, require_fingerprints)
    return LoadedSpec(spec=spec, path=path, display=str(path), sha256=located.sha256, located=located)


def write_fingerprints(path: Path, fingerprints: dict[str, str]) -> list[str]:
    """Set `splits.<name>.fingerprint` in the spec file, keeping its comments, order and layout (ruamel.yaml's
    round-trip mode; PyYAML would drop every comment). Returns the splits whose value changed."""
    import io

    from ruamel.yaml import YAML

    from specrun.core.files import write_atomic

    yaml_rt = YAML()  # round-trip: comments and key order survive
    yaml_rt.preserve_quotes = True
    yaml_rt.width = 4096  # never re-wrap the author's lines
    text = path.read_text(encoding="utf-8-sig")
    document = yaml_rt.load(text)
    changed = []
    for name, value in fingerprints.items():
        split = document["splits"][name]
        if split.get("fingerprint") != value:
            split["fingerprint"] = value
            changed.append(name)
    if changed:
        buffer = io.StringIO()
        yaml_rt.dump(document, buffer)
        write_atomic(path, buffer.getvalue())
    return changed
