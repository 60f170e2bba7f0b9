"""Model metadata (MTEB's ModelMeta fields): counted and read from the model folder, each field only where a file
states it (never guessed), the dimension from the vectors scored and the peak memory from the encode (absent when
nothing was encoded); recorded in results.json, shown in the report and as leaderboard columns, and never part
of a run's identity. The real-model run that checks them against independent counts is in
tests/protocols/test_similarity.py (a copy of the bundled model, scored by dot)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from specrun.encoders.metadata import card_front_matter, count_parameters, files_metadata
from specrun.encoders.models import ModelRef, resolve_model
from specrun.results import IDENTITY_FIELDS
from tests.conftest import SPECS, run_ok


def header_count(path: Path) -> int:
    """Parameters of a safetensors file counted by hand from its header: 8 bytes of little-endian length, then
    JSON (name -> dtype, shape); the floating-point tensors' shapes multiplied out and summed."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    return sum(math.prod(t["shape"]) for name, t in header.items()
               if name != "__metadata__" and t["dtype"] in ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"))


def test_the_bundled_models_metadata_equals_independent_counts() -> None:
    model = resolve_model(None)
    folder = Path(model.path)
    meta = files_metadata(model)
    assert meta["n_parameters"] == header_count(folder / "model.safetensors")
    assert 22_000_000 < meta["n_parameters"] < 23_000_000  # all-MiniLM-L6-v2: 22.7M (MTEB's ModelMeta)
    assert meta["weights_bytes"] == (folder / "model.safetensors").stat().st_size
    assert meta["max_tokens"] == json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    assert meta["license"] == "apache-2.0" and meta["languages"] == ["en"]
    assert "s2orc" in meta["training_datasets"] and "ms_marco" in meta["training_datasets"]
    assert "base_model" not in meta  # its card names none: absent, never guessed
    assert meta["sources"] == {"n_parameters": "safetensors headers", "weights_bytes": "weight files",
                               "max_tokens": "sentence_bert_config.json", "license": "README.md front matter",
                               "languages": "README.md front matter",
                               "training_datasets": "README.md front matter"}


def folder_ref(folder: Path) -> ModelRef:
    return ModelRef(name="m", path=str(folder), origin="local", revision=None, weights_sha256="0" * 64)


def test_only_what_the_folder_states_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 1000)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "max_position_embeddings": 128}))
    (tmp_path / "README.md").write_text("---\nlicense: [mit, apache-2.0]\nlanguage: [ja, en]\nbase_model: "
                                        "org/base\ndatasets:\n- a/b\n---\n# card\n")
    meta = files_metadata(folder_ref(tmp_path))
    assert "n_parameters" not in meta  # no safetensors header to count: not estimated from the bytes
    assert meta["weights_bytes"] == 1000 and meta["max_tokens"] == 128
    assert meta["sources"]["max_tokens"] == "config.json"
    assert meta["license"] == "mit, apache-2.0" and meta["languages"] == ["ja", "en"]
    assert meta["base_model"] == ["org/base"] and meta["training_datasets"] == ["a/b"]


@pytest.mark.parametrize("card", ["no front matter\n", "---\nlicense: [unclosed\n---\n", "---\n- a list\n---\n",
                                  "---\nlicense: mit\n", "---\nlicense: 3\n---\n",
                                  "---\nlicense: " + "9" * 5_000 + "\n---\n",  # an int past Python's digit limit
                                  "---\nlicense: " + "[" * 20_000 + "\n---\n"],  # nesting past any parser's depth
                         ids=["none", "unclosed", "a-list", "no-end", "an-int", "long-int", "deep"])
def test_a_card_without_usable_front_matter_states_nothing(tmp_path: Path, card: str) -> None:
    (tmp_path / "README.md").write_text(card)
    meta = files_metadata(folder_ref(tmp_path))
    assert "license" not in meta and "languages" not in meta
    assert card_front_matter(tmp_path) in ({}, {"license": 3})


def test_a_damaged_safetensors_header_is_not_counted(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 10) + b"not json!!")
    assert count_parameters(tmp_path) is None
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 40))
    assert count_parameters(tmp_path) is None


def test_peak_memory_and_metadata_are_no_part_of_a_runs_identity() -> None:
    assert not {"n_parameters", "embed_dim", "peak_memory_bytes", "model_meta"} & set(IDENTITY_FIELDS)


def test_the_hashing_adapter_records_its_dimension_and_nothing_of_the_unread_model(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.encoders.adapters import HashingAdapter

    results = run_ok([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output", str(tmp_path / "o"),
                      "--adapter", "hashing", "--no-cache"], capsys)
    meta = results.provenance.model_meta
    assert meta is not None and meta.embed_dim == HashingAdapter.DIMENSIONS
    assert meta.n_parameters is None and meta.license is None and meta.peak_memory_bytes is None
    assert meta.sources == {"embed_dim": "the vectors scored"}
    report = next((tmp_path / "o").rglob("report.md")).read_text()
    assert "model metadata: dimension 64; peak memory not measured" in report


def test_truncate_dim_is_the_recorded_dimension(tmp_path: Path, data_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    results = run_ok([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output", str(tmp_path / "o"),
                      "--adapter", "hashing", "--truncate-dim", "16"], capsys)
    assert results.provenance.model_meta is not None and results.provenance.model_meta.embed_dim == 16


def test_old_results_without_metadata_still_read(tmp_path: Path, data_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.results import Results

    run_ok([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output", str(tmp_path / "o"),
            "--adapter", "hashing"], capsys)
    data = json.loads(next((tmp_path / "o").rglob("results.json")).read_text())
    del data["provenance"]["model_meta"], data["provenance"]["similarity"]
    old = Results.model_validate(data)
    assert old.provenance.model_meta is None and old.provenance.similarity == {}
