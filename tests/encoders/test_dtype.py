"""--dtype is a declared choice: applied to the model, recorded in provenance and in the cache key, refused where
it means nothing (the hashing adapter has no model) and warned about where it is slow (float16 on a CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specrun.encoders.devices import dtype_warning
from tests.conftest import SPECS, assert_one_line_error, run_cli, run_ok

BIOSSES = str(SPECS / "biosses.yaml")


@pytest.mark.slow
def test_bfloat16_on_cpu_is_its_own_cache_key_recorded_and_close_to_float32(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = [BIOSSES, "-q", "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache"), "--device", "cpu"]
    full = run_ok([*common, "--output", str(tmp_path / "a")], capsys)
    half = run_ok([*common, "--output", str(tmp_path / "b"), "--dtype", "bfloat16"], capsys)
    assert full.provenance.model.dtype == "float32" and half.provenance.model.dtype == "bfloat16"
    assert half.texts.encoded == 183  # never served the float32 vectors
    assert len(list((tmp_path / "cache" / "embeddings").iterdir())) == 2
    a, b = (r.scores["test"]["spearman_zero_shot"].value for r in (full, half))
    assert a != b and abs(a - b) < 0.02, (a, b)
    again = run_ok([*common, "--output", str(tmp_path / "c"), "--dtype", "bfloat16"], capsys)
    assert again.texts.encoded == 0 and again.scores == half.scores
    assert again.provenance.model.dtype == "bfloat16"


def test_a_dtype_the_hashing_adapter_cannot_honour_is_refused(tmp_path: Path, data_dir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--no-cache",
                            "--output", str(tmp_path / "out"), "--dtype", "bfloat16"], capsys)
    assert_one_line_error(code, err, contains="--dtype bfloat16")
    assert not (tmp_path / "out").exists()


def test_float16_on_cpu_is_one_warning() -> None:
    message = dtype_warning("float16", ["cpu"])
    assert message is not None and "\n" not in message and "bfloat16" in message
    assert dtype_warning("float16", ["cuda:0"]) is None and dtype_warning("bfloat16", ["cpu"]) is None
