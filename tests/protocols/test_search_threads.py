"""--search-threads: a run-wide option the corpus retrieval kind reads at run time (`RunContext.execution`). It
reaches the search from the command line, sets how many threads the search computes on, and changes no number."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from specrun.search import exact, pairs
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.protocols.test_corpus_retrieval import corpus_spec, make_large_beir


def test_the_search_runs_on_the_threads_asked_and_ranks_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """One, two and three threads and the default: the same predictions file byte for byte and the same scores;
    the candidate pass' pool (blocks of queries; BLAS held at one thread each) and the re-scoring's pool are as
    wide as asked, and one thread computes on no pool at all."""
    data = tmp_path / "data"
    make_large_beir(data, 2_000, 120)
    spec = corpus_spec(tmp_path, data, chunk_size=500, top_k=100)
    monkeypatch.setattr(exact, "BLOCK_BYTES", 4 * 500 * 10)  # 10 queries a block of a 500-row chunk: 12 blocks
    widths: dict[str, list[int]] = {}
    monkeypatch.setattr(exact, "ThreadPoolExecutor",
                        lambda n: widths.setdefault("blocks", []).append(n) or ThreadPoolExecutor(n))
    monkeypatch.setattr(pairs, "ThreadPoolExecutor",
                        lambda n: widths.setdefault("rescore", []).append(n) or ThreadPoolExecutor(n))
    outputs = {}
    monkeypatch.setattr(pairs, "usable_cores", lambda: 3)  # three threads are run, whatever this machine has
    for threads in (None, 1, 2, 3, 64):
        widths.clear()
        flags = [] if threads is None else ["--search-threads", str(threads)]
        out = tmp_path / f"out-{threads}"
        results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--no-cache", "-q",
                          "--output", str(out), *flags], capsys)
        predictions = next(out.rglob("predictions.jsonl")).read_bytes()
        outputs[threads] = (results.scores, predictions)
        if threads is None:
            assert widths["rescore"] == [pairs.rescore_threads()] * len(widths["rescore"])
            continue
        width = min(threads, pairs.usable_cores())  # more threads than cores only wait on each other
        assert widths.get("blocks", []) == ([] if width == 1 else [width]), widths
        assert widths["rescore"] and set(widths["rescore"]) == {width}, widths
    assert all(found == outputs[None] for found in outputs.values())
    assert b"q0" in outputs[None][1]  # the predictions name the queries: not an empty file compared


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_thread_count_that_is_not_a_positive_integer_is_one_line(value: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["specs/biosses.yaml", "--adapter", "hashing", "--search-threads", value,
                            "--output", str(tmp_path)], capsys)
    assert_one_line_error(code, err, contains="--search-threads")
    assert not any(tmp_path.iterdir())


def test_the_default_honours_blas_width_and_no_count_passes_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """No --search-threads: as many threads as BLAS has (which OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set),
    at most the usable cores; the re-scoring at most RESCORE_THREADS of them. A count asked is held to the
    cores too (2,000 threads on a few cores only wait on each other)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        assert pairs.search_threads() == 1 and pairs.rescore_threads() == 1
    monkeypatch.setattr(pairs, "usable_cores", lambda: 6)
    assert pairs.search_threads(5) == 5 and pairs.rescore_threads(5) == 5
    assert pairs.search_threads(2_000) == 6 and pairs.rescore_threads(2_000) == 6
