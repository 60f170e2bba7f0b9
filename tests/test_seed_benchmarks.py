"""JSTS, JSICK and JACSTS on the real data and the real model, each number against an independent computation:
the files read with json/csv/xlrd directly, scipy on every pair, and a sentence-transformers encode of a seeded
sample of the pairs.

The run is the default one (batch size 32), so its vectors are the session cache's: when the golden-number test
ran first it encodes nothing (one encode per dataset in the session). Each split is checked in two independent
halves that together pin the number: (1) scipy's Spearman/Pearson of the run's per-pair cosines
(predictions.jsonl) against the gold read from the file, id by id, equals the reported value; (2) those cosines
equal a direct sentence-transformers encode for SAMPLE pairs per split (every pair of the whole sets would double
the module's time for no more than float noise: a vector moves by ~1e-7 with the shape of its batch)."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from specrun.results import Results
from tests.conftest import SPECS, direct_cosine, plan_of, prediction_rows

pytestmark = pytest.mark.slow

Pairs = dict[str, tuple[str, str, float]]  # item id -> (sentence 1, sentence 2, gold), as the file gives them
SAMPLE = 400  # pairs per split encoded directly
FOLDER = "sentence-transformers__all-MiniLM-L6-v2"


def jsts(data_dir: Path, split: str) -> Pairs:
    with (data_dir / "jsts" / f"{split}-v1.3.json").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {f"jsts-{r['sentence_pair_id']}": (r["sentence1"], r["sentence2"], float(r["label"])) for r in rows}


def jsick(data_dir: Path, split: str) -> Pairs:
    with (data_dir / "jsick" / "jsick.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return {f"jsick-{r['pair_ID']}": (r["sentence_A_Ja"], r["sentence_B_Ja"], float(r["relatedness_score_Ja"]))
            for r in rows if r["data"] == split}


def jacsts(data_dir: Path) -> Pairs:
    import xlrd

    sheet = xlrd.open_workbook(str(data_dir / "jacsts" / "dataset_JA_Clinical_STS.xls")).sheet_by_index(0)
    return {f"jacsts-{r:04d}": (str(sheet.cell_value(r, 0)), str(sheet.cell_value(r, 1)),
                                float(sheet.cell_value(r, 2))) for r in range(sheet.nrows)}


SPLITS = [("jsts", "train", 12451), ("jsts", "valid", 1457), ("jsts", "test", 1589),
          ("jsick", "test", 4927), ("jsick", "train", 4500), ("jacsts", "test", 3670)]


@pytest.fixture(scope="module")
def pairs(data_dir: Path) -> dict[tuple[str, str], Pairs]:
    out = {("jsts", s): jsts(data_dir, s) for s in ("train", "valid", "test")}
    out |= {("jsick", s): jsick(data_dir, s) for s in ("test", "train")}
    out[("jacsts", "test")] = jacsts(data_dir)
    return out


@pytest.fixture(scope="module")
def direct_cosines(pairs: dict[tuple[str, str], Pairs]) -> dict[tuple[str, str], dict[str, float]]:
    """The cosine of each sampled pair from a plain sentence-transformers encode, computed in float64."""
    chosen = {key: random.Random(f"{key[0]}-{key[1]}").sample(sorted(split), min(SAMPLE, len(split)))
              for key, split in pairs.items()}
    flat = [(key, i) for key, ids in chosen.items() for i in ids]
    cosines = direct_cosine([pairs[key][i][:2] for key, i in flat])
    out: dict[tuple[str, str], dict[str, float]] = {key: {} for key in chosen}
    for (key, i), cosine in zip(flat, cosines, strict=True):
        out[key][i] = float(cosine)
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, tuple[Results, Path]]:
    """One invocation for the three specs: one model load, the union of their texts encoded once (or read from
    the session cache the golden-number test filled at the same settings)."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("seed")
    specs = [str(SPECS / f"{name}.yaml") for name in ("jsts", "jsick", "jacsts")]
    assert main([*specs, "--data-dir", str(data_dir), "--output", str(out), "-q"]) == 0
    return {name: (Results.model_validate_json((out / name / FOLDER / "results.json").read_text()), out / name / FOLDER)
            for name in ("jsts", "jsick", "jacsts")}


def predictions(folder: Path, split: str) -> dict[str, tuple[float, float]]:
    """id -> (prediction, gold) of one split, as the run wrote them."""
    return {r["id"]: (r["prediction"], r["gold"]) for r in prediction_rows(folder) if r["split"] == split}


@pytest.mark.parametrize("spec, split, size", SPLITS)
def test_values_are_scipy_s_on_the_file_s_gold(spec: str, split: str, size: int,
                                                results: dict[str, tuple[Results, Path]],
                                                pairs: dict[tuple[str, str], Pairs]) -> None:
    """(1): every pair of the file is scored once, under its own id, with the file's gold; scipy on those cosines
    and the file's gold gives the reported value exactly."""
    run, folder = results[spec]
    found, expected = predictions(folder, split), pairs[(spec, split)]
    assert len(expected) == size and found.keys() == expected.keys()
    assert all(found[i][1] == expected[i][2] for i in expected)
    ids = sorted(expected)
    cosine = np.array([found[i][0] for i in ids])
    gold = np.array([expected[i][2] for i in ids])
    score = run.scores[split]["spearman_zero_shot"]
    assert score.n == size
    assert score.value == pytest.approx(stats.spearmanr(cosine, gold).statistic, abs=1e-12)
    assert score.ci_low < score.value < score.ci_high
    if spec == "jsts":
        pearson = run.scores[split]["pearson_zero_shot"]
        assert pearson.value == pytest.approx(stats.pearsonr(cosine, gold)[0], abs=1e-12)


@pytest.mark.parametrize("spec, split, size", SPLITS)
def test_cosines_are_a_direct_encode_s(spec: str, split: str, size: int, results: dict[str, tuple[Results, Path]],
                                       direct_cosines: dict[tuple[str, str], dict[str, float]]) -> None:
    """(2): the run's cosine of each sampled pair is the cosine of a plain sentence-transformers encode of the two
    sentences the file holds under that id (float32 vectors: equal to ~1e-7)."""
    found = predictions(results[spec][1], split)
    sample = direct_cosines[(spec, split)]
    assert len(sample) == min(SAMPLE, size)
    worst = max(abs(found[i][0] - cosine) for i, cosine in sample.items())
    assert worst < 1e-5, worst


def test_jsts_valid_is_about_the_published_figure(results: dict[str, tuple[Results, Path]]) -> None:
    assert results["jsts"][0].scores["valid"]["spearman_zero_shot"].value == pytest.approx(0.626, abs=0.005)


def test_unique_texts_only(results: dict[str, tuple[Results, Path]], data_dir: Path) -> None:
    texts = [t for s in ("train", "valid", "test") for a, b, _ in jsts(data_dir, s).values() for t in (a, b)]
    counts = results["jsts"][0].texts
    assert (counts.total, counts.unique) == (len(texts), len(set(texts)))
    train_valid = [t for s in ("train", "valid") for a, b, _ in jsts(data_dir, s).values() for t in (a, b)]
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
