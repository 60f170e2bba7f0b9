"""--executor ray beyond encoding: a kind's chunk function (the corpus search's `chunk_candidates`) mapped over Ray
actors, opened for the run as its chunk mapper (`core.mapping`) and handed to each kind in its `RunContext`, so
the protocol never knows the executor.

The driver still reads every chunk (`documents`) and merges every result, in chunk order; each chunk is sent once
through Ray's object store (ray.put) to one actor, the shared value (the normalised queries) once per map. At most
IN_FLIGHT chunks per actor are out at once, so the driver's and the object store's memory stay bounded. The
cluster is started or joined as the encoders' executor does (`RaySession`: a fresh loopback local cluster unless
--ray-address, bounded waits, SIGTERM as Ctrl-C), and only when a kind first maps: a run with no corpus search
starts nothing. An actor that dies is restarted by Ray and its chunk searched again (ACTOR_RESTARTS); beyond that,
or past a bound, the run ends in one line and writes nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from specrun.core.errors import SpecrunError, first_line
from specrun.encoders._ray_session import ACTOR_RESTARTS, RAY_TIMEOUT, WAIT_FACTOR, RaySession

IN_FLIGHT = 2  # chunks per actor at once: one searched, the next one waiting in its queue


class ChunkActor:
    """Runs a chunk function; it keeps nothing between calls, so a restarted actor simply takes the chunk again."""

    def run(self, function: Callable[..., Any], shared: Any, item: tuple[Any, ...]) -> Any:
        return function(shared, *item)

    def pid(self) -> int:
        return os.getpid()


class RayChunkMap:
    """The run's chunk mapper for --executor ray (`core.mapping.ChunkMap`): `size` actors (default: one per CPU of
    the cluster, one per 4 CPUs from 8 on, as the encoders' executor), started at the first map and kept for the
    run; close() kills them and shuts down a cluster it started."""

    def __init__(self, address: str | None, timeout: float = RAY_TIMEOUT, size: int | None = None) -> None:
        self.address, self.timeout, self.size = address, timeout, size
        self.session: RaySession | None = None

    @property
    def actors(self) -> list[Any]:
        return self.session.actors if self.session is not None else []

    def _open(self) -> RaySession:
        if self.session is not None:
            return self.session
        session = self.session = RaySession(self.address, self.timeout)
        ray = session.ray
        with session.closed_on_failure(self.close):
            if not ray.is_initialized():  # a driver already connected (a library caller, the tests) is used as is
                session._connect(self.address)
            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            size = self.size or (cpus if cpus < 8 else cpus // 4)
            share: float = cpus // size if size <= cpus else round(cpus / size, 4)  # fractional: more than cpus
            remote = ray.remote(num_cpus=share, max_restarts=ACTOR_RESTARTS,
                                max_task_retries=ACTOR_RESTARTS)(ChunkActor)
            session.actors = [remote.remote() for _ in range(size)]
            self._get(session, [actor.pid.remote() for actor in session.actors], "the search actors to start")
        return session

    def _get(self, session: RaySession, ref: Any, what: str) -> Any:
        ray = session.ray
        try:
            return ray.get(ref, timeout=WAIT_FACTOR * self.timeout)
        except ray.exceptions.GetTimeoutError:
            raise session._late(what) from None
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, SpecrunError):  # a refusal in the chunk function (a NaN vector): as in-process
                raise cause from None
            text = f"{type(cause).__name__}: {first_line(cause)}" if isinstance(cause, BaseException) else (
                first_line(exc))
            raise SpecrunError(f"a Ray search actor failed: {text}") from None
        except ray.exceptions.RayError as exc:
            raise SpecrunError(f"Ray lost a corpus search actor for good ({type(exc).__name__}, after up to "
                               f"{ACTOR_RESTARTS} restarts); nothing was written, run again") from None

    def __call__(self, function: Callable[..., Any], shared: Any, items: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        """function(shared, *item) for each item, on the actors in turn, yielded in item order."""
        session = self._open()
        ray = session.ray
        try:
            shared_ref = ray.put(shared)
            pending: deque[Any] = deque()
            limit = IN_FLIGHT * len(session.actors)
            for number, item in enumerate(items):
                if len(pending) >= limit:
                    yield self._get(session, pending.popleft(), "a searched chunk")
                actor = session.actors[number % len(session.actors)]
                pending.append(actor.run.remote(function, shared_ref, ray.put(item)))
                del item  # the object store holds the chunk now
            while pending:
                yield self._get(session, pending.popleft(), "a searched chunk")
        except KeyboardInterrupt:
            raise session._interrupt() from None

    def close(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            session.close()


@contextlib.contextmanager
def chunks_on(executor: str, address: str | None = None, timeout: float = RAY_TIMEOUT,
              size: int | None = None) -> Iterator[RayChunkMap | None]:
    """For the block, the mapper the kinds' chunk functions go through: with `ray`, Ray actors (started at first
    use, stopped at the end); else None (in this process)."""
    if executor != "ray":
        yield None
        return
    mapper = RayChunkMap(address, timeout, size)
    try:
        yield mapper
    finally:
        mapper.close()
