"""--executor ray for the corpus search: each chunk's candidates on Ray actors (encoders.ray_map), merged on the
driver; the rankings equal the search in this process to the last digit, with 2 and 3 actors, with an actor
killed mid-search (Ray restarts it and the chunk is searched again), and through the CLI; an actor lost for good
ends the search in one line."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from specrun.core.errors import SpecrunError
from specrun.search.exact import rank_corpus
from tests.conftest import ROOT, require
from tests.encoders.test_ray import local_and_ray_runs

ray = require("ray", "Ray is not installed here (pip install 'specrun[ray]')")
pytestmark = pytest.mark.slow  # one local Ray cluster for the module: ~15 s to start

N_DOCS, N_QUERIES, DIM, CHUNK, DEPTH = 100_000, 100, 64, 5_000, 100


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """Three logical CPUs (three actors fit), workers on this tree's sources (the raylet inherits the path)."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), saved]))
    try:
        ray.init(num_cpus=3, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus() -> tuple[np.ndarray, np.ndarray]:
    """100k documents with near-duplicates (ties at the cut) and 100 queries."""
    rng = np.random.default_rng(21)
    docs = rng.normal(size=(N_DOCS, DIM)).astype(np.float32)
    docs[rng.choice(N_DOCS, 10_000, replace=False)] = docs[rng.integers(0, N_DOCS, 10_000)]
    return rng.normal(size=(N_QUERIES, DIM)).astype(np.float32), docs


def search(queries: np.ndarray, docs: np.ndarray, documents: object = None,
           mapper: object = None) -> tuple[np.ndarray, ...]:
    read = documents or (lambda start, stop: docs[start:stop])
    return rank_corpus(queries, read, len(docs), DEPTH, chunk_size=CHUNK, mapper=mapper)  # type: ignore[arg-type]


def same(a: tuple, b: tuple) -> bool:
    return bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2])


@pytest.mark.parametrize("size", [2, 3])
def test_actors_rank_a_corpus_as_one_process_does(size: int, cluster: object, corpus: tuple) -> None:
    from specrun.encoders.ray_map import RayChunkMap

    queries, docs = corpus
    clock = time.perf_counter()
    local = search(queries, docs)
    local_s = time.perf_counter() - clock
    mapper = RayChunkMap(None, size=size)
    try:
        search(queries, docs, mapper=mapper)  # the actors start
        clock = time.perf_counter()
        remote = search(queries, docs, mapper=mapper)
        remote_s = time.perf_counter() - clock
        assert len(mapper.actors) == size
    finally:
        mapper.close()
    print(f"\n{N_DOCS} documents x {N_QUERIES} queries, {N_DOCS // CHUNK} chunks: local {local_s:.2f} s, "
          f"{size} actors {remote_s:.2f} s")
    assert same(remote, local)
    assert local[2] < N_QUERIES  # most queries proven from the candidates (the actors' part)


def test_a_killed_actor_is_restarted_and_its_chunk_searched_again(cluster: object, corpus: tuple) -> None:
    from specrun.encoders.ray_map import RayChunkMap

    queries, docs = corpus
    local = search(queries, docs)
    mapper = RayChunkMap(None, size=2)
    killed: list[int] = []

    def documents(start: int, stop: int) -> np.ndarray:
        if start == 6 * CHUNK and not killed:  # chunks 4 and 5 are out, on both actors
            pid = ray.get(mapper.actors[0].pid.remote(), timeout=60)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        return docs[start:stop]

    try:
        remote = search(queries, docs, documents, mapper)
        assert killed and ray.get(mapper.actors[0].pid.remote(), timeout=60) != killed[0]  # restarted
    finally:
        mapper.close()
    assert same(remote, local)


def test_an_actor_lost_for_good_ends_the_search_in_one_line(cluster: object, corpus: tuple) -> None:
    from specrun.encoders.ray_map import RayChunkMap

    queries, docs = corpus
    mapper = RayChunkMap(None, size=2)

    def documents(start: int, stop: int) -> np.ndarray:
        if start == 3 * CHUNK:
            ray.kill(mapper.actors[1], no_restart=True)
        return docs[start:stop]

    try:
        with pytest.raises(SpecrunError) as caught:
            search(queries, docs, documents, mapper)
    finally:
        mapper.close()
    message = caught.value.one_line()
    assert "Ray lost a corpus search actor" in message and "\n" not in message, message


def test_the_cli_ranks_a_many_chunk_corpus_on_ray_as_locally(cluster: object, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """make_large_beir in chunks of 250: --executor ray (encoding and candidate search on actors) writes the same
    rankings (predictions.jsonl) and scores as --executor local."""
    from specrun.encoders.ray_map import RayChunkMap
    from tests.protocols.test_corpus_retrieval import corpus_spec, make_large_beir

    mapped: list[int] = []
    call = RayChunkMap.__call__

    def counted(self: RayChunkMap, *args: object) -> Iterator[object]:
        for result in call(self, *args):  # type: ignore[arg-type]
            mapped.append(len(self.actors))
            yield result

    monkeypatch.setattr(RayChunkMap, "__call__", counted)

    data = tmp_path / "data"
    make_large_beir(data, 3_000, 40)
    spec = corpus_spec(tmp_path, data, chunk_size=250)
    (local, local_rows), (remote, remote_rows) = local_and_ray_runs(spec, data, tmp_path, capsys)
    assert remote.provenance.model.device.startswith("ray:")
    assert len(mapped) == 3_000 // 250 and min(mapped) == 3  # every chunk on the cluster's 3 actors
    assert len(local_rows) == 40 and remote_rows == local_rows
    assert remote.scores == local.scores


def test_a_search_actor_lost_for_good_ends_the_cli_run_in_one_line(cluster: object, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """An actor killed for good after the first searched chunk: exit 2, one line, no results written."""
    from specrun.cli import main
    from specrun.encoders.ray_map import RayChunkMap
    from tests.protocols.test_corpus_retrieval import corpus_spec, make_large_beir

    call = RayChunkMap.__call__

    def losing(self: RayChunkMap, *args: object) -> Iterator[object]:
        for number, result in enumerate(call(self, *args)):  # type: ignore[arg-type]
            if number == 0:
                ray.kill(self.actors[0], no_restart=True)
            yield result

    monkeypatch.setattr(RayChunkMap, "__call__", losing)
    data = tmp_path / "data"
    make_large_beir(data, 3_000, 40)
    spec = corpus_spec(tmp_path, data, chunk_size=250)
    capsys.readouterr()  # the fingerprint's line
    code = main([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--executor", "ray", "--no-cache",
                 "--output", str(tmp_path / "out"), "-q"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Ray lost a corpus search actor" in lines[0], lines
    assert not list((tmp_path / "out").rglob("*.json"))
