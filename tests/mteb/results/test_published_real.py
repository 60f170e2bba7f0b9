"""The default model's stsb run against MTEB's published STSBenchmark file (mteb 1.12.75, in the data mirror):
the same number to better than 1e-6, through `check-published` as a user runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SPECS, run_cli


@pytest.mark.slow  # the real model (about 30 s on two cores)
def test_stsb_equals_the_published_stsbenchmark(tmp_path: Path, data_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli([str(SPECS / "stsb.yaml"), "--data-dir", str(data_dir), "--output", str(tmp_path),
                              "-q"], capsys)
    assert code == 0, err
    results = out.strip().splitlines()[-1]
    code, out, err = run_cli(["check-published", results, "--published", str(data_dir / "mteb-results"),
                              "--tolerance", "1e-6"], capsys)
    assert code == 0, err + out
    rows = [line for line in out.splitlines() if "| stsb |" in line]
    assert len(rows) == 2 and all("—" not in row for row in rows)
