"""--executor ray: Ray actors encode what the cache lacks, in the same canonical batches, so the numbers and the
cached vectors equal a single process; an actor killed mid-run is restarted by Ray and the run ends whole."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from specrun.results import Results
from tests.conftest import ROOT, SPECS, cached_vectors, hears_ctrl_c, require

ray = require("ray", "Ray is not installed here (pip install 'specrun[ray]')")
psutil = pytest.importorskip("psutil")  # Ray ships it
pytestmark = pytest.mark.slow  # a local Ray cluster takes ~10 s to start, the real model a few more

BIOSSES = str(SPECS / "biosses.yaml")
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}

# The tests that run specrun in its own process come first: the in-process `cluster` fixture below lives until the
# module ends, and one Ray cluster at a time is enough for a small machine.


@pytest.fixture()
def ray_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Ray's temp folder for a test's processes (short: Ray's socket paths must fit 107 bytes), and there the
    record `ray start` leaves of its cluster, pointing at a dead one."""
    folder = Path(tempfile.mkdtemp(prefix="specrun-ray-", dir="/tmp"))
    (folder / "ray_current_cluster").write_text(f"127.0.0.1:{closed_port()}\n")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_specrun(args: list[str], ray_tmp: Path, **env: str) -> subprocess.Popen[str]:
    """`specrun run BIOSSES -q ARGS` in a process of its own, on this tree's sources (Ray's workers inherit the
    path from the raylet this process starts)."""
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-m", "specrun", BIOSSES, "-q", *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=hears_ctrl_c,
                            env={**os.environ, "PYTHONPATH": path, "RAY_TMPDIR": str(ray_tmp), **env})



