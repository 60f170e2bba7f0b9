"""BIOSSES end to end on the real bundled model and the real data, checked against an independent
computation: rows read with the csv module, sentence-transformers encode, scipy correlations."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import load_adapter
from specrun.encoders.batching import encode_texts
from specrun.encoders.models import DEFAULT_MODEL_SHA256, resolve_model
from specrun.results import Results
from tests.conftest import SPECS, reference_model, run_cli

pytestmark = pytest.mark.slow  # the real model throughout: the full suite (CI) runs this module


def read_biosses(data_dir: Path) -> list[dict[str, str]]:
    with (data_dir / "biosses" / "all.tsv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


@pytest.fixture(scope="module")
def reference(data_dir: Path) -> dict[str, object]:
    """Pearson and Spearman computed without any specrun code."""
    rows = read_biosses(data_dir)
    model = reference_model()
    left = model.encode([r["sentence1"] for r in rows], convert_to_numpy=True)
    right = model.encode([r["sentence2"] for r in rows], convert_to_numpy=True)
    cosine = np.sum(left * right, axis=1) / (np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1))
    cosine = np.round(cosine, 12)  # the protocol's documented rule: equal up to 1e-12 is a tie
    gold = np.array([float(r["score"]) for r in rows])
    texts = [r["sentence1"] for r in rows] + [r["sentence2"] for r in rows]
    return {
        "pearson": stats.pearsonr(cosine, gold).statistic,
        "spearman": stats.spearmanr(cosine, gold).statistic,
        "cosine": cosine,
        "texts": texts,
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> list[Path]:
    """Two runs of the CLI on the default model, into two output roots."""
    from specrun.cli import main

    paths = []
    cache = tmp_path_factory.mktemp("cache")
    for name in ("first", "second"):  # the second run reads every vector from the first run's cache
        out = tmp_path_factory.mktemp(name)
        assert main([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output", str(out), "-q",
                     "--cache-dir", str(cache)]) == 0
        paths.append(out / "biosses" / "sentence-transformers__all-MiniLM-L6-v2" / "results.json")
    return paths


def test_bundled_model_weights_are_verified() -> None:
    model = resolve_model(None)
    assert model.origin == "bundled"
    weights = hashlib.sha256((Path(model.path) / "model.safetensors").read_bytes()).hexdigest()
    assert model.weights_sha256 == DEFAULT_MODEL_SHA256 == weights


def test_scores_equal_independent_computation(runs: list[Path], reference: dict[str, object]) -> None:
    results = Results.model_validate_json(runs[0].read_text())
    test = results.scores["test"]
    assert test["pearson_zero_shot"].value == pytest.approx(reference["pearson"], abs=1e-6)
    assert test["spearman_zero_shot"].value == pytest.approx(reference["spearman"], abs=1e-6)
    assert test["pearson_zero_shot"].n == test["spearman_zero_shot"].n == 100


def test_interval_contains_value_and_is_reproducible(runs: list[Path]) -> None:
    first, second = (json.loads(p.read_text()) for p in runs)
    for metric in ("pearson_zero_shot", "spearman_zero_shot"):
        score = first["scores"]["test"][metric]
        assert score["ci_low"] < score["value"] < score["ci_high"]
        assert score["ci_high"] - score["ci_low"] < 0.5
        again = second["scores"]["test"][metric]
        assert (again["ci_low"], again["ci_high"], again["value"]) == (score["ci_low"], score["ci_high"],
                                                                      score["value"])


def test_text_counts_and_provenance(runs: list[Path], reference: dict[str, object]) -> None:
    results = Results.model_validate_json(runs[0].read_text())
    texts = reference["texts"]
    assert results.texts.total == len(texts) == 200
    assert results.texts.unique == len(set(texts))
    assert results.texts.encoded == len(set(texts))
    warm = Results.model_validate_json(runs[1].read_text())
    assert (warm.texts.unique, warm.texts.encoded) == (len(set(texts)), 0)
    assert warm.provenance.model == results.provenance.model
    p = results.provenance
    assert p.data["test"].revision == "2394a2eda8dae34a30f68f0770775fd5c2e863bd"
    assert p.data["test"].fingerprint.startswith("sha256:")
    assert p.model.weights_sha256 == DEFAULT_MODEL_SHA256
    assert (p.model.adapter, p.model.pooling, p.model.normalize, p.model.max_length) == (
        "sentence-transformers", "mean", True, 256)
    assert p.uncertainty.resamples == 1000 and p.uncertainty.seed == 20261006
    assert {"numpy", "scipy", "torch", "sentence-transformers"} <= set(p.packages)
    assert len(p.spec_sha256) == 64


def test_report_is_the_card_plus_results(runs: list[Path]) -> None:
    report = (runs[0].parent / "report.md").read_text()
    results = Results.model_validate_json(runs[0].read_text())
    assert report.startswith("# Biomedical sentence similarity (BIOSSES)\n\n> Licence to confirm")
    value = results.scores["test"]["spearman_zero_shot"]
    row = (f"| test | spearman_zero_shot | {value.value:.4f} | [{value.ci_low:.4f}, {value.ci_high:.4f}] | "
           f"{value.interval} | 100 pairs |")
    assert row in report
    assert DEFAULT_MODEL_SHA256 in report


def test_transformers_adapter_gives_the_same_cosines(reference: dict[str, object], data_dir: Path) -> None:
    rows = read_biosses(data_dir)
    adapter = load_adapter(resolve_model(None), EncoderSettings(adapter="transformers"), ["cpu"])
    assert adapter.info.settings.adapter == "transformers" and adapter.info.pooling == "mean"
    left = encode_texts(adapter, [r["sentence1"] for r in rows], batch_size=16)
    right = encode_texts(adapter, [r["sentence2"] for r in rows], batch_size=16)
    cosine = np.sum(left * right, axis=1) / (np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1))
    cosine = np.round(cosine, 12)  # the protocol's documented rule: equal up to 1e-12 is a tie
    np.testing.assert_allclose(cosine, reference["cosine"], atol=1e-5, rtol=0)


def test_results_path_is_printed_last(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output",
                              str(tmp_path), "--adapter", "transformers", "--batch-size", "7"], capsys)
    assert code == 0, err
    last = out.strip().splitlines()[-1]
    assert last == str(tmp_path / "biosses" / "sentence-transformers__all-MiniLM-L6-v2+adapter-transformers"
                       "+batch-size-7" / "results.json")  # the chosen adapter and batch size name the folder
    results = Results.model_validate_json(Path(last).read_text())
    assert results.provenance.model.adapter == "transformers"
    assert "spearman_zero_shot" in err  # the rich table goes to stderr
