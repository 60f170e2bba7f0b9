"""Encoder stage, cached: the stages above ask for the vectors of texts and never see the cache or the model.

`CachedEncoder` owns the cache key (everything that changes a vector), the lookup, the executor (the model is
loaded, and torch imported, only when some text is missing or the cache's record of the adapter settings is
damaged; in this process or on Ray actors, `executors`), progress, and the store (each finished group of batches
is cached at once as one shard, so a killed run keeps what it finished).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from specrun.core.errors import ModelError
from specrun.core.options import RunOptions
from specrun.core.workspace import Workspace
from specrun.encoders.adapters import EncoderInfo, resolve_settings
from specrun.encoders.executors import EncodeJob, open_executor
from specrun.encoders.models import ModelRef
from specrun.encoders.store import CacheKey, EmbeddingCache, Found, model_files_hash


@dataclass(frozen=True)
class Embeddings:
    """The vectors of a set of unique texts, and how they were made. Vectors stay where they are (memory-mapped
    cache shards, or this run's groups when nothing is cached): `embed` gathers only the rows asked for, so the
    whole matrix is never built, let alone twice."""

    blocks: Sequence[np.ndarray]  # each (rows, dim) float32
    row_of: dict[str, tuple[int, int]]  # text -> (block, row)
    info: EncoderInfo
    encoded: frozenset[str]  # texts sent to the model in this run (the rest came from the cache)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return next((block.shape[1] for block in self.blocks), 0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The `Embed` callable protocols use: rows in the order asked, read block by block."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not len(texts):
            return out
        where = np.array([self.row_of[text] for text in texts], dtype=np.int64)
        order = np.argsort(where[:, 0], kind="stable")
        blocks, starts = np.unique(where[order, 0], return_index=True)
        for block, chunk in zip(blocks, np.split(order, starts[1:]), strict=True):
            out[chunk] = self.blocks[block][where[chunk, 1]]
        return out


def refuse_non_finite(vectors: np.ndarray, texts: Sequence[str]) -> None:
    """NaN or inf in what the model returned is one line naming the first such text, never a vector."""
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if len(bad):
        raise ModelError(f"the model returned {len(bad)} non-finite vector(s) (NaN or inf) in a group of "
                         f"{len(texts)}, the first for the text {texts[bad[0]][:60]!r}; nothing of the group "
                         "was cached")


class CachedEncoder:
    """One model with one set of settings, behind the embedding cache of the workspace."""

    def __init__(self, model: ModelRef, options: RunOptions, workspace: Workspace, console: Console) -> None:
        self.model = model
        self.options = options
        self.console = console
        self.warn = workspace.warn
        self.settings = resolve_settings(model, options.encoder)
        self.cache: EmbeddingCache | None = None
        self.model_files: str | None = None
        if workspace.embeddings is not None:
            self.model_files = model_files_hash(Path(model.path), workspace.memo)
            key = CacheKey(model=model.weights_sha256, model_files=self.model_files, settings=self.settings)
            self.cache = EmbeddingCache(workspace.embeddings, key, warn=workspace.warn, writer=workspace.writer)

    def embeddings(self, unique: list[str]) -> Embeddings:
        """Vectors of `unique` (texts expected unique), from the cache where it has them."""
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        found = self.cache.lookup(unique) if self.cache else Found()
        timings["cache_read"] = time.perf_counter() - clock
        missing = [text for text in unique if text not in found]
        info = self._stored_info() if self.cache and not missing else None
        if info is None:
            info = self._encode(missing, found, timings)
        return Embeddings(blocks=found.blocks, row_of=found.where, info=info, encoded=frozenset(missing),
                          timings=timings)

    def _encode(self, missing: list[str], found: Found, timings: dict[str, float]) -> EncoderInfo:
        """Encode what the cache lacks; each group is stored as one shard as soon as it is done and then read
        back memory-mapped, so a long run holds no more than a group of vectors (uncached: the run's vectors)."""
        options = self.options
        clock = time.perf_counter()
        job = EncodeJob(model=self.model, settings=self.settings, device=options.device,
                        batch_size=options.batch_size, model_files=self.model_files)
        executor = open_executor(options.executor, job, self.warn, options.ray_address)
        timings["model_load"] = time.perf_counter() - clock
        if self.cache:
            self.cache.save_info(executor.info.record())
        clock = time.perf_counter()
        try:
            with Progress(TextColumn("[bold]encoding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=self.console, transient=False, disable=self.console.quiet) as progress:
                task = progress.add_task("encode", total=len(missing))
                for indices, group in executor.groups(missing):
                    texts = [missing[i] for i in indices]
                    refuse_non_finite(group, texts)  # before the store: the cache never holds such a vector
                    shard = self.cache.store(texts, group) if self.cache else None
                    block = found.add_block(shard.vectors() if shard else group)
                    found.where.update((text, (block, row)) for row, text in enumerate(texts))
                    progress.advance(task, len(indices))
        finally:
            executor.close()
        timings["encode"] = time.perf_counter() - clock
        return executor.info

    def _stored_info(self) -> EncoderInfo | None:
        """The adapter settings cached with the vectors; None (the model is loaded) when absent or damaged."""
        assert self.cache is not None
        stored = self.cache.load_info()
        if stored is None:
            return None
        try:
            info = EncoderInfo.from_record(stored)
        except (TypeError, ValueError):  # pydantic's ValidationError is a ValueError
            self.cache.drop_info("unexpected fields")
            return None
        if not self.cache.key.settings.agrees_with(info.settings):
            self.cache.drop_info("does not match its key")
            return None
        return info
