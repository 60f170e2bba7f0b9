"""On a CPU, every batch is computed by torch on one thread, and as many batches run at once as torch had threads.

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
    """The layout of one loaded model's batches: `run(encode, batches)` gives each batch's result in order."""

    def __init__(self, device: str) -> None:
        import torch

        self.torch = torch
        self.restore: int | None = None
        self.workers = 1
        if device == "cpu":
            self.restore = torch.get_num_threads()
            self.workers = self.restore
            torch.set_num_threads(1)
        self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="specrun-batch") if self.workers > 1 else None
        self.tokenizer_lock = threading.Lock()  # a fast tokenizer is shared: it must not be reconfigured mid-call

    def run(self, encode: Callable[[T], Any], batches: Sequence[T]) -> list[Any]:
        if self.pool is None:
            return [encode(batch) for batch in batches]
        return list(self.pool.map(encode, batches))

    def locked(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """`call` (a tokenizer, a model's preprocess), one thread at a time."""

        def one_at_a_time(*args: Any, **kwargs: Any) -> Any:
            with self.tokenizer_lock:
                return call(*args, **kwargs)
        return one_at_a_time

    def close(self) -> None:
        """Stop the threads (batches not begun are dropped: after Ctrl-C or an error nothing waits for them) and
        give torch back the thread count it had (a process may load another model)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        if self.restore is not None:
            self.torch.set_num_threads(self.restore)
            self.restore = None
