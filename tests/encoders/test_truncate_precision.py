"""--truncate-dim and --precision: numbers equal a direct computation (truncation and normalisation by hand, codes
from sentence-transformers' own quantize_embeddings, scipy correlations), cache entries never cross settings, and
both name the result folder. The hashing adapter, and the real model in one test; all slow, since quantisation
imports torch (sentence-transformers')."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import HashingAdapter
from tests.conftest import LOADS_TORCH, SPECS, assert_one_line_error, reference_model, run_cli, run_ok
from tests.test_biosses_real import read_biosses

BIOSSES = str(SPECS / "biosses.yaml")
pytestmark = LOADS_TORCH  # sentence-transformers' quantize_embeddings, in the references and quantised runs: slow


def hashing(tmp_path: Path, data_dir: Path, out: str, *flags: str) -> list[str]:
    return [BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache"),
            "--output", str(tmp_path / out), *flags]


def scored(vectors_of, rows: list[dict[str, str]], precision: str = "float32") -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Pearson and Spearman of the cosine, every vector as `precision` codes calibrated on the spec's unique texts."""
    from sentence_transformers import quantize_embeddings

    texts = sorted({r["sentence1"] for r in rows} | {r["sentence2"] for r in rows})
    left, right = vectors_of([r["sentence1"] for r in rows]), vectors_of([r["sentence2"] for r in rows])
    if precision != "float32":
        calibration = vectors_of(texts)
        ranges = np.stack([calibration.min(axis=0), calibration.max(axis=0)])
        if precision == "int8":
            left, right = (quantize_embeddings(v, "int8", ranges=ranges).astype(np.float64) for v in (left, right))
        else:  # bits as +1/-1: cosine = 1 - 2 * hamming / dim
            def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
                packed_a, packed_b = (quantize_embeddings(v, "ubinary") for v in (a, b))
                return np.unpackbits(packed_a ^ packed_b, axis=1, count=a.shape[1]).sum(axis=1)
            cosine = 1 - 2 * hamming(left, right) / left.shape[1]
            gold = np.array([float(r["score"]) for r in rows])
            cosine = np.round(cosine, 12)
            return {"pearson": stats.pearsonr(cosine, gold).statistic,
                    "spearman": stats.spearmanr(cosine, gold).statistic}
    left, right = left.astype(np.float64), right.astype(np.float64)
    cosine = np.round(np.sum(left * right, axis=1) / (np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)),
                      12)
    gold = np.array([float(r["score"]) for r in rows])
    return {"pearson": stats.pearsonr(cosine, gold).statistic, "spearman": stats.spearmanr(cosine, gold).statistic}


