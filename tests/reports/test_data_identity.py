"""A split's statistics against its spec's `expect` (MTEB's descriptive statistics for an imported task): issue
46's data identity. BIOSSES is the example: MTEB's copy of it (mteb/biosses-sts) is not the file specrun reads,
and MTEB's own statistics of its copy tell the two apart where the scores alone cannot."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.results import Results
from tests.conftest import SPECS, run_cli

# MTEB 2.26.24's descriptive statistics of its BIOSSES test split, as the checked-in catalogue holds them
MTEB_BIOSSES = {"n": 100, "fields": {"text1": {"unique": 92, "characters": 15467},
                                     "text2": {"unique": 97, "characters": 15846}}}
# this repository's file, counted by hand from the run's own statistics (biosses/all.tsv)
OURS = {"n": 100, "fields": {"text1": {"unique": 93, "characters": 15535},
                             "text2": {"unique": 98, "characters": 15974}}}


def _spec(folder: Path, expect: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))
    path = folder / "biosses.yaml"
    spec["splits"]["test"]["expect"] = {"source": "a reference", **expect}
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _run(spec: Path, data_dir: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Results, str, str]:
    code, stdout, err = run_cli([str(spec), "--data-dir", str(data_dir), "--output", str(out), "--adapter",
                                 "hashing", "-q"], capsys)
    assert code == 0, err
    path = Path(stdout.strip().splitlines()[-1])
    return Results.model_validate_json(path.read_text()), err, (path.parent / "report.md").read_text()


def test_the_catalogue_holds_the_numbers_used_here() -> None:
    from specrun.mteb import task

    stats = task("BIOSSES").stats["test"]
    assert stats["num_samples"] == MTEB_BIOSSES["n"]
    for field in ("text1", "text2"):
        assert stats[f"{field}_statistics"]["unique_texts"] == MTEB_BIOSSES["fields"][field]["unique"]
        assert stats[f"{field}_statistics"]["total_text_length"] == MTEB_BIOSSES["fields"][field]["characters"]


def test_statistics_that_agree_say_nothing(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results, err, report = _run(_spec(tmp_path / "s", OURS), data_dir, tmp_path / "o", capsys)
    stats = results.statistics["test"]
    for field in ("text1", "text2"):  # the expectation above is the file's own: checked here independently
        with (data_dir / "biosses" / "all.tsv").open(encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle, delimiter="\t"))[1:]  # one quoted field holds a tab
        texts = [row[7 if field == "text1" else 8] for row in rows]  # sentence1, sentence2
        assert (len(set(texts)), sum(len(t) for t in texts)) == (OURS["fields"][field]["unique"],
                                                                 OURS["fields"][field]["characters"])
        assert stats.fields[field].unique == OURS["fields"][field]["unique"]
    assert "differs from" not in err and "data identity" not in report.lower()


def test_a_copy_that_is_not_the_references_data_is_said(tmp_path: Path, data_dir: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """MTEB's statistics of its own copy against this file: every difference named, on stderr and in the
    report, the score unchanged (the run does not refuse: the data is pinned by the spec, the reference is
    another copy)."""
    _, err, report = _run(_spec(tmp_path / "s", MTEB_BIOSSES), data_dir, tmp_path / "o", capsys)
    line = next(line for line in err.splitlines() if "differs from a reference" in line)
    for said in ("text1 distinct texts: 93, expected 92", "text1 characters: 15535, expected 15467",
                 "text2 distinct texts: 98, expected 97", "text2 characters: 15974, expected 15846"):
        assert said in line
    assert "items:" not in line  # 100 pairs on both sides
    assert "split test differs from a reference" in report


def test_an_expectation_of_a_field_the_items_lack_is_said(tmp_path: Path, data_dir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, err, _ = _run(_spec(tmp_path / "s", {"n": 99, "fields": {"label": {"label_counts": [3, 2]}}}), data_dir,
                     tmp_path / "o", capsys)
    assert "items: 100, expected 99" in err and "label: no such field in the items" in err
