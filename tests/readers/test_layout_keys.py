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
