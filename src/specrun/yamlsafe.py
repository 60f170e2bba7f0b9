"""Safe YAML reading that keeps line numbers and refuses what PyYAML lets slide.

PyYAML's safe loader silently keeps the last of two duplicate keys and forgets where each value came from.
We compose the node graph with the safe loader (no tag can build an object) and build the plain Python
values ourselves, so that duplicate keys, merge keys and unknown tags are errors and every key path keeps
its line. No maintained library does both (ruamel keeps lines but allows duplicates with a warning only).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

from specrun.core.errors import SpecError
from specrun.core.files import read_regular_file
from specrun.core.plain_yaml import LOADER

KeyPath = tuple[str | int, ...]

MAX_SPEC_BYTES = 1 << 20
MAX_NODES = 100_000

_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_STR = "tag:yaml.org,2002:str"
_READ_AS = {"int": "an integer", "float": "a number", "bool": "a boolean", "null": "null"}
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"


def dotted(path: KeyPath) -> str:
    """Render a key path the way a user writes it: splits.test.source[0]."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


class LocatedYaml:
    """A parsed YAML document with the line of every key path in it. A document merged from several files (a spec
    that `extends` another) also keeps, per key path, the file it was written in (`files`; a path not in it was
    written in `file`), so an error in an inherited key names the file that holds it."""

    def __init__(self, data: Any, lines: dict[KeyPath, int], file: str,
                 files: dict[KeyPath, str] | None = None) -> None:
        self.data = data
        self.lines = lines
        self.file = file
        self.files = files or {}
        self.sha256 = ""  # of the bytes parsed, when read from a file (of the whole chain, when merged)

    def _nearest(self, path: KeyPath) -> KeyPath:
        """The nearest enclosing path that has a line (a missing key reports its parent)."""
        path = tuple(path)
        while path and path not in self.lines:
            path = path[:-1]
        return path

    def line_of(self, path: KeyPath) -> int:
        return self.lines.get(self._nearest(path), 1)

    def file_of(self, path: KeyPath) -> str:
        """The file the nearest enclosing path was written in: the same path line_of reports."""
        return self.files.get(self._nearest(path), self.file)

    def error(self, path: KeyPath, message: str) -> SpecError:
        return SpecError(message, file=self.file_of(path), line=self.line_of(path), key=dotted(path))


# libyaml's parser where PyYAML was built with it (its wheels are): the same nodes and marks as the pure-Python one,
# about ten times faster (a run reads its spec, suite checks and prompt sets: 2,263 parses in the quick tests)
COMPOSER = LOADER


def read_yaml(path: Path, display: str | None = None, what: str = "a spec") -> LocatedYaml:
    """Read one YAML file (a spec, a suite, a prompt set: `what`) into plain dicts/lists/scalars; any defect raises
    a one-line SpecError."""
    name = display or str(path)
    raw = read_regular_file(path, MAX_SPEC_BYTES, what, error=SpecError, shown=name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save the file as UTF-8",
                        file=name, line=line) from None
    located = parse_yaml(text, name)
    located.sha256 = hashlib.sha256(raw).hexdigest()
    return located


def parse_yaml(text: str, name: str) -> LocatedYaml:
    try:
        node = yaml.compose(text, Loader=COMPOSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(f"YAML syntax error: {problem}", file=name, line=line) from None
    except yaml.reader.ReaderError as exc:
        # libyaml counts the position in the UTF-8 bytes it parsed, the pure-Python reader in characters
        before = text.encode("utf-8")[: exc.position] if COMPOSER is not yaml.SafeLoader else text[: exc.position]
        line = before.count(b"\n" if isinstance(before, bytes) else "\n") + 1
        raise SpecError(f"YAML syntax error: unacceptable character #x{exc.character:04x}", file=name,
                        line=line) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"YAML error: {exc}", file=name) from None
    if node is None:
        raise SpecError("file is empty; expected a mapping of spec keys", file=name, line=1)
    builder = _Builder(name)
    data = builder.build(node, ())
    return LocatedYaml(data, builder.lines, name)


class _Builder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: dict[KeyPath, int] = {}
        self.count = 0
        self.constructor = yaml.SafeLoader("")
        self.open: set[int] = set()  # the lists and mappings being built around the current node

    def fail(self, node: yaml.Node, path: KeyPath, message: str) -> SpecError:
        return SpecError(message, file=self.name, line=node.start_mark.line + 1, key=dotted(path))

    def build(self, node: yaml.Node, path: KeyPath) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(node, path, f"more than {MAX_NODES} YAML nodes (alias expansion?); a spec is small")
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.CollectionNode):
            if id(node) in self.open:
                raise self.fail(node, path, "an alias to a list or mapping that holds it (a recursive alias); "
                                            "a spec is a tree")
            self.open.add(id(node))
            try:
                return self._collection(node, path)
            finally:
                self.open.discard(id(node))
        if node.tag == _TIMESTAMP:
            return str(node.value)  # a date is kept as the text the author wrote
        if node.tag not in _SCALAR_TAGS:
            raise self.fail(node, path, f"tag {node.tag} is not allowed; only strings, numbers, booleans and null")
        return self.constructor.construct_object(node)

    def _collection(self, node: yaml.CollectionNode, path: KeyPath) -> Any:
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP:
                raise self.fail(node, path, f"tag {node.tag} is not allowed; only plain mappings")
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE:
                    raise self.fail(key_node, path, "merge keys (<<) are not allowed; write the keys out")
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                    raise self.fail(key_node, path, "a key must be a plain string")
                if key_node.tag != _STR:  # 2020, 1.10, 010, null, yes: other YAML readers name it otherwise
                    read_as = _READ_AS[key_node.tag.rsplit(":", 1)[-1]]
                    raise self.fail(key_node, path, f"key {key_node.value} is read by YAML as {read_as}, not a "
                                    f"name; write it in quotes: '{key_node.value}'")
                key = str(key_node.value)
                child = (*path, key)
                if key in out:
                    first = self.lines.get(child, "?")
                    raise self.fail(key_node, child, f"duplicate key (first defined on line {first})")
                self.lines[child] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, child)
            return out
        if node.tag != _SEQ:  # a sequence
            raise self.fail(node, path, f"tag {node.tag} is not allowed; only plain lists")
        return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
