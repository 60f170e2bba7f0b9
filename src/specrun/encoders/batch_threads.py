"""On a CPU, every batch is computed by torch on one thread, and as many batches run at once as torch has threads.

Why: torch splits a batch's sums across its threads, so the same batch can give vectors that differ by about
1.5e-7 on 1, 2 or 16 threads (on 2 cores, a last batch of 8 short texts did); one thread per batch makes a vector
independent of the machine's core count (and of Ray's threads per actor). It is also faster: two batches side by
side keep two cores busier than one batch split across them, since the Python between torch's operations runs on
one core (BENCHMARKS.md). On a GPU, batches run one after another, as before. Hand-written: sentence-transformers'
own pool starts a process, and loads the model, per device."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class BatchThreads:
    """The layout of one loaded model's batches: `run(encode, batches)` gives each batch's result in order. torch's
    thread count is 1 only while a group runs, so the process keeps its own (an adapter never closed included)."""

    def __init__(self, device: str) -> None:
        import torch

        self.torch = torch
        self.on_cpu = device == "cpu"
        self.pool: ThreadPoolExecutor | None = None
        self.workers = 0
        self.tokenizer_lock = threading.Lock()  # a fast tokenizer is shared: it must not be reconfigured mid-call

    def run(self, encode: Callable[[T], Any], batches: Sequence[T]) -> list[Any]:
        threads = self.torch.get_num_threads()
        if not self.on_cpu or threads == 1:
            return [encode(batch) for batch in batches]
        if self.workers != threads:
            self.close()
            self.pool, self.workers = ThreadPoolExecutor(threads, thread_name_prefix="specrun-batch"), threads
        assert self.pool is not None
        self.torch.set_num_threads(1)  # what each batch thread reads when it first computes: one thread per batch
        try:
            return list(self.pool.map(encode, batches))
        finally:
            self.torch.set_num_threads(threads)

    def locked(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """`call` (a tokenizer, a model's preprocess), one thread at a time."""

        def one_at_a_time(*args: Any, **kwargs: Any) -> Any:
            with self.tokenizer_lock:
                return call(*args, **kwargs)
        return one_at_a_time

    def close(self) -> None:
        """Stop the threads; batches not begun are dropped (after Ctrl-C or an error nothing waits for them)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool, self.workers = None, 0
