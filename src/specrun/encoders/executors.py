"""Who encodes the texts the cache lacks: this process (`local`), or Ray actors across a cluster (`ray`).

Both hand back the same canonical groups of batches (`batching.groups_of`), so which process or machine encoded
a text never changes its vector beyond float noise: numbers equal a single process. Scheduling, placement,
retries and restarts are Ray's (an actor per GPU, or per few CPUs, each loading the model once; an actor that
dies is restarted and its task retried); specrun adds no scheduler. Ray is imported only for `--executor ray`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import os
import platform
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from specrun.core.errors import ModelError, SpecrunError, Terminated, first_line
from specrun.core.files import folder_state
from specrun.core.options import DEFAULTS, RAY_WAIT_FACTOR
from specrun.core.registry import ADAPTERS
from specrun.core.settings import EncoderSettings
from specrun.core.types import Role
from specrun.core.workspace import Warn
from specrun.encoders.adapters import EncoderInfo, load_adapter
from specrun.encoders.batching import groups_of, iter_groups
from specrun.encoders.devices import dtype_warning, parse_devices
from specrun.encoders.models import ModelRef
from specrun.encoders.store import model_files_hash

EXECUTORS = ("local", "ray")
RAY_INSTALL = "pip install 'specrun[ray]'"
ACTOR_RESTARTS = 3  # an actor killed (OOM, node lost, preempted) is restarted and its group retried this often
RAY_TIMEOUT = DEFAULTS.ray_timeout  # --ray-timeout: reaching or starting the cluster; actors, groups: WAIT_FACTOR x
WAIT_FACTOR = RAY_WAIT_FACTOR
T = TypeVar("T")


@dataclass(frozen=True)
class EncodeJob:
    """Everything an encoding process needs, picklable: the same settings in every actor."""

    model: ModelRef
    settings: EncoderSettings  # resolved: the adapter chosen, the prompt's text
    device: str
    batch_size: int
    model_files: str | None = None  # the driver's digest of the model folder; every actor checks its own copy

    def load(self, devices: list[str]) -> Any:
        return load_adapter(self.model, self.settings, devices)


class Executor(Protocol):
    info: EncoderInfo

    def groups(self, texts: list[str], role: Role = "symmetric",
               prompt: str = "") -> Iterator[tuple[list[int], np.ndarray]]:
        """(indices into texts, float32 vectors) of each canonical group, in any order, as each is done: the
        texts embedded in `role` with `prompt` before each."""
        ...

    def close(self) -> None: ...


def check_executor(kind: str, device: str | None) -> None:
    """Before any work: Ray must be installed for `ray` (one line naming the extra), and a device for Ray is a
    kind (Ray places actors on GPUs), not a list of devices of this machine."""
    if kind not in EXECUTORS:
        raise SpecrunError(f"--executor {kind}: expected one of {', '.join(EXECUTORS)}")
    if kind != "ray":
        return
    if importlib.util.find_spec("ray") is None:
        raise SpecrunError(f"--executor ray needs Ray, which is not installed; {RAY_INSTALL}")
    if device not in (None, "auto", "cpu", "cuda"):
        raise SpecrunError(f"--device {device} with --executor ray: pass auto, cpu or cuda; Ray gives each actor "
                           "its own GPU")


def open_executor(kind: str, job: EncodeJob, warn: Warn, ray_address: str | None = None,
                  ray_timeout: float = RAY_TIMEOUT) -> Executor:
    if kind == "ray":
        return RayExecutor(job, warn, ray_address, ray_timeout)
    return LocalExecutor(job, warn)


class LocalExecutor:
    """This process; several `--device`s share each group through sentence-transformers' pool."""

    def __init__(self, job: EncodeJob, warn: Warn) -> None:
        # an adapter without a model computes on the CPU: asking torch which devices exist would import it (~250 MB)
        devices = parse_devices(job.device) if ADAPTERS[job.settings.adapter].needs_model else ["cpu"]
        message = dtype_warning(job.settings.dtype, devices)
        if message:
            warn(message)
        self.job = job
        self.adapter = job.load(devices)
        self.info: EncoderInfo = self.adapter.info

    def groups(self, texts: list[str], role: Role = "symmetric",
               prompt: str = "") -> Iterator[tuple[list[int], np.ndarray]]:
        return iter_groups(self.adapter, texts, self.job.batch_size, role=role, prompt=prompt,
                           name=self.job.settings.adapter)

    def close(self) -> None:
        self.adapter.close()


