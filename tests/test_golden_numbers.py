"""Numbers do not move when the code is restructured: every seed spec (hashing adapter and real model) and every
fixture spec gives the scores and predictions stored in `golden_numbers.json`, value for value and byte for byte.

The file was recorded on the code before the restructuring (commit 1471850) with
`SPECRUN_GOLDEN_RECORD=1 pytest tests/test_golden_numbers.py`; a change that moves a number on purpose records it
again and says why in its commit.

The hashing adapter's numbers are the same on every machine, so they are checked byte for byte. The real model's
are not: torch's CPU kernels differ between processors (AVX2 or AVX-512, Intel or AMD), and a vector moves by about
1e-8, so on another machine BIOSSES's Pearson moved by 2.6e-8 and every predictions file's bytes with it. Those
cases are checked to REAL_MODEL_TOLERANCE, their predictions by the scores computed from them."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.conftest import SPECS, run_cli
from tests.fixtures import fixture_spec, make_beir, make_csts, make_qabot

GOLDEN = Path(__file__).resolve().parent / "golden_numbers.json"
RECORD = os.environ.get("SPECRUN_GOLDEN_RECORD") == "1"
REAL_MODEL_TOLERANCE = 1e-6  # far above a processor's 1e-8, far below any change of code or data


def outcome(results_path: Path) -> dict[str, object]:
    """What a run's numbers are: results.json's scores as written, and the sha256 of each predictions file."""
    results = json.loads(results_path.read_text(encoding="utf-8"))
    folder = results_path.parent
    predictions = {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
                   for p in sorted(folder.rglob("*")) if p.is_file() and p.name.startswith("predictions")}
    texts = {key: results["texts"][key] for key in ("total", "unique")}  # `encoded` depends on the cache's state
    return {"scores": results["scores"], "texts": texts, "predictions": predictions}


def check(case: str, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli([*args, "--name", "golden"], capsys)
    assert code == 0, err
    found = outcome(Path(out.strip().splitlines()[-1]))
    stored = json.loads(GOLDEN.read_text(encoding="utf-8")) if GOLDEN.exists() else {}
    if RECORD:
        stored[case] = found
        GOLDEN.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    assert case in stored, f"{case}: no stored numbers (record them with SPECRUN_GOLDEN_RECORD=1)"
    if not case.endswith("+default-model"):
        assert found == stored[case], case
        return
    expected = stored[case]
    assert found["texts"] == expected["texts"], case
    assert found["predictions"].keys() == expected["predictions"].keys(), case
    assert found["scores"].keys() == expected["scores"].keys(), case
    for split, scores in expected["scores"].items():
        assert found["scores"][split].keys() == scores.keys(), (case, split)
        for metric, score in scores.items():
            got = found["scores"][split][metric]
            assert {k: v for k, v in got.items() if not isinstance(v, float)} == \
                {k: v for k, v in score.items() if not isinstance(v, float)}, (case, split, metric)
            for key, value in score.items():
                if isinstance(value, float):
                    assert got[key] == pytest.approx(value, abs=REAL_MODEL_TOLERANCE), (case, split, metric, key)


def _fixture_case(name: str, tmp_path: Path) -> list[str]:
    data = tmp_path / "data"
    if name == "qabot":
        make_qabot(data)
        spec = fixture_spec("qabot", tmp_path, data)
    elif name == "csts":
        make_csts(data)
        spec = fixture_spec("csts", tmp_path, data)
    elif name == "beir_retrieval":
        make_beir(data, source="qabot")
        spec = fixture_spec("qabot", tmp_path, data, edit={
            "id": "beirset", "sources.qabot.format": "beir", "sources.qabot.fetch": True,
            "sources.qabot.files": {"test": {"path": "data"}},
            "sources.qabot.columns": {"query": "query", "candidates": "candidates", "relevance": "relevance"}})
    else:
        from tests.protocols.test_corpus_retrieval import corpus_spec, make_graded_beir

        make_graded_beir(data)
        spec = corpus_spec(tmp_path, data)
    return [str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out")]


@pytest.mark.parametrize("name", ["qabot", "csts", "beir_retrieval", "corpusset"])
def test_fixture_specs_keep_their_numbers(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check(f"{name}+hashing", [*_fixture_case(name, tmp_path), "--adapter", "hashing"], capsys)


SEED_SPECS = ["biosses", "jsts", "jsick", "jacsts"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SEED_SPECS)
def test_seed_specs_keep_their_numbers_hashing(name: str, data_dir: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    check(f"{name}+hashing", [str(SPECS / f"{name}.yaml"), "--data-dir", str(data_dir), "--output",
                              str(tmp_path / "out"), "--adapter", "hashing"], capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", SEED_SPECS)
def test_seed_specs_keep_their_numbers_real_model(name: str, data_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    check(f"{name}+default-model", [str(SPECS / f"{name}.yaml"), "--data-dir", str(data_dir), "--output",
                                    str(tmp_path / "out")], capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["qabot", "csts", "corpusset"])
def test_fixture_specs_keep_their_numbers_real_model(name: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    check(f"{name}+default-model", _fixture_case(name, tmp_path), capsys)