class Watch:
    """The processes a run spawned, and the sockets they listened on, seen every 0.2 s while it ran."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.seen: dict[int, str] = {}
        self.listening: set[tuple[str, str]] = set()  # (address, process name)
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while self.process.poll() is None:
            try:
                children = psutil.Process(self.process.pid).children(recursive=True)
            except psutil.Error:
                return
            for child in children:
                try:
                    # a child seen between fork and exec still shows this process's command: the latest wins
                    self.seen[child.pid] = " ".join([child.name(), *child.cmdline()])[:200].strip()
                    self.listening.update((conn.laddr.ip, child.name())
                                          for conn in child.net_connections(kind="inet")
                                          if conn.status == psutil.CONN_LISTEN)
                except psutil.Error:
                    continue
            time.sleep(0.2)

    def has(self, word: str) -> bool:
        return any(word in line for line in self.seen.values())

    def survivors(self, grace: float = 15.0, lingering: Callable[[str], bool] = lambda line: False,
                  ) -> dict[int, str]:
        """Those still running (zombies are dead) `grace` seconds after the run ended, or as soon as every one
        left is `lingering` (expected to outlive the run a while)."""
        self.thread.join(timeout=5)
        deadline = time.monotonic() + grace
        while True:
            alive = {}
            for pid, line in self.seen.items():
                try:
                    if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                        alive[pid] = line
                except psutil.Error:
                    continue
            if all(lingering(line) for line in alive.values()) or time.monotonic() > deadline:
                return alive
            time.sleep(0.5)


def test_a_run_starts_its_own_loopback_cluster_and_leaves_nothing(ray_tmp: Path, tmp_path: Path,
                                                                    data_dir: Path) -> None:
    """$RAY_ADDRESS and the recorded cluster point at dead ones: the run starts its own, on 127.0.0.1 only, and
    none of its Ray processes outlives it."""
    process = start_specrun(["--data-dir", str(data_dir), "--adapter", "hashing", "--executor", "ray",
                             "--no-cache", "--output", str(tmp_path / "out")], ray_tmp,
                            RAY_ADDRESS=f"127.0.0.1:{closed_port()}")
    watch = Watch(process)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    results = Results.model_validate_json(Path(out.strip().splitlines()[-1]).read_text())
    assert results.provenance.model.device.startswith("ray:") and results.texts.encoded == 183
    assert watch.has("raylet") and watch.has("gcs_server"), watch.seen
    assert watch.listening and {ip for ip, _ in watch.listening} <= LOOPBACK, watch.listening
    assert not watch.survivors(), watch.survivors()


@pytest.mark.parametrize(("signum", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                      (signal.SIGTERM, 143, "terminated"),
                                                      (signal.SIGKILL, -signal.SIGKILL, None)])
def test_ctrl_c_and_sigterm_end_a_ray_run_at_once(signum: int, code: int, word: str | None, ray_tmp: Path,
                                                  tmp_path: Path, data_dir: Path,
                                                  at_session_end: Callable[[Callable[[], None]], None]) -> None:
    """Signalled while its actors load the model and encode: the run ends within seconds, in one line, with
    the shell's code for the signal, and shuts its local cluster down. Killed outright, it says nothing; Ray's
    processes die with it (PR_SET_PDEATHSIG, on Linux) but its dashboard and runtime-env agents, which exit
    within about a minute."""
    process = start_specrun(["--data-dir", str(data_dir), "--executor", "ray", "--batch-size", "1",
                             "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "out")], ray_tmp)
    watch = Watch(process)
    deadline = time.monotonic() + 240
    while not watch.has("EncoderActor") and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.poll() is None and watch.has("EncoderActor"), process.communicate()
    time.sleep(1)
    process.send_signal(signum)
    clock = time.monotonic()
    _, err = process.communicate(timeout=60)
    took = time.monotonic() - clock
    assert process.returncode == code and took < 20, (process.returncode, took, err)
    if word:
        assert err.strip().splitlines()[-1] == f"specrun: {word}; nothing was written", err
    assert not (tmp_path / "out").exists()
    agent = (lambda line: line.startswith("ray::") and "Agent" in line) if signum == signal.SIGKILL else (
        lambda line: False)
    left = watch.survivors(lingering=agent)
    if signum == signal.SIGKILL and left:
        # Ray's dashboard and runtime-env agents see their raylet die within seconds, then try to tell the dead
        # GCS (a 60 s timeout written into Ray's publish_error_to_driver) before they exit: checked once the
        # session's other tests have run, so no test sleeps through Ray's minute
        assert all(agent(line) for line in left.values()), left
        agents = {}
        for pid in left:
            with contextlib.suppress(psutil.NoSuchProcess):  # one that exited since is already fine
                agents[pid] = psutil.Process(pid)
        at_session_end(lambda: _exited(agents, deadline=clock + 90))
        return
    assert not left, left


def _exited(processes: dict[int, psutil.Process], deadline: float) -> None:
    """Every one of these processes has exited (or is a zombie) by `deadline` (time.monotonic)."""
    def running() -> dict[int, str]:
        alive = {}
        for pid, process in processes.items():
            try:  # is_running also tells a reused pid from the process that was seen
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    alive[pid] = " ".join(process.cmdline())[:200]
            except psutil.Error:
                continue
        return alive
    while running() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not running(), f"Ray's agents outlived a SIGKILLed run by over 90 s: {running()}"


def test_an_address_that_never_answers_ends_at_the_timeout(ray_tmp: Path, tmp_path: Path, data_dir: Path) -> None:
    """A port that takes the connection and says nothing (a hung head): Ray itself would retry for minutes, and
    its C++ client writes a line to stderr from the fifth second on; the run says one line at the seventh."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        address = f"127.0.0.1:{server.getsockname()[1]}"
        clock = time.monotonic()
        process = start_specrun(["--data-dir", str(data_dir), "--adapter", "hashing", "--executor", "ray",
                                 "--ray-address", address, "--ray-timeout", "7", "--cache-dir",
                                 str(tmp_path / "cache"), "--output", str(tmp_path / "out")], ray_tmp)
        _, err = process.communicate(timeout=120)
        took = time.monotonic() - clock
    assert process.returncode == 2 and took < 20, (took, err)
    assert err == f"specrun: error: connecting to --ray-address {address} took over 7 s (--ray-timeout)\n"
    assert not (tmp_path / "out").exists() and not list((tmp_path / "cache").rglob("*.shard"))


