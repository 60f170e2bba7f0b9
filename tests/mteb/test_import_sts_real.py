"""Imported STS12-STS16 (`specrun import mteb`), run in one call on local hub-style snapshots built from SentEval's
files (MTEB's column names), equal MTEB's published all-MiniLM-L6-v2 files: to 1e-6, STS12 within 2e-5 (its float32
cosines tie, and the tied order differs between encodes: ../shared/data/senteval-sts/PROVENANCE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.mteb.snapshots import hub_snapshot

MODEL = "sentence-transformers__all-MiniLM-L6-v2"
PUBLISHED = Path("mteb-results") / MODEL / "8b3219a92973c328a8e22fadcfa821b5dc75636a"
YEARS = {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186}


def senteval_snapshot(data_dir: Path, year: str, target: Path) -> int:
    """A local copy of MTEB's dataset repo for one year, as `datasets` reads it offline: README.md with `configs:`
    front matter and the test split as parquet (sentence1, sentence2, score), from the SentEval files."""
    from specrun.core.contracts import ReadLayout
    from specrun.readers.senteval_sts import read_senteval_sts

    rows = read_senteval_sts(data_dir / "senteval-sts" / f"{year}-en-test", ReadLayout("senteval_sts"), "test")
    hub_snapshot(target, {"test": {"sentence1": [row["sentence1"] for row in rows],
                                   "sentence2": [row["sentence2"] for row in rows],
                                   "score": [float(row["score"]) for row in rows]}})
    return len(rows)


@pytest.mark.slow  # the real model on 12,544 pairs (one model load, each unique text once)
def test_imported_sts12_to_16_equal_mteb_published(tmp_path: Path, data_dir: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["import", "mteb", *YEARS, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    specs = [Path(line) for line in out.split()]
    assert [spec.name for spec in specs] == [f"{year.lower()}.yaml" for year in YEARS]
    snapshot = tmp_path / "data"
    for year, pairs in YEARS.items():
        assert senteval_snapshot(data_dir, year, snapshot / year.lower()) == pairs
    for spec in specs:
        code, _, err = run_cli(["fingerprint", str(spec), "--data-dir", str(snapshot), "--write"], capsys)
        assert code == 0, err
    code, out, err = run_cli([*map(str, specs), "--data-dir", str(snapshot), "--output", str(tmp_path / "runs"),
                              "-q"], capsys)
    assert code == 0, err
    # data identity: SentEval's files hold MTEB's pairs and texts, with about 0.1 % more characters (whitespace,
    # PROVENANCE.md): each year says so against the statistics the import wrote from MTEB's, and nothing else
    for year in YEARS:
        said = next(line for line in err.splitlines() if line.startswith(f"specrun: warning: {year.lower()}: "))
        assert "differs from MTEB 2.26.24's descriptive statistics" in said and "characters" in said, said
        assert "distinct texts" not in said and "items:" not in said, said
    runs = [Path(line) for line in out.split()]
    assert len(runs) == len(YEARS)
    for (year, pairs), run in zip(YEARS.items(), runs, strict=True):
        results = json.loads(run.read_text(encoding="utf-8"))
        (entry,) = json.loads((data_dir / PUBLISHED / f"{year}.json").read_text(encoding="utf-8"))["scores"]["test"]
        score = results["scores"]["test"]["spearman_zero_shot"]
        assert score["n"] == pairs
        assert score["value"] == pytest.approx(entry["cosine_spearman"], abs=2e-5 if year == "STS12" else 1e-6), year
        assert score["ci_low"] <= score["value"] <= score["ci_high"]
        pearson = results["scores"]["test"]["pearson_zero_shot"]["value"]
        assert pearson == pytest.approx(entry["cosine_pearson"], abs=1e-6), year
    # check-published, as a user runs it, agrees (the imported specs' `mteb:` mappings name MTEB's files)
    code, out, err = run_cli(["check-published", *map(str, runs), "--published", str(data_dir / "mteb-results"),
                              "--tolerance", "2e-5"], capsys)
    assert code == 0, err + out
    for year in YEARS:
        rows = [line for line in out.splitlines() if f"| {year.lower()} |" in line]
        assert len(rows) == 2 and all("—" not in row for row in rows), year
    ranked_beside_the_slice(tmp_path / "runs", data_dir, tmp_path / "board", capsys)


def ranked_beside_the_slice(runs: Path, data_dir: Path, board_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the leaderboard with MTEB's results repository (`--published`, the slice), the model's published rows
    equal our runs within check-published's tolerance, and our row ranks where the model's published row ranks,
    bar the published rows within that tolerance of it (brahmairesearch/slx-v0.1 publishes the model's numbers to
    5e-7); our rank interval holds our rank."""
    code, _, err = run_cli(["leaderboard", str(runs), "-o", str(board_dir), "--published",
                            str(data_dir / "mteb-results-slice" / "results")], capsys)
    assert code == 0, err
    board = json.loads((board_dir / "leaderboard.json").read_text(encoding="utf-8"))
    seen = set()
    for spec in board["specs"]:
        for b in spec["boards"]:
            if not b["published"]:
                continue
            (ours,) = b["rows"]
            theirs = next(r for r in b["published"] if r["model"] == "sentence-transformers/all-MiniLM-L6-v2")
            tolerance = 2e-5 if spec["spec_id"] == "sts12" else 1e-6
            assert ours["score"] == pytest.approx(theirs["score"], abs=tolerance), (spec["spec_id"], b["metric"])
            near = sum(abs(r["score"] - theirs["score"]) <= tolerance for r in b["published"])
            assert abs(ours["published_rank"] - theirs["rank"]) <= near, (spec["spec_id"], b["metric"])
            assert ours["published_rank_low"] <= ours["published_rank"] <= ours["published_rank_high"]
            seen.add(spec["spec_id"])
    assert seen == {year.lower() for year in YEARS}
