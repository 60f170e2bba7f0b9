"""On a CPU each batch is computed by torch on one thread, several batches at once (encoders/batch_threads.py): the
vectors are those of a plain single-thread encode, byte for byte, whatever torch's thread count, and the count is
given back after each group."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import load_adapter
from specrun.encoders.batch_threads import BatchThreads
from specrun.encoders.models import resolve_model
from tests.conftest import reference_model

pytestmark = pytest.mark.slow  # the real model: the full suite (CI) runs this module

# 72 texts of many lengths, in batches of 16: the last batch holds 8, a shape whose vectors torch computes
# otherwise on two threads than on one (checked below, so the test can tell the layouts apart)
TEXTS = [" ".join(["word"] * (1 + i % 23)) + f" number {i}." for i in range(64)] + [
    f"word word word word word word number {i}." for i in range(8)]


def _plain_encode(batch_size: int, threads: int = 1) -> np.ndarray:
    """sentence-transformers' own encode, batch by batch, torch on `threads` threads (one: the reference)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return np.concatenate([reference_model().encode(TEXTS[i:i + batch_size], batch_size=batch_size)
                               for i in range(0, len(TEXTS), batch_size)])
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_vectors_equal_a_single_thread_encode_whatever_the_thread_count(threads: int) -> None:
    import torch

    expected = _plain_encode(16)
    if threads == 2 and np.array_equal(_plain_encode(16, threads=2), expected):
        # on some processors (MKL's kernels differ by CPU) two threads compute this batch as one does: the equality
        # below could not tell the layouts apart, so it proves nothing here (the 1- and 3-thread cases still run)
        pytest.skip("two torch threads give this batch the one-thread bytes on this processor")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        adapter = load_adapter(resolve_model(None), EncoderSettings(adapter="sentence-transformers"), ["cpu"])
        try:
            vectors = adapter.encode_group(TEXTS, 16)
            assert torch.get_num_threads() == threads  # given back after each group: a model never closed keeps it
            assert adapter.threads.workers == (threads if threads > 1 else 0)  # type: ignore[attr-defined]
        finally:
            adapter.close()
    finally:
        torch.set_num_threads(before)
    assert vectors.dtype == np.float32 and vectors.shape == expected.shape
    assert np.array_equal(vectors, expected)


def test_the_transformers_adapter_gives_the_same_vectors_on_one_and_on_two_threads() -> None:
    import torch

    before = torch.get_num_threads()
    found = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        adapter = load_adapter(resolve_model(None), EncoderSettings(adapter="transformers"), ["cpu"])
        try:
            found.append(adapter.encode_group(TEXTS, 16, prompt="query: "))
        finally:
            adapter.close()
    torch.set_num_threads(before)
    assert np.array_equal(found[0], found[1]) and not np.isnan(found[0]).any()


def test_batches_come_back_in_order_and_close_drops_those_not_begun() -> None:
    """Results in the batches' order whatever finishes first; after an error the batches not begun never run."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    layout = BatchThreads("cpu")
    try:
        threads_seen: list[int] = []

        def slow_or_fast(n: int) -> int:
            threads_seen.append(torch.get_num_threads())
            time.sleep(0.05 * (n % 3))
            return n

        assert layout.run(slow_or_fast, list(range(9))) == list(range(9))
        assert threads_seen == [1] * 9 and torch.get_num_threads() == 2
        started: list[int] = []
        gate = threading.Event()

        def encode(n: int) -> int:
            started.append(n)
            if n == 0:
                raise ValueError("batch 0 failed")
            gate.wait(5)
            return n

        with pytest.raises(ValueError, match="batch 0 failed"):
            layout.run(encode, list(range(50)))
        gate.set()
    finally:
        layout.close()
    assert torch.get_num_threads() == 2
    torch.set_num_threads(before)
    assert len(started) < 50  # the rest were cancelled, not computed after the error


def test_ctrl_c_while_batch_threads_encode_ends_at_once_and_writes_nothing(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C while the batch threads encode (the main thread waits on them): exit 130 in one line within
    seconds, no results; the groups finished before it stay cached whole, and a rerun completes from them."""
    import os
    import signal
    import subprocess
    import sys

    from specrun.encoders.shards import read_shard_header
    from tests.conftest import ROOT, SPECS, assert_one_line_error, hears_ctrl_c

    cache, out = tmp_path / "cache", tmp_path / "out"
    command = [sys.executable, "-m", "specrun", str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "-q",
               "--batch-size", "2", "--cache-dir", str(cache), "--output", str(out)]  # 92 batches, groups of 32 texts
    env = {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"}  # torch's 2 threads
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=hears_ctrl_c)
    deadline = time.monotonic() + 300
    while not list(cache.rglob("*.shard")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    clock = time.monotonic()
    stdout, stderr = process.communicate(timeout=60)
    took = time.monotonic() - clock
    assert_one_line_error(process.returncode, stderr, 130, contains="interrupted")
    assert stdout == "" and took < 10, took
    assert not out.exists()  # nothing written
    stored = sum(read_shard_header(shard)[0]["count"] for shard in cache.rglob("*.shard"))
    assert 0 < stored < 183
    from specrun.cli import main  # the rerun in this process (torch is loaded here already)
    from specrun.results import Results

    code = main(command[3:])
    rerun = capsys.readouterr()
    assert code == 0, rerun.err
    resumed = Results.model_validate_json(Path(rerun.out.strip().splitlines()[-1]).read_text())
    assert resumed.texts.encoded == 183 - stored  # the cached groups were whole and used