class EncoderActor:
    """One model in one Ray worker, loaded once; it encodes whole groups, batch for batch."""

    def __init__(self, job: EncodeJob, threads: int) -> None:
        state = None
        if ADAPTERS[job.settings.adapter].needs_model:
            import torch

            torch.set_num_threads(threads)
            state = folder_state(Path(job.model.path))  # this node's own files, before its digest and its load
            if job.model_files is not None:
                found = model_files_hash(Path(job.model.path))
                if found != job.model_files:
                    raise ModelError(f"the model folder {job.model.path} on {platform.node()} differs from the "
                                     "driver's (its files' digest); every node needs the same model files")
        self.adapter = job.load(parse_devices(job.device if job.device != "cuda" else "auto"))
        if state is not None and folder_state(Path(job.model.path)) != state:  # as the driver checks its own load
            raise ModelError(f"the model folder {job.model.path} on {platform.node()} changed while an actor "
                             "loaded it; nothing was encoded by it: run again once the folder is stable")

    def info(self) -> EncoderInfo:
        return self.adapter.info

    def encode(self, indices: list[int], texts: list[str], batch_size: int, role: Role = "symmetric",
               prompt: str = "") -> tuple[list[int], np.ndarray]:
        return indices, np.asarray(self.adapter.encode_group(texts, batch_size, role, prompt), dtype=np.float32)

    def pid(self) -> int:
        return os.getpid()


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


class RayExecutor(RaySession):
    """Encoding actors on the session's cluster: one per GPU when the device is cuda (or auto and the cluster has
    GPUs), else one per CPU (one per 4 CPUs from 8 on). Every wait is bounded by `timeout` (connecting) or
    WAIT_FACTOR times it (actors starting, each group)."""

    def __init__(self, job: EncodeJob, warn: Warn, address: str | None, timeout: float = RAY_TIMEOUT) -> None:
        super().__init__(address, timeout)
        with self.closed_on_failure(self.close):
            self._open(job, warn, address)

    def _open(self, job: EncodeJob, warn: Warn, address: str | None) -> None:
        ray = self.ray
        if not ray.is_initialized():  # a driver already connected (a library caller, the tests) is used as is
            self._connect(address)
        resources = ray.cluster_resources()
        gpus, cpus = int(resources.get("GPU", 0)), max(1, int(resources.get("CPU", 1)))
        wants_gpu = job.device == "cuda" or (job.device in (None, "auto") and gpus)
        use_gpu = ADAPTERS[job.settings.adapter].needs_model and wants_gpu
        if use_gpu and not gpus:
            raise ModelError("--device cuda with --executor ray: the Ray cluster has no GPU")
        if use_gpu:
            self.size, threads, gpu = gpus, max(1, cpus // gpus), 1
        else:
            self.size = cpus if cpus < 8 else cpus // 4
            threads, gpu = cpus // self.size, 0
            message = dtype_warning(job.settings.dtype, ["cpu"])
            if message:
                warn(message)
        self.job = job
        remote = ray.remote(num_cpus=threads if not gpu else 1, num_gpus=gpu, max_restarts=ACTOR_RESTARTS,
                            max_task_retries=ACTOR_RESTARTS)(EncoderActor)
        self.actors = [remote.remote(job, threads) for _ in range(self.size)]
        first = self._get(self.actors[0].info.remote(), "the actors to start and load the model")
        kind = "cuda" if gpu else "cpu"
        self.info = replace(first, device=f"ray:{self.size}x{kind}")

    def _get(self, ref: Any, what: str) -> Any:
        try:
            return self.ray.get(ref, timeout=WAIT_FACTOR * self.timeout)
        except self.ray.exceptions.GetTimeoutError:
            raise self._late(what) from None
        except Exception as exc:
            raise self._one_line(exc) from None

    def _one_line(self, exc: Exception) -> Exception:
        """Ray's failures as one line; a specrun error raised in an actor (a refused model) is passed on as is."""
        exceptions = self.ray.exceptions
        if isinstance(exc, exceptions.RayTaskError):
            cause = getattr(exc, "cause", None)
            if isinstance(cause, SpecrunError):
                return cause
            text = f"{type(cause).__name__}: {first_line(cause)}" if isinstance(cause, BaseException) else (
                first_line(exc))
            return ModelError(f"a Ray actor failed to encode: {text}")
        if isinstance(exc, exceptions.RayError):
            return ModelError(f"Ray lost an encoding actor beyond {ACTOR_RESTARTS} restarts "
                              f"({type(exc).__name__}); finished groups are cached, run again to resume")
        return exc

    def groups(self, texts: list[str], role: Role = "symmetric",
               prompt: str = "") -> Iterator[tuple[list[int], np.ndarray]]:
        from ray.util import ActorPool

        batches = math.ceil(len(texts) / self.job.batch_size)
        per_group = min(16, max(1, math.ceil(batches / (4 * self.size))))  # enough groups to keep every actor busy
        work = [(indices, [texts[i] for i in indices]) for indices in groups_of(texts, self.job.batch_size, per_group)]
        pool = ActorPool(self.actors)
        for indices, chunk in work:
            pool.submit(lambda actor, value: actor.encode.remote(value[0], value[1], self.job.batch_size, role,
                                                                 prompt), (indices, chunk))
        while pool.has_next():
            try:
                done = pool.get_next_unordered(timeout=WAIT_FACTOR * self.timeout)
            except TimeoutError:
                raise self._late("an encoded group (the groups done are cached)") from None
            except KeyboardInterrupt:
                raise self._interrupt() from None
            except Exception as exc:
                raise self._one_line(exc) from None
            yield done
