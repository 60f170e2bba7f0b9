"""The second stage of two-stage ranking: a sentence-transformers CrossEncoder scoring (query, document) pairs,
through a cache of pair scores of its own.

The cache is the vector store's (`store.EmbeddingCache`: append-only shards, each verified before a row of it is
used, a damaged one reported, removed and scored again), one float32 per pair. Its key is the cross-encoder's
weights digest and the digest of every file of its folder, the batch size and the max length (what can change
a score), and the role `pair`; a pair is keyed by the sha256 of `[query, document]` as JSON, so no separator can
make two pairs one. The model is loaded only when a pair is missing, so a rerun loads no cross-encoder.
MTEB's `CrossEncoderWrapper.predict` calls `CrossEncoder.predict` on the (query, document) texts as they are,
without prompts; so does this."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specrun.core.errors import ModelError, OfflineError, UsageError
from specrun.core.registry import PROTOCOLS
from specrun.core.settings import EncoderSettings
from specrun.core.workspace import Workspace
from specrun.encoders.devices import parse_devices
from specrun.encoders.metadata import safetensors_header
from specrun.encoders.models import ModelRef, check_model, resolve_model
from specrun.encoders.store import CacheKey, EmbeddingCache, model_files_hash
from specrun.plan import Plan

# the cache key's role of a pair score (never a text encoding's); `checked`: only scores of a cross-encoder whose
# every weight came from its folder are stored under it (older caches may hold a random head's scores)
PAIR_ROLE = "pair-checked"


@dataclass
class PairScorer:
    """A cross-encoder's scores of (query, document) pairs, cached; `pairs` and `scored` count what was asked for
    and what the model scored in this process (the rest came from the cache)."""

    model: ModelRef
    settings: EncoderSettings  # the run's: batch size, max length, dtype, trust_remote_code
    device: str  # as requested (`auto`: cuda when there is one), resolved on loading: a cached rerun imports no torch
    cache: EmbeddingCache | None
    pairs: int = 0
    scored: int = 0
    max_length: int | None = None  # as the cross-encoder applies it, once loaded
    _cross_encoder: Any = field(default=None, repr=False)

    def score(self, queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        keys = [json.dumps([q, d], ensure_ascii=False) for q, d in zip(queries, documents, strict=True)]
        unique = list(dict.fromkeys(keys))
        found = self.cache.lookup(unique) if self.cache is not None else None
        values = {key: float(found[key][0]) for key in unique if found is not None and key in found}
        missing = [key for key in unique if key not in values]
        if missing:
            scores = self._predict([tuple(json.loads(key)) for key in missing])
            if self.cache is not None:
                self.cache.store(missing, scores.reshape(-1, 1))
            values.update(zip(missing, scores.astype(np.float64).tolist(), strict=True))
            self.scored += len(missing)
        self.pairs += len(keys)
        return np.array([values[key] for key in keys], dtype=np.float64)

    def _predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        model = self._load()
        scores = np.asarray(model.predict(pairs, batch_size=self.settings.batch_size, show_progress_bar=False,
                                          convert_to_numpy=True), dtype=np.float32)
        if scores.shape != (len(pairs),):
            raise ModelError(f"reranker {self.model.name} gives {scores.shape[1:] or 'no'} scores per pair; "
                             "expected one (a CrossEncoder with num_labels 1)")
        return scores

    def _load(self) -> Any:
        if self._cross_encoder is None:
            from sentence_transformers import CrossEncoder

            from specrun.encoders.devices import torch_dtype

            missing = newly_initialised(Path(self.model.path))
            if missing:
                raise ModelError(f"reranker {self.model.name}: its folder holds no trained weights for "
                                 f"{', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''} (a bi-encoder or a "
                                 "base model, not a cross-encoder: transformers would initialise them at random, and "
                                 "every score would be noise); give a trained CrossEncoder")
            model = CrossEncoder(self.model.path, device=parse_devices(self.device)[0], local_files_only=True,
                                 trust_remote_code=self.settings.trust_remote_code,
                                 max_length=self.settings.max_length)
            model.to(torch_dtype(self.settings.dtype))
            self.model.check_unchanged()
            if model.num_labels != 1:
                raise ModelError(f"reranker {self.model.name} has {model.num_labels} labels; a reranker gives one "
                                 "relevance score per pair (num_labels 1)")
            self.max_length = model.max_seq_length
            self._cross_encoder = model
        return self._cross_encoder

    def record(self) -> dict[str, Any]:
        """What results.json records of the reranker: which weights, and how many pairs it scored."""
        return {"name": self.model.name, "origin": self.model.origin, "revision": self.model.revision,
                "weights_sha256": self.model.weights_sha256, "max_length": self.max_length, "pairs": self.pairs,
                "scored": self.scored}


def newly_initialised(folder: Path) -> list[str]:
    """The weights a one-label sequence-classification model of this folder's config expects and its checkpoint
    lacks (what transformers would initialise at random: a bi-encoder's missing head), found without loading a
    weight: the model built on torch's meta device, its state dict's names against the checkpoint's tensor names
    (the base model's prefix added or dropped as transformers does). Non-persistent buffers are not in either."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(str(folder), local_files_only=True, num_labels=1)
    with torch.device("meta"):
        model = AutoModelForSequenceClassification.from_config(config)
    prefix = f"{model.base_model_prefix}."
    present = {name.removeprefix(prefix) for name in checkpoint_names(folder)}
    ignored = [re.compile(p) for p in getattr(model, "_keys_to_ignore_on_load_missing", None) or []]
    return [name for name in model.state_dict()
            if name.removeprefix(prefix) not in present and not any(p.search(name) for p in ignored)]


def checkpoint_names(folder: Path) -> set[str]:
    """The tensor names of a folder's checkpoint: safetensors headers (one file or an index's shards), else a
    pytorch_model.bin read on the meta device (names and shapes only, weights_only)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}))
    header = safetensors_header(folder / "model.safetensors") if (folder / "model.safetensors").is_file() else None
    if header is not None:
        return {name for name in header if name != "__metadata__"}
    if (folder / "pytorch_model.bin").is_file():
        import torch

        return set(torch.load(folder / "pytorch_model.bin", map_location="meta", weights_only=True, mmap=True))
    raise ModelError(f"{folder}: no model.safetensors or pytorch_model.bin to read a cross-encoder from")


def open_reranker(settings: EncoderSettings, workspace: Workspace, device: str) -> PairScorer | None:
    """The run's reranker (None without --reranker): resolved and checked as a model is (its digest; code its
    folder would run refused without --trust-remote-code), not loaded until a pair is missing from the cache."""
    if settings.reranker is None:
        return None
    try:
        model = resolve_model(settings.reranker, memo_dir=workspace.memo)
    except (ModelError, OfflineError) as exc:  # resolve_model speaks of --model (a hub id's too)
        raise type(exc)(exc.message.replace("--model ", "--reranker ")) from None
    check_model(model, "sentence-transformers", None, settings.trust_remote_code)
    root = workspace.embeddings or workspace.scratch_vectors()
    cache = None
    if root is not None:
        key_settings = EncoderSettings(adapter="cross-encoder", batch_size=settings.batch_size,
                                       max_length=settings.max_length, dtype=settings.dtype,
                                       trust_remote_code=settings.trust_remote_code)
        key = CacheKey(model=model.weights_sha256, model_files=model_files_hash(Path(model.path), workspace.memo),
                       settings=key_settings, role=PAIR_ROLE)
        cache = EmbeddingCache(root, key, warn=workspace.warn, writer=workspace.writer)
    return PairScorer(model=model, settings=settings, device=device, cache=cache)


def check_reranks(plans: Sequence[Plan], settings: EncoderSettings) -> None:
    """--reranker reaches every protocol of the specs, or the run is refused before any work: a kind that does
    not rerank would give first-stage numbers under a reranked run's name; --rerank-top-k alone changes nothing."""
    if settings.reranker is None:
        if settings.rerank_top_k != type(settings).model_fields["rerank_top_k"].default:
            raise UsageError("--rerank-top-k needs --reranker MODEL: without a reranker nothing is rescored")
        return
    for plan in plans:
        for protocol in plan.protocols:
            if not protocol.entry.info.reranks:
                raise UsageError(f"--reranker: {plan.id}'s protocol {protocol.name} is of kind {protocol.kind}, "
                                 "which ranks nothing to rescore (the kinds that rerank: "
                                 f"{', '.join(reranking_kinds())}); run it without --reranker")


def reranking_kinds() -> list[str]:
    return sorted(name for name in PROTOCOLS if PROTOCOLS[name].info.reranks)
