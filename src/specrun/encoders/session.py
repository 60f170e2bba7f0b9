"""One run's encoder session (`RunEncoder`), opened once with the encoder settings, the variants, the workspace and
the model, so the runner threads none of the encoder stage through.

It owns the cached encoder, the reranker, what `similarity: model` means for the model, the model's metadata, the
union embed of every spec's texts, and per (variant, spec) the shaped and quantised vectors, the rerank and the
text counts (`SpecVectors`), with the `Scope` the evaluation is handed.

A new run-wide encoder setting is a field of `EncoderSettings` (or `Execution`) read here or below: the runner,
the evaluation and the results do not change. A new option a protocol kind reads is a field of `Execution`: the
scope hands it on whole, and each kind finds it in `RunContext.execution`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.console import Console

from specrun.core.contracts import Rerank
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import SpecrunError, UsageError
from specrun.core.mapping import ChunkMap
from specrun.core.options import Execution
from specrun.core.registry import ADAPTERS
from specrun.core.settings import EncoderSettings
from specrun.core.types import View
from specrun.core.workspace import Workspace
from specrun.data import Loaded
from specrun.encoders._precision import check_precision, quantised
from specrun.encoders.adapters import describe
from specrun.encoders.cached import CachedEncoder
from specrun.encoders.metadata import files_metadata
from specrun.encoders.models import ModelRef, declared_similarity
from specrun.encoders.reranker import PairScorer, check_reranks, open_reranker
from specrun.encoders.vectors import CorpusVectors, Embeddings, Encoding, ViewedEmbeddings, shaped, truncated_view
from specrun.plan import Plan

__all__ = ["RunEncoder", "Scope", "SpecVectors", "check_variants"]

EmbedView = Callable[[View, Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Scope:
    """What one spec's evaluation is handed: its vectors by view (shaped and quantised as the run asks), the run's
    executor for a kind's chunks (None: this process), what `similarity: model` means for the model, the run's
    second stage (None without --reranker) and its execution options (each kind's `RunContext.execution`)."""

    embed_view: EmbedView
    chunk_map: ChunkMap | None = None
    similarity: str = "cosine"
    rerank: Rerank | None = None
    execution: Execution = field(default_factory=Execution)


@dataclass
class TextCounter:
    """What each spec encoded: a text the model encoded in this run counts for the first spec that needed it, and
    a corpus (by encoding and digest) likewise, so a run's counts add up to what the model did."""

    texts: set[tuple[Encoding, str]] = field(default_factory=set)
    corpora: set[tuple[Encoding, str]] = field(default_factory=set)

    def count(self, item: Loaded, unique: set[tuple[Encoding, str]], sent: set[tuple[Encoding, str]],
              corpora: dict[tuple[Encoding, str], CorpusVectors]) -> dict[str, int]:
        encoded = (unique & sent) - self.texts
        self.texts |= encoded
        corpora_encoded = sum(vectors.encoded for key, vectors in corpora.items() if key not in self.corpora)
        self.corpora |= set(corpora)
        return {"total": len(item.texts) + sum(len(corpus) for _, corpus in item.corpora),
                "unique": len(unique) + sum(vectors.unique for vectors in corpora.values()),
                "encoded": len(encoded) + corpora_encoded}


@dataclass
class SpecVectors:
    """One spec under one variant: its scope for the evaluation, and afterwards what its results record of the
    encoder (text counts, the model's provenance and metadata)."""

    item: Loaded
    embeddings: ViewedEmbeddings
    unique: set[tuple[Encoding, str]]
    corpora: dict[tuple[Encoding, str], CorpusVectors]
    scope: Scope
    session: RunEncoder
    reranker_before: tuple[int, int] = (0, 0)  # the reranker's pair counts before this spec

    @property
    def model_name(self) -> str:
        return self.session.model.name

    def counts(self) -> dict[str, int]:
        """TextCounts' fields; asked once per spec, in the run's order (a text counts for its first spec)."""
        return self.session.counter.count(self.item, self.unique, self.embeddings.encoded(), self.corpora)

    def provenance(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """ModelProvenance's fields but the reranker's, and RerankerProvenance's (None without --reranker): the
        pairs this spec asked and scored."""
        views = dict.fromkeys([*(view for view, _ in self.item.corpora), *(view for view, _ in self.item.texts)])
        fields = {**describe(self.session.model, self.embeddings.info),
                  "prompts": tuple(self.embeddings.prompts[view] for view in views)}
        reranker = self.session.reranker
        if reranker is None:
            return fields, None
        asked, scored = self.reranker_before
        return fields, {**reranker.record(), "pairs": reranker.pairs - asked, "scored": reranker.scored - scored}

    def meta(self) -> dict[str, Any]:
        """ModelMeta's fields: what the model folder states and the run's peak memory, and the width of the vectors
        this spec scored (cached or not; --truncate-dim's when given)."""
        embeddings = [self.embeddings.by_encoding[encoding] for encoding, _ in self.unique]
        return model_meta(self.session.described, embeddings, list(self.corpora.values()),
                          self.session.settings.truncate_dim)


class RunEncoder:
    """The run's encoder stage, opened once: every spec's and variant's vectors come from here."""

    def __init__(self, model: ModelRef, settings: EncoderSettings, execution: Execution,
                 variants: dict[str, EncoderSettings], plans: Sequence[Plan], workspace: Workspace, console: Console,
                 *, prompt_set: str | None = None, chunk_map: ChunkMap | None = None) -> None:
        check_precision(settings.precision)
        self.model = model
        self.settings = settings  # as asked (a variant differs in its prompts only)
        self.variants = variants
        self.prompt_set = prompt_set
        self.chunk_map = chunk_map
        self.execution = execution
        self.reranker: PairScorer | None = open_reranker(settings, workspace, execution.device)
        self.encoder = CachedEncoder(model, settings, workspace, console, execution)
        self.similarity = model_similarity(plans, model, self.encoder.settings.adapter)
        self.viewed: dict[str, ViewedEmbeddings] = {}
        self.described: dict[str, Any] = {}  # what the model folder states, and the peak memory
        self.counter = TextCounter()

    def embed(self, loaded: Sequence[Loaded]) -> dict[str, float]:
        """Every view's unique texts and corpora of every spec, embedded once per variant (a variant's prompt named
        wrongly is one line naming the file and variant); the encode's timings."""
        wanted: dict[View, list[str]] = {}
        wanted_corpora: dict[View, list[SharedCorpus]] = {}
        for item in loaded:
            for view, text in item.texts:
                wanted.setdefault(view, []).append(text)
            for view, corpus in item.corpora:
                wanted_corpora.setdefault(view, []).append(corpus)
        resolved = {}
        for name, settings in self.variants.items():
            with variant_named(self.prompt_set, name):
                resolved[name] = self.encoder.variant(settings)
        self.viewed = self.encoder.embeddings_of_variants(
            {view: list(dict.fromkeys(texts)) for view, texts in wanted.items()}, resolved, wanted_corpora)
        needs_model = ADAPTERS[self.encoder.settings.adapter].needs_model
        self.described = {**(files_metadata(self.model) if needs_model else {"sources": {}}),
                          **(self.encoder.peak_memory or {})}
        return dict(next(iter(self.viewed.values())).timings)

    def spec(self, variant: str, item: Loaded) -> SpecVectors:
        """One spec's vectors under one variant: --truncate-dim and --precision applied (a quantisation calibrated
        on the spec's own unique texts and corpora), the reranker's counts taken before it runs."""
        embeddings = self.viewed[variant]
        unique = {(embeddings.encoding(view), text) for view, text in item.texts}
        corpora = {(embeddings.encoding(view), corpus.digest): embeddings.corpus_vectors(view, corpus)
                   for view, corpus in item.corpora}
        truncate_dim, normalize = self.settings.truncate_dim, embeddings.info.normalize
        embed_view = quantised(truncated_view(embeddings.embed_view, truncate_dim, normalize), self.settings.precision,
                               (shaped(block, truncate_dim, normalize) for block in itertools.chain(
                                   (embeddings.by_encoding[encoding].embed(texts)
                                    for encoding, texts in texts_by_encoding(unique)),
                                   (chunk for vectors in corpora.values() for chunk in vectors.chunks()))))
        reranker = self.reranker
        rerank = Rerank(reranker.score, self.settings.rerank_top_k) if reranker else None
        scope = Scope(embed_view, self.chunk_map, self.similarity, rerank, self.execution)
        return SpecVectors(item, embeddings, unique, corpora, scope, self,
                           (reranker.pairs, reranker.scored) if reranker else (0, 0))


def variant_named(prompt_set: str | None, name: str) -> AbstractContextManager[None]:
    """A prompt-set variant's errors name the file and the variant."""
    return SpecrunError.named(f"{prompt_set}, variant {name}") if prompt_set else nullcontext()


def check_variants(plans: Sequence[Plan], variants: dict[str, EncoderSettings], settings: EncoderSettings,
                   prompt_set: str | None = None) -> None:
    """What the encoder settings can be refused for before any work: a prompt flag that reaches no text (each
    variant's) and a reranker no spec can use."""
    for name, chosen in variants.items():
        with variant_named(prompt_set, name):
            check_prompts_reach(chosen, plans)
    check_reranks(plans, settings)


def model_similarity(plans: Sequence[Plan], model: ModelRef, adapter: str) -> str:
    """What `similarity: model` means for this model (its similarity_fn_name, read from its folder), checked
    against every protocol that asks for it before anything is encoded; cosine when no protocol asks."""
    if not any(protocol.similarity == "model" for plan in plans for protocol in plan.protocols):
        return "cosine"
    function = declared_similarity(model, ADAPTERS[adapter].needs_model)
    for plan in plans:
        for protocol in plan.protocols:
            with SpecrunError.named(plan.id):
                protocol.similarity_of(function)
    return function


def check_prompts_reach(settings: EncoderSettings, plans: Sequence[Plan]) -> None:
    """A prompt flag that reaches no text of the specs would change nothing but the folder's name and a
    leaderboard row with the same scores: refused, naming what the specs embed."""
    views = [protocol.view(field) for plan in plans for protocol in plan.protocols
             for field in protocol.entry.info.text_fields]
    roles = sorted({view.role for view in views})
    unreached = [(flag, what) for flag, value, reached, what in (
        ("--query-prompt", settings.query_prompt, "query" in roles, "queries"),
        ("--document-prompt", settings.document_prompt, "document" in roles, "documents"),
        ("--instruction-template", settings.instruction_template, any(v.instruction for v in views),
         "instructed texts (no protocol has an `instruction`)")) if value is not None and not reached]
    if unreached:
        flag, what = unreached[0]
        ids = ", ".join(plan.id for plan in plans)
        raise UsageError(f"{flag} reaches no text: {ids} embed(s) no {what} (their texts are {', '.join(roles)}); "
                         "leave it out (or use --prompt, for every text)")


def model_meta(described: dict[str, Any], embeddings: Sequence[Embeddings],
               corpora: Sequence[CorpusVectors], truncate_dim: int | None = None) -> dict[str, Any]:
    """ModelMeta's fields for one spec: what the model folder states and the run's peak memory (`described`), and
    the width of the vectors this spec scored (cached or not; --truncate-dim's when given)."""
    dim = truncate_dim or next((e.dim for e in (*embeddings, *corpora) if e.dim), None)
    sources = {**described.get("sources", {}), **({"embed_dim": "the vectors scored"} if dim else {}),
               **({"peak_memory_bytes": "this run's load and encode"} if "peak_memory_bytes" in described else {})}
    return {**described, "embed_dim": dim, "sources": sources}


def texts_by_encoding(pairs: set[tuple[Encoding, str]], block: int = 16_384) -> Iterator[tuple[Encoding, list[str]]]:
    """A spec's unique texts, per encoding, in blocks (in a fixed order): what a quantisation calibrates on."""
    grouped: dict[Encoding, list[str]] = {}
    for encoding, text in pairs:
        grouped.setdefault(encoding, []).append(text)
    for encoding in sorted(grouped):
        texts = sorted(grouped[encoding])
        for start in range(0, len(texts), block):
            yield encoding, texts[start:start + block]
