"""Each format owns the shared source keys it reads (`ReaderEntry.layout_keys`): a key that the spec's format
does not read is one line naming the formats that do."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from specrun.core.registry import READERS
from tests.conftest import SPECS, assert_one_line_error, run_cli


@pytest.mark.parametrize("key, value, expected", [
    ("quoting", "none", "`quoting` is an option of tsv/csv, not of jsonl"),
    ("names", ["a", "b"], "`names` is an option of tsv/csv/xls, not of jsonl"),
    ("extra_fields", "ignore", "`extra_fields` is an option of tsv/csv, not of jsonl"),
])
def test_a_key_the_format_does_not_read(key: str, value: object, expected: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load((SPECS / "jsts.yaml").read_text(encoding="utf-8"))
    source = next(iter(data["sources"].values()))
    layout = source.get("mirror", source)
    assert layout["format"] == "jsonl"
    layout[key] = value
    spec = tmp_path / "jsts.yaml"
    spec.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli(["validate", str(spec)], capsys)
    assert_one_line_error(code, err, contains=expected)


def test_the_delimited_formats_read_every_layout_key() -> None:
    assert READERS["tsv"].layout_keys == READERS["csv"].layout_keys == {"quoting", "names", "optional_names",
                                                                         "extra_fields"}
    assert READERS["xls"].layout_keys == {"names"} and not READERS["jsonl"].layout_keys


def _jsick_with(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load((SPECS / "jsick.yaml").read_text(encoding="utf-8"))
    edit(data["sources"]["jsick"])
    spec = tmp_path / "jsick.yaml"
    spec.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return spec


def test_the_reader_options_stand_in_options_or_at_the_top_level(tmp_path: Path, data_dir: Path) -> None:
    """`quoting: none` in the source's `options` (the reader's own model) reads what the older top-level key reads:
    the same items, so the spec's pinned fingerprint still holds."""
    from specrun.data import load_split
    from tests.conftest import plan_of

    def move(source: dict) -> None:
        source["options"] = {"quoting": source.pop("quoting")}

    moved = load_split(plan_of(_jsick_with(tmp_path, move)), "test", data_dir)
    plain = load_split(plan_of(SPECS / "jsick.yaml"), "test", data_dir)
    assert moved.fingerprint == plain.fingerprint and len(moved.items) == len(plain.items)
    assert plan_of(SPECS / "jsick.yaml").sources["jsick"].layout.options == {"quoting": "none"}


@pytest.mark.parametrize("edit, expected", [
    (lambda source: source.update(options={"quoting": "none"}), "`quoting` is given twice"),
    (lambda source: source.update(options={"quoting": "always"}, quoting="minimal"),
     "sources.jsick.options.quoting"),
    (lambda source: source.update(options={"optional_names": ["a"]}), "optional trailing fields need `names`"),
    (lambda source: source.update(options={"delimiter": ";"}), "sources.jsick.options.delimiter"),
])
def test_bad_reader_options_are_one_line(edit, expected: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["validate", str(_jsick_with(tmp_path, edit))], capsys)
    assert_one_line_error(code, err, contains=expected)
