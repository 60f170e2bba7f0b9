"""The bench scripts run, at toy sizes, through the functions they time: BENCHMARKS.md's figures come from them,
and a bench that no longer runs (a signature changed under it) is found here, not when a figure is next wanted.
Their numbers are not checked here (they are timings); what they report is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_bench(script: str, *arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *arguments], capture_output=True,
                          text=True, cwd=cwd, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_scale_bench_reports_every_phase(tmp_path: Path) -> None:
    done = run_bench("scale.py", "--docs", "3000", "--queries", "40", "--top-k", "20", "--resamples", "50",
                     "--chunk-size", "700", "--folder", str(tmp_path), cwd=tmp_path)
    report = json.loads(done.stdout)
    assert (report["docs"], report["queries"], report["top_k"], report["chunk_size"]) == (3000, 40, 20, 700)
    assert set(report["phases"]) == {"generate", "read", "encode", "search", "metrics", "bootstrap"}
    assert all(phase["peak_rss_gb"] > 0 for phase in report["phases"].values())
    assert report["exact_fallbacks"] == 0 and report["store_gb"] > 0 and report["floor_s"] >= 0
    for score in report["scores"].values():
        assert 0 <= score["ci_low"] <= score["value"] <= score["ci_high"] <= 1 and score["n"] == 40
    assert list(tmp_path.iterdir()) == []  # the data and the store went with the temporary folder


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_corpus_memory_bench_runs_specrun_cold_warm_and_without_cache(tmp_path: Path) -> None:
    done = run_bench("corpus_memory.py", "--docs", "1500", "--queries", "20", "--top-k", "10", cwd=tmp_path)
    (row,) = json.loads(done.stdout)
    assert (row["docs"], row["queries"]) == (1500, 20)
    assert all(row[f"{name}_peak_mib"] > 0 and row[f"{name}_s"] > 0 for name in ("cold", "warm", "no_cache"))
    assert row["store_mib"] >= 0


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_real_corpus_bench_encodes_with_the_real_model(tmp_path: Path) -> None:
    done = run_bench("real_corpus.py", "--docs", "300", "--queries", "20", "--floor-docs", "100", "--warmup", "0",
                     cwd=tmp_path)
    report = json.loads(done.stdout)
    assert (report["docs"], report["queries"], report["floor_docs"]) == (300, 20, 100)
    assert report["texts_encoded_by_specrun"] == report["unique_texts"] > 300
    assert report["plain_texts_per_s"][0] > 0 and report["specrun_texts_per_s"][0] > 0
    assert report["specrun_peak_rss_mib"][0] > 0 and report["floor_peak_rss_mib"] > 0
    assert report["scores"] and all(0 <= value <= 1 for value in report["scores"].values())


@pytest.mark.slow  # a few minutes of repetitions: the full suite runs it
def test_coverage_harness_measures_a_small_version(tmp_path: Path) -> None:
    """bench/coverage.py at a small size: 80 repetitions of BIOSSES-sized STS and BANKING77-sized clustering
    through specrun's estimate path, plus compare's paired interval and the leaderboard's rank intervals. The
    percentile interval's broken promise on the 77-class V-measure shows (it never holds the value), and each
    metric's own method covers about as often as it claims."""
    report_path = tmp_path / "coverage.json"
    done = run_bench("coverage.py", "--reps", "80", "--resamples", "200", "--families", "sts", "clustering77",
                     "--sizes", "100", "3000", "--expected-draws", "100", "--jobs", "2", "--json", str(report_path),
                     cwd=tmp_path)
    report = json.loads(report_path.read_text())
    assert "| sts | pearson | 100 | **" in done.stdout  # the percentile column, the metric's own, in bold
    entries = {(e["family"], e["metric"], e["n"]): e for e in report["table"]}
    assert set(entries) == {("sts", "pearson", 100), ("sts", "spearman", 100), ("clustering77", "v_measure", 3000),
                            ("clustering77", "nmi", 3000), ("clustering77", "ari", 3000)}
    for (family, metric, _), entry in entries.items():
        assert entry["reps"] == 80 and entry["undefined"] == 0 and entry["expected_draws"] > 0
        own = entry["methods"][entry["default"]]
        assert own["n_intervals"] == 80 and own["coverage"] >= 0.85, (family, metric, own)
        if entry["default"] == "centred":
            assert own["outside"] == 0.0
    v_measure = entries[("clustering77", "v_measure", 3000)]["methods"]
    assert v_measure["percentile"]["outside"] == 1.0 and v_measure["percentile"]["coverage"] < 0.2
    assert v_measure["centred"]["coverage"] >= 0.85
    assert [(case["case"], case["grid"]) for case in report["paired"]] == [
        (name, grid) for name in ("sts_pearson", "classification_accuracy", "clustering_v_measure")
        for grid in ("wide", "narrow")]
    for case in report["paired"]:
        assert case["reps"] == 80 and case["coverage"] >= 0.85 and case["deciles"]
        assert sum(d["count"] for d in case["deciles"]) == 80
    assert [row["n"] for row in report["ranks"]] == [300, 1000, 3000]
    assert all(len(row["coverage_per_model"]) == 6 for row in report["ranks"])


@pytest.mark.slow  # a real model: the full suite runs it
def test_clustering_parity_bench_runs_its_specrun_side(tmp_path: Path) -> None:
    """bench/mteb_parity_clustering.py without MTEB (its side environment is not this one): the three cases'
    numbers, each level's mean V-measure included; the comparison itself is in BENCHMARKS.md."""
    done = run_bench("mteb_parity_clustering.py", "--specrun-only", cwd=tmp_path)
    cases = [json.loads(line) for line in done.stdout.splitlines()]
    assert [case["case"] for case in cases] == ["all embedded", "70 embedded", "uneven, integer labels"]
    for case in cases:
        assert 0 < case["level 1"] <= 1 and 0 < case["level 2"] <= 1 and case["v_measure_std"] > 0
        assert case["v_measure"] == pytest.approx((case["level 1"] + case["level 2"]) / 2, abs=1e-12)
