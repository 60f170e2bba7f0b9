"""--executor ray without a cluster: which cluster a run asks Ray for and how long it waits for it. ray.init is
replaced here (no Ray process starts), so these run in the quick loop; tests/encoders/test_ray.py runs real ones."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SPECS, hears_ctrl_c, require

ray = require("ray", "Ray is not installed here (pip install 'specrun[ray]')")

BIOSSES = str(SPECS / "biosses.yaml")


class Stop(Exception):
    pass


@pytest.fixture()
def no_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a fresh specrun process: no Ray driver connected yet."""
    monkeypatch.setattr(ray, "is_initialized", lambda: False)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture()
def silent_server() -> Iterator[str]:
    """A port that accepts connections and never answers, as a hung head node does."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def run(args: list[str], tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from specrun.cli import main

    code = main([BIOSSES, "-q", "--data-dir", str(data_dir), "--adapter", "hashing", "--executor", "ray",
                 "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "out"), *args])
    return code, capsys.readouterr().err


def test_without_an_address_a_fresh_loopback_cluster_is_started(no_driver: None, monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path, data_dir: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """$RAY_ADDRESS (and the cluster `ray start` recorded) are not joined: address="local", no dashboard, this
    node on 127.0.0.1 with Ray's switch that keeps it there, and $RAY_ADDRESS hidden from what it spawns."""
    from ray._private import ray_constants

    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    calls: list[tuple[dict[str, Any], str | None, str | None, bool]] = []

    def init(**kwargs: Any) -> None:
        calls.append((kwargs, os.environ.get("RAY_ADDRESS"), os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"),
                      ray_constants.ENABLE_RAY_CLUSTER))
        raise Stop("no cluster in this test")

    monkeypatch.setattr(ray, "init", init)
    handler, before = signal.getsignal(signal.SIGTERM), ray_constants.ENABLE_RAY_CLUSTER
    code, err = run([], tmp_path, data_dir, capsys)
    assert code == 2 and err == "specrun: error: cannot start Ray at a local cluster: no cluster in this test\n"
    [(kwargs, address, switch, cluster)] = calls
    assert kwargs["address"] == "local" and kwargs["include_dashboard"] is False
    assert kwargs["_node_ip_address"] == "127.0.0.1"
    assert (address, switch, cluster) == (None, "0", False)
    assert os.environ["RAY_ADDRESS"] == "127.0.0.1:1" and ray_constants.ENABLE_RAY_CLUSTER is before
    assert signal.getsignal(signal.SIGTERM) == handler  # the run's SIGTERM handler is put back
    assert not (tmp_path / "out").exists() and not list((tmp_path / "cache").rglob("*.shard"))


def test_a_given_address_is_the_one_asked_for(no_driver: None, monkeypatch: pytest.MonkeyPatch, silent_server: str,
                                             tmp_path: Path, data_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs) or (_ for _ in ()).throw(Stop("no")))
    code, err = run(["--ray-address", silent_server], tmp_path, data_dir, capsys)
    assert code == 2 and calls[0]["address"] == silent_server and "_node_ip_address" not in calls[0], err


def test_a_closed_address_fails_at_once_in_one_line(no_driver: None, tmp_path: Path, data_dir: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    address = f"127.0.0.1:{closed_port()}"
    clock = time.monotonic()
    code, err = run(["--ray-address", address], tmp_path, data_dir, capsys)
    assert time.monotonic() - clock < 10
    assert code == 2 and err.count("\n") == 1 and err.startswith("specrun: error: cannot reach the Ray cluster"), err
    assert address in err and "--ray-timeout" in err
    assert not (tmp_path / "out").exists() and not list((tmp_path / "cache").rglob("*.shard"))


def test_a_connect_that_hangs_ends_at_the_timeout(no_driver: None, monkeypatch: pytest.MonkeyPatch,
                                                  silent_server: str, tmp_path: Path, data_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Ray's connect to a server that never answers blocks for minutes; the run waits --ray-timeout seconds."""
    release = threading.Event()
    monkeypatch.setattr(ray, "init", lambda **kwargs: release.wait(60))
    clock = time.monotonic()
    try:
        code, err = run(["--ray-address", silent_server, "--ray-timeout", "0.5"], tmp_path, data_dir, capsys)
    finally:
        release.set()
    assert time.monotonic() - clock < 10
    assert code == 2 and err == (f"specrun: error: connecting to --ray-address {silent_server} took over 0.5 s "
                                 "(--ray-timeout)\n")
    assert not (tmp_path / "out").exists() and not list((tmp_path / "cache").rglob("*.shard"))


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf", "nan"])
def test_the_timeout_must_be_a_positive_number(value: str, tmp_path: Path, data_dir: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["--ray-timeout", value], tmp_path, data_dir, capsys)
    assert code == 2 and "--ray-timeout" in err and "positive number" in err and err.count("\n") == 1, err


def test_a_local_start_that_hangs_ends_at_the_timeout_and_is_undone(no_driver: None,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path, data_dir: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A start that comes up after the run gave up on it is shut down again, by the thread that started it."""
    release, shut = threading.Event(), threading.Event()
    monkeypatch.setattr(ray, "init", lambda **kwargs: release.wait(60))
    monkeypatch.setattr(ray, "shutdown", shut.set)
    clock = time.monotonic()
    code, err = run(["--ray-timeout", "0.5"], tmp_path, data_dir, capsys)
    assert time.monotonic() - clock < 10 and not shut.is_set()
    assert code == 2 and err == "specrun: error: starting a local Ray cluster took over 0.5 s (--ray-timeout)\n"
    release.set()
    assert shut.wait(10)


ABANDONED_CONNECT = """
import os, signal, sys, threading, time
from specrun.encoders._ray_session import _bounded, _quiet_stderr

wrote = threading.Event()

def connect():  # Ray's C++ client: retries, and writes to fd 2 after the wait gave up on it
    print("connecting", flush=True)
    time.sleep(1)
    os.write(2, b"[W rpc_client.h:153] Failed to connect to GCS\\n")
    wrote.set()
    time.sleep(30)

try:
    with _quiet_stderr():
        _bounded(connect, 0.5 if sys.argv[1] == "timeout" else 20, lambda: None)
except (TimeoutError, KeyboardInterrupt) as exc:
    wrote.wait(5)
    print(f"specrun: {type(exc).__name__}", file=sys.stderr)
    sys.exit(2)
"""


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize(("how", "said"), [("timeout", "TimeoutError"), ("signal", "KeyboardInterrupt")])
def test_a_connect_given_up_on_writes_nothing_after_it(how: str, said: str) -> None:
    """The thread of a connect given up on (the timeout, Ctrl-C) goes on and writes to fd 2, after the wait
    restored stderr: that write is muted, and specrun's own line still reaches stderr."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", ABANDONED_CONNECT, how], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=hears_ctrl_c,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert process.stdout is not None and process.stdout.readline() == "connecting\n"
    if how == "signal":
        process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (2, f"specrun: {said}\n")
