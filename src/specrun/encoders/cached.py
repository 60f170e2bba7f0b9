"""Encoder stage, cached: the stages above ask for the vectors of texts in a view and never see the cache or the
model.

`CachedEncoder` resolves each view (role, task type, instruction) to the prompt it gets (`prompts`), and owns one
cache per encoding (role and prompt text: everything that changes a vector besides the model and the settings),
the lookup, the executor (the model is loaded, and torch imported, once and only when some text is missing or the
cache's record of the adapter settings is damaged; in this process or on Ray actors, `executors`), progress, and
the store (each finished group of batches is cached at once as one shard, so a killed run keeps what it
finished). `--truncate-dim` and then `--precision` are applied later (`vectors.truncated_view`, `precision`),
on the full float32 vectors the cache holds, so neither is keyed and both reuse what a plain run cached.

A corpus (`SharedCorpus`) is never a list of texts here: it is looked up by its digest array, its missing texts
are read from its file a window at a time (`encode_corpus`), and each document's vector is one int64 place
(`CorpusVectors`), so what the stage holds for a corpus of N documents is 8 N bytes besides the corpus itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from specrun.core.corpus import SharedCorpus
from specrun.core.options import Execution
from specrun.core.registry import ADAPTERS
from specrun.core.settings import AppliedPrompt, EncoderSettings
from specrun.core.types import View
from specrun.core.workspace import CacheWriter, Workspace
from specrun.encoders.adapters import EncoderInfo, declared_prompts, resolve_settings
from specrun.encoders.corpus_encoding import CorpusLookup, encode_corpus
from specrun.encoders.executors import EncodeJob, Executor, open_executor
from specrun.encoders.metadata import PeakMemory
from specrun.encoders.models import ModelRef
from specrun.encoders.prompts import applied_prompt, resolve_flags
from specrun.encoders.store import CacheKey, EmbeddingCache, Found, model_files_hash, place
from specrun.encoders.vectors import Embeddings, Encoding, GroupChecks, ViewedEmbeddings


class CachedEncoder:
    """One model with one set of settings, behind the embedding cache of the workspace: a cache per encoding
    (role and prompt text), one model load for all of them."""

    def __init__(self, model: ModelRef, settings: EncoderSettings, workspace: Workspace, console: Console,
                 execution: Execution | None = None) -> None:
        self.model = model
        self.execution = execution or Execution()
        self.console = console
        self.warn = workspace.warn
        self.workspace = workspace
        self.settings = resolve_settings(model, settings)
        self.declared = declared_prompts(model, self.settings.adapter)
        self.model_files = model_files_hash(Path(model.path), workspace.memo) if workspace.embeddings else None
        self.scratch_writer = CacheWriter(workspace.warn)  # --no-cache: its own, so a full scratch disk is its own
        self.peak_memory: dict[str, object] | None = None  # of this run's load and encode; None: nothing encoded

    def prompt(self, view: View, settings: EncoderSettings | None = None) -> AppliedPrompt:
        return applied_prompt(view, settings or self.settings, self.declared)

    def variant(self, requested: EncoderSettings) -> EncoderSettings:
        """Settings that differ from this encoder's in their prompt flags only (a prompt-set variant), resolved."""
        return resolve_flags(requested.with_values(adapter=self.settings.adapter), self.declared,
                             has_model=ADAPTERS[self.settings.adapter].needs_model)

    def _cache(self, encoding: Encoding) -> EmbeddingCache | None:
        """The cache of one encoding; with --no-cache a store in this run's scratch folder (so vectors wait on
        disk, as cached ones do, and nothing outlives the run), or None when not even that can be written."""
        root = self.workspace.embeddings or self.workspace.scratch_vectors()
        if root is None:
            return None
        key = CacheKey(model=self.model.weights_sha256, model_files=self.model_files or "", settings=self.settings,
                       role=encoding[0], prompt=encoding[1])
        writer = self.workspace.writer if self.workspace.embeddings is not None else self.scratch_writer
        return EmbeddingCache(root, key, warn=self.workspace.warn, writer=writer)

    def embeddings(self, texts_by_view: dict[View, list[str]]) -> ViewedEmbeddings:
        """Vectors of each view's texts, from the cache where it has them; the model is loaded once, and only
        when some encoding lacks a text (or its cached record of the settings is damaged)."""
        return self.embeddings_of_variants(texts_by_view, {"": self.settings})[""]

    def embeddings_of_variants(self, texts_by_view: dict[View, list[str]], variants: dict[str, EncoderSettings],
                               corpora_by_view: dict[View, list[SharedCorpus]] | None = None,
                               ) -> dict[str, ViewedEmbeddings]:
        """The same, for several prompt variants (resolved settings that differ in prompts only) at once: one
        model load, and each (role, prompt text) encoded once whichever variants share it. Corpora are looked
        up and encoded by their digests (`CorpusLookup`), never as lists of texts."""
        corpora_by_view = corpora_by_view or {}
        views = list(dict.fromkeys([*texts_by_view, *corpora_by_view]))
        prompts = {name: {view: self.prompt(view, settings) for view in views}
                   for name, settings in variants.items()}
        wanted: dict[Encoding, list[str]] = {}
        wanted_corpora: dict[Encoding, dict[str, SharedCorpus]] = {}
        for chosen in prompts.values():
            for view, texts in texts_by_view.items():
                wanted.setdefault((chosen[view].role, chosen[view].text), []).extend(texts)
            for view, corpora in corpora_by_view.items():
                into = wanted_corpora.setdefault((chosen[view].role, chosen[view].text), {})
                into.update((corpus.digest, corpus) for corpus in corpora)
        caches = {encoding: self._cache(encoding) for encoding in dict.fromkeys([*wanted, *wanted_corpora])}
        clock = time.perf_counter()
        found, missing, lookups = _looked_up(wanted, wanted_corpora, caches)
        timings: dict[str, float] = {"cache_read": time.perf_counter() - clock}
        info = self._stored_info(list(caches.values())) if not any(missing.values()) and not any(
            len(lookup.missing) for lookup in lookups.values()) else None
        if info is None:
            info = self._encode(missing, found, caches, timings, lookups)
        corpus_vectors = {key: lookup.vectors() for key, lookup in lookups.items()}
        out = {}
        for name, settings in variants.items():
            own = self._this_run(info, settings)
            encodings = list(dict.fromkeys((p.role, p.text) for p in prompts[name].values()))
            by_encoding = {encoding: Embeddings(blocks=found[encoding].blocks, row_of=found[encoding].where,
                                                info=own, encoded=frozenset(missing[encoding]), timings=timings)
                           for encoding in encodings if encoding in found}
            own_corpora = {key: vectors for key, vectors in corpus_vectors.items() if key[0] in encodings}
            out[name] = ViewedEmbeddings(by_encoding=by_encoding, prompts=prompts[name], info=own, timings=timings,
                                         corpora=own_corpora)
        return out

    def _encode(self, missing: dict[Encoding, list[str]], found: dict[Encoding, Found],
                caches: dict[Encoding, EmbeddingCache | None], timings: dict[str, float],
                lookups: dict[tuple[Encoding, str], CorpusLookup] | None = None) -> EncoderInfo:
        """Encode what the caches lack; each group is stored as one shard as soon as it is done and then read
        back when asked for, so a long run holds no more than a group of vectors (uncached: the run's vectors).
        A corpus' missing texts go a window at a time, read from its source (`encode_corpus`)."""
        lookups = lookups or {}
        memory = PeakMemory() if self.execution.executor == "local" else None  # Ray: the encode is elsewhere
        executor = self._open_executor(timings)
        info = executor.info
        if "," in info.device or not ADAPTERS[self.settings.adapter].needs_model:
            memory = None  # a pool's workers are other processes; an adapter without a model loads nothing
        if memory is not None:
            memory.loaded(info.device)
        for cache in caches.values():
            if cache:
                cache.save_info(info.record())
        clock = time.perf_counter()
        total = sum(len(texts) for texts in missing.values()) + sum(len(lookup.missing)
                                                                      for lookup in lookups.values())
        try:
            with Progress(TextColumn("[bold]encoding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=self.console, transient=False, disable=self.console.quiet) as progress:
                task = progress.add_task("encode", total=total)
                groups = GroupChecks(self.settings.adapter)
                _encode_texts(executor, missing, found, caches, groups, lambda done: progress.advance(task, done))
                _encode_corpora(executor, lookups, missing, caches, groups, lambda done: progress.advance(task, done))
            self.peak_memory = memory.record() if memory is not None else None
        finally:
            executor.close()
        timings["encode"] = time.perf_counter() - clock
        return info

    def _open_executor(self, timings: dict[str, float]) -> Executor:
        """The executor with the model loaded (its load timed and said), checked to be the model that was keyed."""
        execution = self.execution
        clock = time.perf_counter()
        job = EncodeJob(model=self.model, settings=self.settings, device=execution.device,
                        batch_size=self.settings.batch_size, model_files=self.model_files)
        what = f"model {self.model.name}" if ADAPTERS[self.settings.adapter].needs_model else (
            f"adapter {self.settings.adapter} (no model)")
        with self.console.status(f"loading {what}", spinner="line"):  # a phase of its own, before the bar
            executor = open_executor(execution, job, self.warn)
        try:
            self.model.check_unchanged()  # the key and the digests describe what was loaded, or nothing is encoded
        except BaseException:
            executor.close()
            raise
        if not self.console.quiet:
            self.console.print(f"loaded {what} in {time.perf_counter() - clock:.1f} s", markup=False,
                               highlight=False, soft_wrap=True)
        timings["model_load"] = time.perf_counter() - clock
        return executor

    def _this_run(self, info: EncoderInfo, settings: EncoderSettings) -> EncoderInfo:
        """The settings as this run (or variant) gave them where they are not in the key (how the prompts were
        asked for, the precision): a cache's info.json was written by whichever run stored the vectors first."""
        own = {name: getattr(settings, name) for name in type(settings).model_fields
               if not settings.meta(name)["keyed"]}
        return replace(info, settings=info.settings.with_values(**own))

    def _stored_info(self, caches: list[EmbeddingCache | None]) -> EncoderInfo | None:
        """The adapter settings cached with the vectors (every encoding's, which must agree); None (the model is
        loaded) when one is absent or damaged."""
        infos = []
        for cache in caches:
            if cache is None:
                return None
            stored = cache.load_info()
            if stored is None:
                return None
            try:
                info = EncoderInfo.from_record(stored)
            except (TypeError, ValueError):  # pydantic's ValidationError is a ValueError
                cache.drop_info("unexpected fields")
                return None
            if not cache.key.settings.agrees_with(info.settings):
                cache.drop_info("does not match its key")
                return None
            infos.append(info)
        # the caches must agree on what the adapter applied; what a run merely asked for (its prompt flags, its
        # precision) is whichever run wrote the file last, and `_this_run` replaces it
        applied = [(info.settings.cache_fields(), info.pooling, info.normalize) for info in infos]
        return infos[0] if infos and all(value == applied[0] for value in applied) else None


def _encode_texts(executor: Executor, missing: dict[Encoding, list[str]], found: dict[Encoding, Found],
                  caches: dict[Encoding, EmbeddingCache | None], groups: GroupChecks,
                  advance: Callable[[int], None]) -> None:
    """Each encoding's missing texts, a group at a time, each group stored as one shard at once (a killed run keeps
    it) and added to what was found."""
    for encoding, texts_missing in missing.items():
        if not texts_missing:
            continue
        role, prompt = encoding
        cache, into = caches[encoding], found[encoding]
        for indices, group in executor.groups(texts_missing, role, prompt):
            texts = [texts_missing[i] for i in indices]
            group = groups.checked(group, texts, into.blocks)
            shard = cache.store(texts, group) if cache else None
            block = into.add_block(shard if shard else group)
            into.where.update((text, place(block, row)) for row, text in enumerate(texts))
            advance(len(indices))


def _encode_corpora(executor: Executor, lookups: dict[tuple[Encoding, str], CorpusLookup],
                    missing: dict[Encoding, list[str]], caches: dict[Encoding, EmbeddingCache | None],
                    groups: GroupChecks, advance: Callable[[int], None]) -> None:
    """Each corpus' missing texts, after the lists': what this run has stored by then is read back, not encoded."""
    encoded_corpora: set[Encoding] = set()
    for (encoding, _), lookup in lookups.items():
        cache = caches[encoding]
        if cache is not None and (any(missing.get(encoding, ())) or encoding in encoded_corpora):
            # this run stored texts of the encoding already: those this corpus shares are read
            # back from the store, not encoded (or counted) twice
            advance(lookup.found_again(cache))
        encode_corpus(executor, lookup, encoding, cache, groups, advance)
        encoded_corpora.add(encoding)


def _looked_up(wanted: dict[Encoding, list[str]], wanted_corpora: dict[Encoding, dict[str, SharedCorpus]],
               caches: dict[Encoding, EmbeddingCache | None],
               ) -> tuple[dict[Encoding, Found], dict[Encoding, list[str]], dict[tuple[Encoding, str], CorpusLookup]]:
    """What the caches hold of each encoding's texts (and what they lack), and each corpus' lookup by digests."""
    found: dict[Encoding, Found] = {}
    missing: dict[Encoding, list[str]] = {}
    for encoding, texts in wanted.items():
        unique = list(dict.fromkeys(texts))
        cache = caches[encoding]
        found[encoding] = cache.lookup(unique) if cache else Found()
        missing[encoding] = [text for text in unique if text not in found[encoding]]
    lookups: dict[tuple[Encoding, str], CorpusLookup] = {}
    for encoding, corpora in wanted_corpora.items():
        cache = caches[encoding]
        for digest, corpus in corpora.items():
            first, inverse = corpus.unique()
            blocks, places = cache.lookup_digests(corpus.text_digests, first) if cache else (
                [], np.full(len(first), -1, dtype=np.int64))
            lookups[(encoding, digest)] = CorpusLookup(corpus, first, inverse, blocks, places)
    return found, missing, lookups