@pytest.mark.parametrize(("signum", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                      (signal.SIGTERM, 143, "terminated")])
def test_a_hung_connect_hears_ctrl_c_and_sigterm(signum: int, code: int, word: str, ray_tmp: Path,
                                                 tmp_path: Path, data_dir: Path) -> None:
    """Signalled 6 s into a connect to a head that never answers (Ray's C++ retries, deaf to signals before):
    it ends within seconds, in one line."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        process = start_specrun(["--data-dir", str(data_dir), "--adapter", "hashing", "--executor", "ray",
                                 "--ray-address", f"127.0.0.1:{server.getsockname()[1]}", "--no-cache",
                                 "--output", str(tmp_path / "out")], ray_tmp)
        time.sleep(6)
        assert process.poll() is None
        process.send_signal(signum)
        clock = time.monotonic()
        _, err = process.communicate(timeout=60)
        took = time.monotonic() - clock
    assert process.returncode == code and took < 10, (process.returncode, took, err)
    assert err == f"specrun: {word}; nothing was written\n"


def test_a_given_address_is_joined_and_left_running(ray_tmp: Path, tmp_path: Path, data_dir: Path) -> None:
    """--ray-address of a running cluster: the run encodes on it and leaves it as it found it. (A new Ray cluster
    asks for Ray's token, ~/.ray/auth_token, which a driver given an address sends only with RAY_AUTH_MODE=token.)"""
    head = subprocess.Popen([sys.executable, "-c", "import sys, ray; context = ray.init(num_cpus=2, "
                             "include_dashboard=False, logging_level='ERROR'); "
                             "print(context.address_info['gcs_address'], flush=True); sys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "RAY_TMPDIR": str(ray_tmp)})
    try:
        assert head.stdout is not None
        address = head.stdout.readline().strip()
        process = start_specrun(["--data-dir", str(data_dir), "--adapter", "hashing", "--executor", "ray",
                                 "--ray-address", address, "--no-cache", "--output", str(tmp_path / "out")],
                                ray_tmp, RAY_AUTH_MODE="token")
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        results = Results.model_validate_json(Path(out.strip().splitlines()[-1]).read_text())
        assert results.provenance.model.device == "ray:2xcpu" and results.texts.encoded == 183
        assert head.poll() is None
    finally:
        head.communicate(input="", timeout=60)


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

    from tests.protocols.test_corpus_retrieval import GRADED, corpus_spec, make_graded_beir

    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data)
    (local, local_rows), (remote, remote_rows) = local_and_ray_runs(spec, data, tmp_path, capsys)
    assert remote.provenance.model.device.startswith("ray:") and local.provenance.model.device == "cpu"
    assert len(local_rows) == len(GRADED) and remote_rows == local_rows
    assert remote.predictions.sha256 == local.predictions.sha256
    assert remote.texts.encoded == local.texts.encoded == local.texts.unique > 0
    assert remote.scores == local.scores


def local_and_ray_runs(spec: Path, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                       ) -> list[tuple[Results, list[dict[str, object]]]]:
    """The same hashing run with --executor local and ray: each one's results and prediction rows."""
    from specrun.cli import main

    outcomes = []
    for executor in ("local", "ray"):
        code = main([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--executor", executor,
                     "--no-cache", "--output", str(tmp_path / executor), "-q"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        path = Path(captured.out.strip().splitlines()[-1])
        results = Results.model_validate_json(path.read_text())
        rows = [json.loads(line) for line in (path.parent / results.predictions.file).read_text().splitlines()]
        outcomes.append((results, rows))
    return outcomes
