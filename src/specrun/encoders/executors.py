"""Who encodes the texts the cache lacks: this process (`local`), or Ray actors across a cluster (`ray`).

Both hand back the same canonical groups of batches (`batching.groups_of`), so which process or machine encoded
a text never changes its vector beyond float noise: numbers equal a single process. Scheduling, placement,
retries and restarts are Ray's (an actor per GPU, or per few CPUs, each loading the model once; an actor that
dies is restarted and its task retried); specrun adds no scheduler. Ray is imported only for `--executor ray`.
"""

from __future__ import annotations

import importlib.util
import math
import os
import platform
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from specrun.core.errors import ModelError, SpecrunError, first_line
from specrun.core.files import folder_state
from specrun.core.options import Execution
from specrun.core.registry import ADAPTERS
from specrun.core.settings import EncoderSettings
from specrun.core.types import Role
from specrun.core.workspace import Warn
from specrun.encoders._ray_session import ACTOR_RESTARTS, RAY_INSTALL, RAY_TIMEOUT, WAIT_FACTOR, RaySession
from specrun.encoders.adapters import EncoderInfo, load_adapter
from specrun.encoders.batching import groups_of, iter_groups
from specrun.encoders.devices import dtype_warning, parse_devices
from specrun.encoders.models import ModelRef
from specrun.encoders.store import model_files_hash

EXECUTORS = ("local", "ray")


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


def open_executor(execution: Execution, job: EncodeJob, warn: Warn) -> Executor:
    """Where the job runs: this process, or Ray actors (--executor ray, with its address and timeout)."""
    if execution.executor == "ray":
        return RayExecutor(job, warn, execution.ray_address, execution.ray_timeout)
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
