"""JSTS, JSICK and JACSTS on the real data and the real model, each number against an independent computation:
files read with json/csv/xlrd directly, sentence-transformers encode, scipy. Slow (about 40k texts twice)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from specrun.results import Results
from tests.conftest import SPECS, plan_of, reference_model

pytestmark = pytest.mark.slow

Pairs = list[tuple[str, str, float]]


def jsts(data_dir: Path, split: str) -> Pairs:
    with (data_dir / "jsts" / f"{split}-v1.3.json").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [(r["sentence1"], r["sentence2"], float(r["label"])) for r in rows]


def jsick(data_dir: Path, split: str) -> Pairs:
    with (data_dir / "jsick" / "jsick.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r["sentence_A_Ja"], r["sentence_B_Ja"], float(r["relatedness_score_Ja"])) for r in rows
            if r["data"] == split]


def jacsts(data_dir: Path) -> Pairs:
    import xlrd

    sheet = xlrd.open_workbook(str(data_dir / "jacsts" / "dataset_JA_Clinical_STS.xls")).sheet_by_index(0)
    return [(str(sheet.cell_value(r, 0)), str(sheet.cell_value(r, 1)), float(sheet.cell_value(r, 2)))
            for r in range(sheet.nrows)]


@pytest.fixture(scope="module")
def expected(data_dir: Path) -> dict[tuple[str, str], dict[str, float]]:
    sets = {("jsts", s): jsts(data_dir, s) for s in ("train", "valid", "test")}
    sets |= {("jsick", s): jsick(data_dir, s) for s in ("test", "train")}
    sets[("jacsts", "test")] = jacsts(data_dir)
    # The same batches as the runner (longest first, then by text, 64 a batch): a vector moves by ~1e-7 with the
    # shape of its batch, enough to swap near-tied cosines and move a Spearman by 1e-5. Everything else here
    # (reading the files, cosine, scipy) is computed without specrun.
    texts = sorted({t for pairs in sets.values() for a, b, _ in pairs for t in (a, b)}, key=lambda t: (-len(t), t))
    model = reference_model()
    vectors = {}
    for start in range(0, len(texts), 64):
        chunk = texts[start:start + 64]
        vectors.update(zip(chunk, model.encode(chunk, batch_size=64), strict=True))
    out = {}
    for key, pairs in sets.items():
        a = np.stack([vectors[p[0]] for p in pairs]).astype(np.float64)
        b = np.stack([vectors[p[1]] for p in pairs]).astype(np.float64)
        # rounded to 12 decimals, the protocol's documented tie rule: identical sentences give 1 +- 2e-16
        cosine = np.round(np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)), 12)
        gold = np.array([p[2] for p in pairs])
        out[key] = {"spearman": stats.spearmanr(cosine, gold).statistic, "pearson": stats.pearsonr(cosine, gold)[0],
                    "n": len(pairs)}
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Results]:
    """One invocation for the three specs: one model load, the union of their texts encoded once."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("seed")
    specs = [str(SPECS / f"{name}.yaml") for name in ("jsts", "jsick", "jacsts")]
    assert main([*specs, "--data-dir", str(data_dir), "--output", str(out), "-q", "--batch-size", "64"]) == 0
    folder = "sentence-transformers__all-MiniLM-L6-v2+batch-size-64"  # the batch size names the folder
    return {name: Results.model_validate_json((out / name / folder / "results.json").read_text())
            for name in ("jsts", "jsick", "jacsts")}


@pytest.mark.parametrize("spec, split, sizes", [
    ("jsts", "train", 12451), ("jsts", "valid", 1457), ("jsts", "test", 1589),
    ("jsick", "test", 4927), ("jsick", "train", 4500), ("jacsts", "test", 3670),
])
def test_spearman_equals_independent_computation(spec: str, split: str, sizes: int, results: dict[str, Results],
                                                 expected: dict[tuple[str, str], dict[str, float]]) -> None:
    score = results[spec].scores[split]["spearman_zero_shot"]
    reference = expected[(spec, split)]
    assert score.n == reference["n"] == sizes
    assert score.value == pytest.approx(reference["spearman"], abs=1e-6)
    assert score.ci_low < score.value < score.ci_high
    if spec == "jsts":
        pearson = results[spec].scores[split]["pearson_zero_shot"]
        assert pearson.value == pytest.approx(reference["pearson"], abs=1e-6)


def test_jsts_valid_is_about_the_published_figure(results: dict[str, Results]) -> None:
    assert results["jsts"].scores["valid"]["spearman_zero_shot"].value == pytest.approx(0.626, abs=0.005)


def test_unique_texts_only(results: dict[str, Results], data_dir: Path) -> None:
    texts = [t for s in ("train", "valid", "test") for a, b, _ in jsts(data_dir, s) for t in (a, b)]
    counts = results["jsts"].texts
    assert (counts.total, counts.unique) == (len(texts), len(set(texts)))
    train_valid = [t for s in ("train", "valid") for a, b, _ in jsts(data_dir, s) for t in (a, b)]
    assert (len(train_valid), len(set(train_valid))) == (27816, 24554)  # the figures of the speed issue


def test_xls_and_its_tsv_derivative_have_one_fingerprint(tmp_path: Path, data_dir: Path) -> None:
    """The mirror's jacsts.tsv (derived from the .xls) maps to the same items: the fingerprint is format-free."""
    from specrun.data import load_split

    text = (SPECS / "jacsts.yaml").read_text(encoding="utf-8")
    text = text.replace("format: xls", "format: csv").replace(
        "    options:\n      names: [sentence1, sentence2, score]", "")
    text = text.replace("format: csv", "format: tsv").replace("        sha256: 78d66fee", "        mirror: jacsts.tsv\n"
                                                              "        # sha256: 78d66fee")
    spec = tmp_path / "jacsts.yaml"
    spec.write_text(text, encoding="utf-8")
    from_tsv = load_split(plan_of(spec), "test", data_dir)  # checks the spec's fingerprint
    assert from_tsv.n_source == 3670