def hashing_vectors(texts: list[str], truncate_dim: int | None = None) -> np.ndarray:
    vectors = np.asarray(HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"]).encode_group(texts, 32))
    if truncate_dim:
        vectors = vectors[:, :truncate_dim]
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def check(results, expected: dict[str, float]) -> None:  # type: ignore[no-untyped-def]
    for metric, value in expected.items():
        assert results.scores["test"][f"{metric}_zero_shot"].value == pytest.approx(value, abs=1e-9), metric


@pytest.mark.parametrize(("flags", "truncate_dim", "precision"), [
    ((), None, "float32"),
    (("--truncate-dim", "24"), 24, "float32"),
    (("--precision", "int8"), None, "int8"),
    (("--precision", "binary"), None, "binary"),
    (("--precision", "ubinary"), None, "binary"),  # the same bits, stored unsigned: the same numbers
    (("--truncate-dim", "24", "--precision", "int8"), 24, "int8"),
])
def test_numbers_equal_a_direct_computation(flags: tuple[str, ...], truncate_dim: int | None, precision: str,
                                            tmp_path: Path, data_dir: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    rows = read_biosses(data_dir)
    results = run_ok(hashing(tmp_path, data_dir, "o", *flags), capsys)
    check(results, scored(lambda texts: hashing_vectors(texts, truncate_dim), rows, precision))
    model = results.provenance.model
    assert (model.truncate_dim, model.precision) == (truncate_dim, flags[-1] if "--precision" in flags else "float32")
    folder = next((tmp_path / "o").rglob("results.json")).parent.name
    assert ("truncate-dim-24" in folder) == bool(truncate_dim)
    assert ("precision-" in folder) == ("--precision" in flags)


def test_truncated_and_quantised_runs_reuse_the_full_cached_vectors(tmp_path: Path, data_dir: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The cache holds the model's full float32 vectors: a truncated or quantised run encodes nothing that a plain
    run cached (one key, one folder), scores its own shaped vectors, and never changes what a plain run reads."""
    full = run_ok(hashing(tmp_path, data_dir, "a"), capsys)
    short = run_ok(hashing(tmp_path, data_dir, "b", "--truncate-dim", "16"), capsys)
    assert full.texts.encoded == 183 and short.texts.encoded == 0 and short.scores != full.scores
    rows = read_biosses(data_dir)
    check(short, scored(lambda texts: hashing_vectors(texts, 16), rows, "float32"))
    keys = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("embeddings/*/key.json")]
    assert len(keys) == 1 and "truncate_dim" not in keys[0]
    binary = run_ok(hashing(tmp_path, data_dir, "c", "--precision", "binary"), capsys)
    assert binary.texts.encoded == 0 and binary.scores != full.scores
    assert binary.provenance.model.precision == "binary"  # this run's, not that of the run that cached the vectors
    both = run_ok(hashing(tmp_path, data_dir, "f", "--truncate-dim", "16", "--precision", "int8"), capsys)
    assert both.texts.encoded == 0
    check(both, scored(lambda texts: hashing_vectors(texts, 16), rows, "int8"))
    again = run_ok(hashing(tmp_path, data_dir, "d"), capsys)
    assert again.texts.encoded == 0 and again.scores == full.scores
    assert again.provenance.model.truncate_dim is None  # the run's own setting, not the last writer's
    short_again = run_ok(hashing(tmp_path, data_dir, "e", "--truncate-dim", "16"), capsys)
    assert short_again.texts.encoded == 0 and short_again.scores == short.scores
    assert short_again.provenance.model.truncate_dim == 16


def test_a_truncation_that_leaves_a_zero_vector_names_the_truncation() -> None:
    from specrun.core.errors import ModelError
    from specrun.encoders.vectors import shaped

    vectors = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=np.float32)
    with pytest.raises(ModelError, match=r"--truncate-dim 2 leaves 1 vector\(s\) all zeros"):
        shaped(vectors, 2, normalize=True)
    with pytest.raises(ModelError, match="--truncate-dim 3: the model's vectors have 3 dimensions already"):
        shaped(vectors, 3, normalize=True)  # nothing to cut: refused (a run equal to one without it)


def test_a_truncation_beyond_the_model_is_one_line(tmp_path: Path, data_dir: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(hashing(tmp_path, data_dir, "o", "--truncate-dim", "65"), capsys)
    assert_one_line_error(code, err, contains="--truncate-dim 65: the model's vectors have 64 dimensions")
    assert not (tmp_path / "o").exists()


def test_compare_names_the_setting_that_differs(tmp_path: Path, data_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    run_ok(hashing(tmp_path, data_dir, "o"), capsys)
    run_ok(hashing(tmp_path, data_dir, "o", "--precision", "int8"), capsys)
    run_ok(hashing(tmp_path, data_dir, "o", "--truncate-dim", "32"), capsys)
    plain, *others = sorted(str(p) for p in (tmp_path / "o").rglob("results.json"))
    shown = []
    for other in others:
        code, out, err = run_cli(["compare", plain, other], capsys)
        assert code == 0, err
        shown.append(out)
    assert any("precision int8" in out for out in shown) and any("truncate dim 32" in out for out in shown), shown


@functools.cache
def plain_encode(texts: tuple[str, ...]) -> np.ndarray:
    """`reference_model().encode` of these texts in this order: the same call gives the same vectors, so the int8
    and binary cases share one encode of each list (read-only: the codes are computed from copies)."""
    vectors = reference_model().encode(list(texts))
    vectors.setflags(write=False)
    return vectors


@pytest.mark.slow  # the real model
@pytest.mark.parametrize("flags", [("--truncate-dim", "128"), ("--precision", "int8"), ("--precision", "binary")])
def test_real_model_numbers_equal_sentence_transformers_own_functions(
        flags: tuple[str, ...], tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = read_biosses(data_dir)
    # the session cache: the three cases' runs share one encode of BIOSSES (--truncate-dim and --precision shape
    # the vectors after the cache, test_cache.py's test_a_key_never_reads_another_keys_chunks)
    results = run_ok([BIOSSES, "-q", "--data-dir", str(data_dir), "--output", str(tmp_path / "o"), *flags], capsys)
    model = reference_model()
    if flags[0] == "--truncate-dim":
        def vectors_of(texts: list[str]) -> np.ndarray:  # the library's truncation, then its normalisation
            return model.encode(texts, truncate_dim=128, normalize_embeddings=True)
        expected = scored(vectors_of, rows)
    else:
        expected = scored(lambda texts: plain_encode(tuple(texts)), rows, flags[1])
    for metric, value in expected.items():  # batches differ (the run sorts by length): float noise only
        assert results.scores["test"][f"{metric}_zero_shot"].value == pytest.approx(value, abs=2e-3 if
                                                                                     flags[1] != "128" else 1e-6)


def test_batch_size_is_keyed_recorded_and_names_the_folder(tmp_path: Path, data_dir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A vector moves by about 1e-7 with its batch: a warm run of another batch size never gets the other's
    vectors, and results say which batch size made them."""
    default = run_ok(hashing(tmp_path, data_dir, "a"), capsys)
    small = run_ok(hashing(tmp_path, data_dir, "b", "--batch-size", "8"), capsys)
    assert small.texts.encoded == default.texts.encoded == 183
    assert (default.provenance.model.batch_size, small.provenance.model.batch_size) == (32, 8)
    assert next((tmp_path / "b").rglob("results.json")).parent.name.endswith("+batch-size-8")


def test_the_model_load_is_a_phase_of_its_own(tmp_path: Path, data_dir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.cli import main

    args = [a for a in hashing(tmp_path, data_dir, "a") if a != "-q"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "loaded adapter hashing (no model) in" in err
    assert err.index("loaded adapter") < err.index("encoding")
