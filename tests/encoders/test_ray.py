"""--executor ray: Ray actors encode what the cache lacks, in the same canonical batches, so the numbers and the
cached vectors equal a single process; an actor killed mid-run is restarted by Ray and the run ends whole."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from specrun.encoders.store import read_shard_header
from specrun.results import Results
from tests.conftest import SPECS, require

ray = require("ray", "Ray is not installed here (pip install 'specrun[ray]')")
pytestmark = pytest.mark.slow  # a local Ray cluster takes ~10 s to start, the real model a few more

BIOSSES = str(SPECS / "biosses.yaml")


@pytest.fixture(scope="module")
def cluster() -> object:
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield ray
    ray.shutdown()


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Results | None, str]:
    from specrun.cli import main

    code = main([BIOSSES, "-q", *args])
    captured = capsys.readouterr()
    results = Results.model_validate_json(Path(captured.out.strip().splitlines()[-1]).read_text()) if code == 0 \
        else None
    return code, results, captured.err


def cached_vectors(cache: Path) -> dict[bytes, np.ndarray]:
    """Every vector in a cache, by text digest, read straight from the shards."""
    found: dict[bytes, np.ndarray] = {}
    for path in cache.rglob("*.shard"):
        header, start = read_shard_header(path)
        raw = path.read_bytes()
        count, dim = header["count"], header["dim"]
        vectors = np.frombuffer(raw, dtype="<f4", offset=start + 32 * count).reshape(count, dim)
        for row in range(count):
            found[raw[start + 32 * row:start + 32 * row + 32]] = vectors[row]
    return found


@pytest.mark.parametrize("adapter", ["hashing", "sentence-transformers"])
def test_ray_gives_the_numbers_and_vectors_of_one_process(adapter: str, cluster: object, tmp_path: Path,
                                                          data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--data-dir", str(data_dir), "--adapter", adapter, "--batch-size", "8"]
    code, local, err = run([*common, "--cache-dir", str(tmp_path / "c1"), "--output", str(tmp_path / "a")], capsys)
    assert code == 0, err
    code, remote, err = run([*common, "--executor", "ray", "--cache-dir", str(tmp_path / "c2"),
                             "--output", str(tmp_path / "b")], capsys)
    assert code == 0, err
    assert local is not None and remote is not None
    assert remote.provenance.model.device == "ray:2xcpu" and remote.texts.encoded == 183
    for metric, score in local.scores["test"].items():
        assert remote.scores["test"][metric].value == pytest.approx(score.value, abs=1e-6), metric
    one, other = cached_vectors(tmp_path / "c1"), cached_vectors(tmp_path / "c2")
    assert one.keys() == other.keys() and len(one) == 183
    assert max(float(np.abs(one[key] - other[key]).max()) for key in one) <= 1e-6
    # a second Ray run is served by the cache and loads no model at all
    code, again, err = run([*common, "--executor", "ray", "--cache-dir", str(tmp_path / "c2"),
                            "--output", str(tmp_path / "c")], capsys)
    assert code == 0 and again is not None and again.texts.encoded == 0 and again.scores == remote.scores


def actor_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"ray::EncoderActor" in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_a_killed_actor_is_restarted_and_the_run_ends_whole(cluster: object, tmp_path: Path, data_dir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--data-dir", str(data_dir), "--batch-size", "1"]  # 183 batches, 12 groups: time to kill mid-run
    code, reference, err = run([*common, "--no-cache", "--output", str(tmp_path / "ref")], capsys)
    assert code == 0, err
    cache = tmp_path / "cache"
    killed: list[tuple[int, int]] = []

    def kill_one_actor_after_the_first_shard() -> None:
        deadline = time.time() + 300
        while time.time() < deadline:
            shards = list(cache.rglob("*.shard"))
            pids = actor_pids()
            if shards and pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append((pids[0], len(shards)))
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_one_actor_after_the_first_shard, daemon=True)
    killer.start()
    code, results, err = run([*common, "--executor", "ray", "--cache-dir", str(cache),
                              "--output", str(tmp_path / "ray")], capsys)
    killer.join(timeout=5)
    assert killed and killed[0][1] < 12, killed  # it died with groups still to do
    if code == 0:  # Ray restarted the actor and retried its group
        assert results is not None and results.texts.encoded == 183
        for metric, score in reference.scores["test"].items():
            assert results.scores["test"][metric].value == pytest.approx(score.value, abs=1e-6), metric
    else:  # or one clear line, and what finished is cached
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("specrun: error:") and "Ray" in lines[0], err


def test_ray_ranks_a_corpus_as_one_process_does(cluster: object, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The corpus-retrieval fixture (tests/protocols/corpus_beir.yaml) with Ray actors encoding: the same per-query
    rankings (predictions.jsonl) and the same scores, intervals included, as --executor local."""
    import json

    from specrun.cli import main
    from tests.protocols.test_corpus_retrieval import GRADED, corpus_spec, make_graded_beir

    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data)
    outcomes = {}
    for executor in ("local", "ray"):
        code = main([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--executor", executor,
                     "--no-cache", "--output", str(tmp_path / executor), "-q"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        path = Path(captured.out.strip().splitlines()[-1])
        results = Results.model_validate_json(path.read_text())
        rows = [json.loads(line) for line in (path.parent / results.predictions.file).read_text().splitlines()]
        outcomes[executor] = (results, rows)
    (local, local_rows), (remote, remote_rows) = outcomes["local"], outcomes["ray"]
    assert remote.provenance.model.device.startswith("ray:") and local.provenance.model.device == "cpu"
    assert len(local_rows) == len(GRADED) and remote_rows == local_rows
    assert remote.predictions.sha256 == local.predictions.sha256
    assert remote.texts.encoded == local.texts.encoded == local.texts.unique > 0
    assert remote.scores == local.scores
