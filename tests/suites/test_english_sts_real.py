"""The English STS suite on the real model and the real data: STS-B and SICK-R equal MTEB's published Spearman
(embeddings-benchmark/results, mteb 1.12.75) and scipy on the gold read with the csv module, and the suite's
Mean (task) is its members' mean. Slow: about 12k sentences."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from scipy import stats

from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow

FOLDER = "sentence-transformers__all-MiniLM-L6-v2"
MTEB = "mteb-results/sentence-transformers__all-MiniLM-L6-v2/8b3219a92973c328a8e22fadcfa821b5dc75636a"


def gold_of(path: Path, names: list[str] | None, column: str) -> list[float]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, fieldnames=names, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [float(row[column]) for row in reader]


def test_english_sts_suite_equals_mteb_s_published_numbers(tmp_path: Path, data_dir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli([str(ROOT / "suites" / "english-sts.yaml"), "--data-dir", str(data_dir), "--output",
                              str(tmp_path)], capsys)
    assert code == 0, err
    suite = json.loads(Path(out.strip().splitlines()[-1]).read_text(encoding="utf-8"))
    members = {m["spec_id"]: m for m in suite["members"]}
    sick = data_dir / "sick"
    golds = {"stsb": gold_of(data_dir / "stsb" / "sts-test.csv", ["genre", "filename", "year", "id", "score", "s1",
                                                                  "s2"], "score"),
             "sickr": [g for name in ("train", "trial", "test_annotated")
                       for g in gold_of(sick / f"SICK_{name}.txt", None, "relatedness_score")]}
    for spec_id, task in (("stsb", "STSBenchmark"), ("sickr", "SICK-R")):
        published = json.loads((data_dir / MTEB / f"{task}.json").read_text(encoding="utf-8"))
        assert members[spec_id]["value"] == pytest.approx(published["scores"]["test"][0]["cosine_spearman"],
                                                          abs=1e-6)
        rows = [json.loads(line) for line in (tmp_path / spec_id / FOLDER / "predictions.jsonl").open()]
        assert [r["gold"] for r in rows] == golds[spec_id]  # the file's order, every row
        rho = stats.spearmanr([r["prediction"] for r in rows], golds[spec_id]).statistic
        assert members[spec_id]["value"] == pytest.approx(rho, abs=1e-12)
    assert members["sickr"]["n"] == 9927 and members["stsb"]["n"] == 1379
    (mean,) = suite["aggregates"]
    assert mean["value"] == math.fsum(m["value"] for m in suite["members"]) / 3
    assert mean["ci_low"] < mean["value"] < mean["ci_high"]
