"""The data stage on the real BIOSSES mirror: quoting, ids, fingerprints, subsets."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from specrun.data import fingerprint, load_split
from specrun.spec import load_spec
from tests.conftest import SPECS, plan_of


def test_quoted_tab_in_row_27_is_kept(data_dir: Path) -> None:
    items = load_split(plan_of(SPECS / "biosses.yaml"), "test", data_dir).items
    row = items[27]
    assert row.id == "biosses-027"
    assert "\t" in row.fields["text2"] and row.fields["text2"].endswith("regression of established tumors")
    assert row.fields["gold"] == 1.4
    assert len(items) == 100


def test_fingerprint_is_the_same_from_another_file_format(tmp_path: Path, data_dir: Path) -> None:
    """Same items as JSON Lines instead of TSV: same fingerprint, so the spec's check holds across formats."""
    with (data_dir / "biosses" / "all.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    (tmp_path / "biosses").mkdir()
    with (tmp_path / "biosses" / "all.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({**row, "score": float(row["score"])}, ensure_ascii=False) + "\n")
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8")
    text = text.replace("format: tsv", "format: jsonl").replace("train: all.tsv", "train: all.jsonl")
    spec = tmp_path / "biosses.yaml"
    spec.write_text(text, encoding="utf-8")
    from_jsonl = load_split(plan_of(spec), "test", tmp_path)  # raises if the fingerprint differed
    from_tsv = load_split(plan_of(SPECS / "biosses.yaml"), "test", data_dir)
    assert from_jsonl.fingerprint == from_tsv.fingerprint == fingerprint(from_tsv.items)


def test_subset_count_is_seeded_and_in_source_order(tmp_path: Path, data_dir: Path) -> None:
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8").replace("    test: all", "    test: 30")
    spec = tmp_path / "biosses.yaml"
    spec.write_text(text, encoding="utf-8")
    first = load_split(plan_of(spec), "test", data_dir)
    second = load_split(plan_of(spec), "test", data_dir)
    ids = [item.id for item in first.items]
    assert ids == [item.id for item in second.items] and len(ids) == 30 and ids == sorted(ids)
    assert first.n_source == 100
    changed = tmp_path / "other.yaml"
    changed.write_text(text.replace("seed: 20261006", "seed: 1"), encoding="utf-8")
    assert [item.id for item in load_split(plan_of(changed), "test", data_dir).items] != ids


def test_fingerprint_changes_with_any_value() -> None:
    from specrun.core.types import Item

    base = [Item("a", {"text1": "x", "text2": "y", "gold": 1.0})]
    assert fingerprint(base) != fingerprint([Item("a", {"text1": "x", "text2": "y", "gold": 1.5})])
    assert fingerprint(base) != fingerprint([Item("b", {"text1": "x", "text2": "y", "gold": 1.0})])
    assert fingerprint(base) == fingerprint([Item("a", {"gold": 1.0, "text2": "y", "text1": "x"})])


@pytest.mark.parametrize("flag", ["validate", "fingerprint"])
def test_validate_and_fingerprint_commands(flag: str, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main

    args = [flag, str(SPECS / "biosses.yaml")] + (["--data-dir", str(data_dir)] if flag == "fingerprint" else [])
    assert main(args) == 0
    captured = capsys.readouterr()
    if flag == "fingerprint":
        spec = load_spec(SPECS / "biosses.yaml").spec
        assert f"test: {spec.splits['test'].fingerprint}" in captured.out
    else:
        assert "ok (biosses)" in captured.err
