"""The spec model, its generated schema, and the YAML reader."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from specrun.core.errors import SpecError
from specrun.core.plain_yaml import load_plain
from specrun.spec import load_spec, schema_text
from specrun.yamlsafe import parse_yaml
from tests.conftest import ROOT, SPECS

SPEC_FILES = sorted(SPECS.glob("*.yaml"))


def test_checked_in_schema_matches_the_model() -> None:
    checked_in = (ROOT / "schema" / "spec.schema.json").read_text(encoding="utf-8")
    assert checked_in == schema_text(), "schema drifted: run `make schema` and commit schema/spec.schema.json"


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: p.name)
def test_every_spec_validates_with_pydantic_and_the_json_schema(path: Path) -> None:
    loaded = load_spec(path)
    assert loaded.spec.id == path.stem
    schema = json.loads((ROOT / "schema" / "spec.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(load_plain(path.read_text(encoding="utf-8")))


def test_schema_rejects_what_the_model_rejects() -> None:
    schema = json.loads((ROOT / "schema" / "spec.schema.json").read_text(encoding="utf-8"))
    data = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))
    data["sources"]["biosses"]["revision"] = "2394a2e"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)
    data = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))
    data["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)


def test_duplicate_key_names_both_lines() -> None:
    with pytest.raises(SpecError) as info:
        parse_yaml("a: 1\nb:\n  c: 2\n  c: 3\n", "x.yaml")
    assert info.value.one_line() == "x.yaml:4: b.c: duplicate key (first defined on line 3)"


@pytest.mark.parametrize("text, expected", [
    ("a: !!python/object:os.system {}\n", "tag tag:yaml.org,2002:python/object:os.system is not allowed"),
    ("a: !!python/name:os.system ''\n", "is not allowed"),
    ("base: &b {x: 1}\nother:\n  <<: *b\n", "merge keys (<<) are not allowed"),
    ("a: !custom 3\n", "tag !custom is not allowed"),
    ("a: &x [*x]\n", "a recursive alias"),  # was a RecursionError traceback
    ("b:\n  c: &m\n    d: *m\n", "a recursive alias"),
    ("a: [1, 2\n", "YAML syntax error"),
    ("", "file is empty"),
    # keys other YAML readers (fingerprint --write's round-trip one) name otherwise: a KeyError traceback there
    ("splits:\n  2020: {}\n", "key 2020 is read by YAML as an integer, not a name; write it in quotes: '2020'"),
    ("subsets:\n  010: {}\n", "key 010 is read by YAML as an integer"),
    ("subsets:\n  1.10: {}\n", "key 1.10 is read by YAML as a number"),
    ("subsets:\n  null: {}\n", "key null is read by YAML as null"),
    ("columns:\n  yes: text\n", "key yes is read by YAML as a boolean"),
])
def test_unsafe_or_broken_yaml_is_one_line(text: str, expected: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_yaml(text, "x.yaml")
    line = info.value.one_line()
    assert expected in line and "\n" not in line and line.startswith("x.yaml")


def test_a_quoted_number_is_a_name() -> None:
    assert parse_yaml("splits:\n  '2020': {}\n  \"010\": {}\n", "x.yaml").data == {"splits": {"2020": {}, "010": {}}}


def test_alias_explosion_is_refused() -> None:
    text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefg":
        previous = chr(ord(level) - 1)
        text += f"{level}: &{level} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}," \
                f" *{previous}, *{previous}, *{previous}, *{previous}]\n"
    with pytest.raises(SpecError, match="YAML nodes"):
        parse_yaml(text, "bomb.yaml")


def test_lines_are_kept_for_every_key_path() -> None:
    located = parse_yaml("top:\n  list:\n    - a: 1\n    - b: 2\n", "x.yaml")
    assert located.line_of(("top", "list", 1, "b")) == 4
    assert located.line_of(("top", "missing")) == 1
