"""Encoder stage, cached: the stages above ask for the vectors of texts and never see the cache or the model.

`CachedEncoder` owns the cache key (everything that changes a vector), the lookup, the model (loaded, and torch
imported, only when some text is missing or the cache's record of the adapter settings is damaged), progress,
and the store (each finished group of batches is cached at once, so a killed run keeps what it finished).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from specrun.cache import CacheKey, EmbeddingCache, model_files_hash
from specrun.encoders import (
    EncoderInfo,
    ModelRef,
    check_model,
    choose_adapter,
    encode_texts,
    load_adapter,
    parse_devices,
    resolve_prompt,
)
from specrun.options import RunOptions
from specrun.workspace import Workspace


@dataclass(frozen=True)
class Embeddings:
    """The vectors of a set of unique texts, and how they were made."""

    vectors: np.ndarray  # (texts, dim), float32
    row_of: dict[str, int]
    info: EncoderInfo
    encoded: frozenset[str]  # texts sent to the model in this run (the rest came from the cache)
    timings: dict[str, float] = field(default_factory=dict)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The `Embed` callable protocols use: rows in the order asked."""
        return self.vectors[[self.row_of[text] for text in texts]]


class CachedEncoder:
    """One model with one set of settings, behind the embedding cache of the workspace."""

    def __init__(self, model: ModelRef, options: RunOptions, workspace: Workspace, console: Console) -> None:
        self.model = model
        self.options = options
        self.console = console
        self.adapter_name = choose_adapter(model, options.adapter)
        check_model(model, self.adapter_name, options.max_length, options.trust_remote_code)
        self.prompt = resolve_prompt(model, self.adapter_name, options.prompt, options.prompt_name)
        self.cache: EmbeddingCache | None = None
        if workspace.embeddings is not None:
            key = CacheKey(model=model.weights_sha256, model_files=model_files_hash(Path(model.path), workspace.memo),
                           adapter=self.adapter_name, prompt=self.prompt, max_length=options.max_length,
                           dtype="float32", trust_remote_code=options.trust_remote_code)
            self.cache = EmbeddingCache(workspace.embeddings, key, warn=workspace.warn, writer=workspace.writer)

    def embeddings(self, unique: list[str]) -> Embeddings:
        """Vectors of `unique` (texts expected unique), from the cache where it has them."""
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        found = self.cache.lookup(unique) if self.cache else {}
        timings["cache_read"] = time.perf_counter() - clock
        missing = [text for text in unique if text not in found]
        info = self._stored_info() if self.cache and not missing else None
        if info is None:
            info = self._encode(missing, found, timings)
        vectors = np.stack([found[text] for text in unique]) if unique else np.empty((0, 0), dtype=np.float32)
        return Embeddings(vectors=vectors, row_of={text: row for row, text in enumerate(unique)}, info=info,
                          encoded=frozenset(missing), timings=timings)

    def _encode(self, missing: list[str], found: dict[str, np.ndarray], timings: dict[str, float]) -> EncoderInfo:
        options = self.options
        clock = time.perf_counter()
        adapter = load_adapter(self.model, self.adapter_name, parse_devices(options.device), options.max_length,
                               self.prompt, options.prompt_name, trust_remote_code=options.trust_remote_code)
        timings["model_load"] = time.perf_counter() - clock
        if self.cache:
            self.cache.save_info(asdict(adapter.info))
        clock = time.perf_counter()
        try:
            with Progress(TextColumn("[bold]encoding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=self.console, transient=False, disable=self.console.quiet) as progress:
                task = progress.add_task("encode", total=len(missing))

                def done(indices: list[int], group: np.ndarray) -> None:
                    if self.cache:
                        self.cache.store([missing[i] for i in indices], group)
                    progress.advance(task, len(indices))

                new = encode_texts(adapter, missing, options.batch_size, on_group=done)
        finally:
            adapter.close()
        timings["encode"] = time.perf_counter() - clock
        found.update(zip(missing, new, strict=True))
        return adapter.info

    def _stored_info(self) -> EncoderInfo | None:
        """The adapter settings cached with the vectors; None (the model is loaded) when absent or damaged."""
        assert self.cache is not None
        stored = self.cache.load_info()
        if stored is None:
            return None
        try:
            info = EncoderInfo(**stored)
        except TypeError:
            self.cache.drop_info("unexpected fields")
            return None
        key = self.cache.key
        if info.adapter != key.adapter or info.prompt != key.prompt or (
                key.max_length is not None and info.max_length != key.max_length) or (
                info.trust_remote_code != key.trust_remote_code):
            self.cache.drop_info("does not match its key")
            return None
        return info
