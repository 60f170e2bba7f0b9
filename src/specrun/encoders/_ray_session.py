"""A Ray session as specrun opens one: a fresh loopback cluster or a given address, reached within a timeout that
Ctrl-C and SIGTERM end, Ray's own C++ lines kept off specrun's stderr, and stages (actors) that close on every
way out. The encoders' executor and the corpus search's chunk mapper both run on it."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from specrun.core.errors import SpecrunError, Terminated, first_line
from specrun.core.options import DEFAULTS, RAY_WAIT_FACTOR

RAY_INSTALL = "pip install 'specrun[ray]'"


ACTOR_RESTARTS = 3  # an actor killed (OOM, node lost, preempted) is restarted and its group retried this often


RAY_TIMEOUT = DEFAULTS.ray_timeout  # --ray-timeout: reaching or starting the cluster; actors, groups: WAIT_FACTOR x


WAIT_FACTOR = RAY_WAIT_FACTOR


T = TypeVar("T")


class RayTimeout(SpecrunError):
    """The cluster cannot be reached, or a wait on Ray ran past its bound: one line naming the cluster and the
    flag that sets the bound."""


@contextlib.contextmanager
def _loopback_only() -> Iterator[None]:
    """While a local cluster starts: Ray takes 127.0.0.1 for this node's address (on Linux it otherwise swaps
    loopback for the machine's outward address and its servers listen on every interface), and an inherited
    $RAY_ADDRESS is hidden from the processes it spawns."""
    from ray._private import ray_constants

    saved = {name: os.environ.get(name) for name in ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_ADDRESS")}
    cluster = ray_constants.ENABLE_RAY_CLUSTER
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ.pop("RAY_ADDRESS", None)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Ray's C++ client writes its connect retries straight to fd 2 (no log folder exists yet): while it
    connects they go to a scratch file, so that a failure reads as specrun's one line. A connect given up on (a
    timeout, a signal) goes on retrying in its thread, and writing: fd 2 then stays on the null device and
    Python's sys.stderr moves to a copy of the real one."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2 to speak of
        yield
        return
    abandoned = False
    try:
        with tempfile.TemporaryFile() as scratch:
            os.dup2(scratch.fileno(), 2)
            try:
                yield
            except (TimeoutError, KeyboardInterrupt):  # _bounded gave up on a thread that still runs
                abandoned = _stderr_is_fd2()
                raise
            finally:
                if abandoned:
                    sys.stderr = _text_stream(saved)
                    _mute_fd2()
                else:
                    os.dup2(saved, 2)
    finally:
        if not abandoned:
            os.close(saved)


def _stderr_is_fd2() -> bool:
    try:
        return sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):  # a stand-in stream (a test's capture): left as it is
        return False


def _text_stream(fd: int) -> Any:
    """sys.stderr over `fd`, with the encoding and error handling of the stream it replaces."""
    return io.TextIOWrapper(io.FileIO(fd, "w"), encoding=sys.stderr.encoding, errors=sys.stderr.errors,
                            line_buffering=True)


def _mute_fd2() -> None:
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
    finally:
        os.close(null)


def _bounded(call: Callable[[], T], seconds: float, undo: Callable[[], object],
             hold: threading.Event | None = None) -> T:
    """call() in a daemon thread, waited on for at most `seconds` (TimeoutError while it still runs); the main
    thread stays free for Ctrl-C and SIGTERM, since Ray's connect blocks in C++ for minutes. A call that ends
    after the wait gave up is undone there. With `hold`, the thread lives on until it is set: Ray kills the
    processes a thread spawned when that thread ends (PR_SET_PDEATHSIG)."""
    box: dict[str, Any] = {}
    finished, abandoned = threading.Event(), threading.Event()

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc
            finished.set()
            return
        finished.set()
        if abandoned.is_set():
            undo()
        elif hold is not None:
            hold.wait()

    threading.Thread(target=target, name="specrun-ray", daemon=True).start()
    try:
        if not finished.wait(seconds):
            raise TimeoutError
    except BaseException:
        abandoned.set()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def _probe(address: str, seconds: float) -> None:
    """A host:port address must accept a TCP connection within the bound (a dead or closed cluster fails at
    once, not after Ray's minutes of retries); other forms (auto, ray://) are left to the bounded connect."""
    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=seconds).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise RayTimeout(f"cannot reach the Ray cluster at --ray-address {address} ({reason}; waited at most "
                         f"{seconds:g} s, --ray-timeout)") from None


