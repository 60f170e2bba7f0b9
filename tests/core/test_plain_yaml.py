"""core.plain_yaml.load_plain: yaml.safe_load's values from libyaml's parser, and every failure a yaml.YAMLError
(which its callers report in one line), where safe_load let a ValueError or a RecursionError through."""

from __future__ import annotations

import pytest
import yaml

from specrun.core.plain_yaml import LOADER, load_plain

DOCUMENTS = [
    "configs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*.parquet\n",
    "license: mit\nlanguage: [ja, en]\ntags:\n  - a\n  - 'b: c'\nn: 3\nx: 1.5e3\ny: null\nz: yes\nw: 2026-12-07\n",
    "text: |\n  two\n  lines\nfolded: >\n  one\n  line\nunicode: 日本語 ✓ \U0001F600\n",
    "anchors: &a {k: 1}\nagain: *a\n",
    "",
    "- just\n- a list\n",
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_values_are_safe_load_s(text: str) -> None:
    assert load_plain(text) == yaml.safe_load(text)


def test_the_parser_is_libyaml_where_pyyaml_has_it() -> None:
    assert LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@pytest.mark.parametrize("text", [
    "n: " + "9" * 5_000,  # the constructor's ValueError: an int past Python's digit limit
    "a: " + "[" * 20_000,  # nesting past the parser's depth (the pure-Python one: RecursionError)
    "a: [unclosed",
    "s: x\udcff",  # a lone surrogate (an undecodable command-line byte): UnicodeEncodeError
    "!!python/object:os.system {}",  # no tag builds an object
], ids=["long-int", "deep", "unclosed", "surrogate", "object-tag"])
def test_every_failure_is_a_yaml_error(text: str) -> None:
    with pytest.raises(yaml.YAMLError):
        load_plain(text)