class RaySession:
    """One stage's hold on a Ray cluster (`--ray-address`, else a fresh local one started here on 127.0.0.1 and
    shut down at close()): a connect bounded by `timeout`, SIGTERM ending the run like Ctrl-C (Terminated) while
    it is held, and its actors killed at close(). The encoders' executor and the corpus search's mapper
    (`encoders.ray_map`) both hold one, so there is one way to start or join Ray."""

    def __init__(self, address: str | None, timeout: float = RAY_TIMEOUT) -> None:
        import ray

        self.ray = ray
        self.started = False
        self.actors: list[Any] = []
        self.where = f"--ray-address {address}" if address else "a local Ray cluster"
        self.timeout = timeout
        self.previous_sigterm: Any = None
        self.handles_sigterm = self.terminated = False
        self.release = threading.Event()  # the thread that started a local cluster ends when this is set
        with contextlib.suppress(ValueError):  # not the main thread: no signal reaches this code
            self.previous_sigterm = signal.signal(signal.SIGTERM, self._terminate)
            self.handles_sigterm = True


    @contextlib.contextmanager
    def closed_on_failure(self, close: Callable[[], None]) -> Iterator[None]:
        """Opening on this session: any failure calls `close` (actors killed, a started cluster shut down), and
        Ctrl-C becomes the run's interruption."""
        try:
            yield
        except KeyboardInterrupt:
            close()
            raise self._interrupt() from None
        except BaseException:
            close()
            raise
    def _terminate(self, signum: int, frame: object) -> None:
        self.terminated = True
        raise Terminated

    def _interrupt(self) -> KeyboardInterrupt:
        """Ray's waits turn whatever a signal handler raised into a plain KeyboardInterrupt: SIGTERM's again."""
        return Terminated() if self.terminated else KeyboardInterrupt()

    def _connect(self, address: str | None) -> None:
        """Start a local cluster or reach the given one, in a thread bounded by the timeout (Ray's own SIGTERM
        handler, sys.exit, is then never put in); a local cluster's thread lives until close()."""
        ray, options = self.ray, {"logging_level": "ERROR", "log_to_driver": False}
        try:
            with _quiet_stderr():
                if not address or address == "local":
                    def start() -> Any:
                        with _loopback_only():
                            return ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1",
                                            **options)
                    _bounded(start, self.timeout, ray.shutdown, hold=self.release)
                else:
                    _probe(address, self.timeout)
                    _bounded(lambda: ray.init(address=address, **options), self.timeout, ray.shutdown)
            self.started = True  # close() shuts a local cluster down, or disconnects from a given one
        except TimeoutError:
            what = "connecting to" if address and address != "local" else "starting"
            raise RayTimeout(f"{what} {self.where} took over {self.timeout:g} s (--ray-timeout)") from None
        except SpecrunError:
            raise
        except Exception as exc:
            raise SpecrunError(f"cannot start Ray at {address or 'a local cluster'}: {first_line(exc)}") from None

    def _late(self, what: str) -> RayTimeout:
        return RayTimeout(f"waited over {WAIT_FACTOR * self.timeout:g} s for {what} on {self.where} "
                          f"({WAIT_FACTOR} x --ray-timeout)")

    def close(self) -> None:
        """Actors killed, the local cluster shut down (its processes end), SIGTERM's handler put back."""
        try:
            for actor in self.actors:
                with contextlib.suppress(Exception):
                    self.ray.kill(actor)
            self.actors = []
            if self.started:
                self.started = False
                self.ray.shutdown()
        finally:
            self.release.set()
            if self.handles_sigterm:
                signal.signal(signal.SIGTERM, self.previous_sigterm if self.previous_sigterm is not None
                              else signal.SIG_DFL)
                self.handles_sigterm = False
