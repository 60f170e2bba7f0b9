"""Adapters: how a model's output becomes one vector per text. Each registers an `AdapterEntry` (core.contracts)
whose metadata says whether it reads a model and which dtypes it computes in; an adapter is built from (model,
settings, devices). torch, transformers and sentence-transformers are imported only when a model is loaded."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import re
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from specrun.core import registry
from specrun.core.contracts import AdapterEntry
from specrun.core.errors import ModelError, SpecrunError, first_line, os_error_text
from specrun.core.settings import EncoderSettings
from specrun.core.types import Role
from specrun.encoders.batch_threads import BatchThreads
from specrun.encoders.devices import DTYPES, check_dtype, torch_dtype
from specrun.encoders.models import ModelRef, check_model, check_special_tokens, remote_code_error
from specrun.encoders.prompts import ModelPrompts, resolve_flags


@dataclass(frozen=True)
class EncoderInfo:
    """What an adapter reports once loaded: the settings as it applied them (the effective max length and dtype)
    and what follows from the model (pooling, normalisation, devices)."""

    settings: EncoderSettings
    pooling: str
    normalize: bool
    device: str

    def record(self) -> dict[str, Any]:
        """Flat, as results.json's model provenance and the cache's info.json hold it."""
        return {**self.settings.record(), "pooling": self.pooling, "normalize": self.normalize, "device": self.device}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> EncoderInfo:
        """The inverse of `record`; a ValueError when a field is missing or unknown."""
        own = {"pooling", "normalize", "device"}
        if not own <= set(record) or set(record) - own - set(EncoderSettings.model_fields):
            raise ValueError("not an encoder record")
        return cls(settings=EncoderSettings(**{k: v for k, v in record.items() if k not in own}),
                   **{k: record[k] for k in own})


class Adapter(Protocol):
    info: EncoderInfo

    def encode_group(self, texts: Sequence[str], batch_size: int, role: Role = "symmetric",
                     prompt: str = "") -> np.ndarray:
        """Embed consecutive batches of `batch_size` texts (the last may be shorter), exactly those batches, in
        `role` (the model's query or document path where it has them) with `prompt` before each text."""
        ...

    def close(self) -> None: ...


def _quiet_transformers() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


class SentenceTransformersAdapter:
    """The model's own modules: its pooling, normalisation and max length, as its authors configured them.
    Several devices share the work through sentence-transformers' multi-process pool, batch for batch."""

    def __init__(self, model: ModelRef, settings: EncoderSettings, devices: list[str]) -> None:
        _quiet_transformers()
        from sentence_transformers import SentenceTransformer

        max_length, trust_remote_code = settings.max_length, settings.trust_remote_code

        self.pool = None
        self.model = SentenceTransformer(model.path, device=devices[0], local_files_only=True,
                                         trust_remote_code=trust_remote_code)
        self.model.to(torch_dtype(settings.dtype))  # the whole pipeline, pooling included; vectors come back as float32
        if max_length:
            check_special_tokens(model, getattr(self.model, "tokenizer", None), max_length)
            self.model.max_seq_length = max_length
        if self.model.max_seq_length is None:
            raise ModelError(f"{model.name} states no maximum sequence length; pass --max-length N")
        modules = [type(module).__name__ for module in self.model]
        pooling = next((m for m in self.model if type(m).__name__ == "Pooling"), None)
        mode = getattr(pooling, "pooling_mode", None) or (
            ",".join(k.removeprefix("pooling_mode_").removesuffix("_tokens")
                     for k, v in pooling.get_config_dict().items() if k.startswith("pooling_mode_") and v is True)
            if pooling is not None else "model-defined")
        self.pool = self.model.start_multi_process_pool(devices) if len(devices) > 1 else None
        self.threads = BatchThreads(devices[0] if self.pool is None else "pool")
        self.model.preprocess = self.threads.locked(self.model.preprocess)  # encode tokenizes through it
        applied = settings.with_values(max_length=int(self.model.max_seq_length),
                                       dtype=str(next(self.model.parameters()).dtype).removeprefix("torch."))
        self.info = EncoderInfo(settings=applied, pooling=str(mode), normalize="Normalize" in modules,
                                device=",".join(devices))

    def encode_group(self, texts: Sequence[str], batch_size: int, role: Role = "symmetric",
                     prompt: str = "") -> np.ndarray:
        # the model's own path for the role (encode_query / encode_document: its Router), the prompt given as
        # text, an empty one included, so sentence-transformers applies no default of its own
        encode = {"query": self.model.encode_query, "document": self.model.encode_document}.get(role,
                                                                                                 self.model.encode)
        options = {"convert_to_numpy": True, "show_progress_bar": False, "prompt": prompt}
        if self.pool is not None:  # chunks of batch_size, in order: each worker encodes exactly our batches
            return encode(list(texts), batch_size=batch_size, pool=self.pool, chunk_size=batch_size, **options)
        return np.concatenate(self.threads.run(lambda batch: encode(batch, batch_size=batch_size, **options),
                                               [list(texts[i:i + batch_size])
                                                for i in range(0, len(texts), batch_size)]))

    def close(self) -> None:
        if self.pool is not None:
            self.model.stop_multi_process_pool(self.pool)
            self.pool = None
        self.threads.close()


class TransformersAdapter:
    """Plain transformers: last hidden layer, mean over non-padding tokens."""

    def __init__(self, model: ModelRef, settings: EncoderSettings, devices: list[str]) -> None:
        max_length, trust_remote_code = settings.max_length, settings.trust_remote_code
        if len(devices) > 1:
            raise ModelError("several devices need the sentence-transformers adapter")
        _quiet_transformers()
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        self.torch = torch
        self.device = devices[0]
        # the configuration first: its refusal of custom code is the clearest message a bad folder can get
        config = AutoConfig.from_pretrained(model.path, local_files_only=True, trust_remote_code=trust_remote_code)
        self.tokenizer = AutoTokenizer.from_pretrained(model.path, local_files_only=True,
                                                       trust_remote_code=trust_remote_code)
        check_special_tokens(model, self.tokenizer, max_length)
        self.model = AutoModel.from_pretrained(model.path, config=config, local_files_only=True,
                                               trust_remote_code=trust_remote_code,
                                               ).to(device=self.device, dtype=torch_dtype(settings.dtype)).eval()
        limit = getattr(self.model.config, "max_position_embeddings", None) or 512
        self.max_length = int(max_length or min(self.tokenizer.model_max_length, limit))
        applied = settings.with_values(max_length=self.max_length,
                                       dtype=str(self.model.dtype).removeprefix("torch."))
        self.info = EncoderInfo(settings=applied, pooling="mean", normalize=False, device=self.device)
        self.threads = BatchThreads(self.device)
        self.tokenize = self.threads.locked(self.tokenizer)

    def _encode_batch(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        batch = self.tokenize([prompt + text for text in texts], padding=True, truncation=True,
                              max_length=self.max_length, return_tensors="pt").to(self.device)
        with self.torch.inference_mode():
            hidden = self.model(**batch).last_hidden_state.float()  # pooled in float32 whatever --dtype
        # Mean pooling by hand: transformers has no pooling helper; this is the formula ST's Pooling uses.
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        return pooled.float().cpu().numpy()

    def encode_group(self, texts: Sequence[str], batch_size: int, role: Role = "symmetric",
                     prompt: str = "") -> np.ndarray:
        """One model for every role: a role differs by its prompt only."""
        return np.concatenate(self.threads.run(lambda batch: self._encode_batch(batch, prompt),
                                               [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]))

    def close(self) -> None:
        self.threads.close()


class HashingAdapter:
    """No model at all: signed feature hashing of lower-cased words and character trigrams, L2-normalised.
    Deterministic and fast, so tests and scale benchmarks can run every stage in seconds; its numbers mean
    nothing about any model, and results name the adapter `hashing`. Hand-written because it must import no
    torch; sklearn's HashingVectorizer would add a dependency for twenty lines."""

    DIMENSIONS = 64

    def __init__(self, model: ModelRef | None, settings: EncoderSettings, devices: list[str]) -> None:
        self.max_length = int(settings.max_length or 512)
        self.info = EncoderInfo(settings=settings.with_values(max_length=self.max_length, dtype="float32"),
                                pooling="none", normalize=True, device="cpu")

    def encode_group(self, texts: Sequence[str], batch_size: int, role: Role = "symmetric",
                     prompt: str = "") -> np.ndarray:
        """Each text's signed counts of its words' and trigrams' slots: a sum of its words' own counts (each word
        hashed once per process; the group's words gathered and summed text by text at once, not one small sum
        a text), in whole integers, so the order of the sum changes no bit; L2-normalised."""
        counts = np.zeros((len(texts), self.DIMENSIONS))
        vocabulary: dict[str, int] = {}  # the group's distinct words, in order of first use
        columns = array("q")  # each text's words as vocabulary positions, text after text (8 bytes a word)
        lengths = np.zeros(len(texts), dtype=np.int64)
        for row, text in enumerate(texts):
            words = re.findall(r"\w+", (prompt + text).lower())[: self.max_length]
            columns.extend(vocabulary.setdefault(word, len(vocabulary)) for word in words)
            lengths[row] = len(words)
            if not words:  # no word at all: the text itself is the one feature
                slot, sign = _feature_slot(prompt + text, self.DIMENSIONS)
                counts[row, slot] = sign
        if columns:
            _sum_words(counts, np.stack([_word_counts(word, self.DIMENSIONS) for word in vocabulary]),
                       np.frombuffer(columns, dtype=np.int64), lengths)
        norms = np.sqrt(np.einsum("ij,ij->i", counts, counts))  # of whole numbers: exact, in any order
        return (counts / np.where(norms > 0, norms, 1.0)[:, None]).astype(np.float32)

    def close(self) -> None:
        return None


WORD_ROWS = 4096  # the words' rows gathered at once (2 MB): a group of long texts never holds all of them


def _sum_words(counts: np.ndarray, table: np.ndarray, columns: np.ndarray, lengths: np.ndarray) -> None:
    """counts[t] += the table's rows of text t's words (columns, text after text; lengths[t] of them), a run of
    whole texts of about WORD_ROWS words at a time (a text longer than that alone)."""
    ends = np.cumsum(lengths)
    first = 0
    while first < len(lengths):
        begin = int(ends[first - 1]) if first else 0
        stop = max(first + 1, int(np.searchsorted(ends, begin + WORD_ROWS, side="right")))
        part = lengths[first:stop]
        worded = part > 0
        if worded.any():
            starts = np.concatenate([[0], np.cumsum(part[worded])[:-1]])
            counts[first:stop][worded] = np.add.reduceat(table[columns[begin:int(ends[stop - 1])]], starts, axis=0)
        first = stop


@functools.lru_cache(maxsize=1 << 16)
def _word_counts(word: str, dimensions: int) -> np.ndarray:
    """A word's signed counts in the hashing adapter's slots: the word itself and each of its character trigrams
    (a word of under three characters is its own trigram too)."""
    counts = np.zeros(dimensions)
    for feature in (word, *(word[i:i + 3] for i in range(max(1, len(word) - 2)))):
        slot, sign = _feature_slot(feature, dimensions)
        counts[slot] += sign
    counts.flags.writeable = False  # shared by every text that holds the word
    return counts


@functools.lru_cache(maxsize=1 << 18)
def _feature_slot(feature: str, dimensions: int) -> tuple[int, float]:
    """The hashing adapter's place and sign of one word or trigram; remembered, as words and trigrams recur."""
    value = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return value % dimensions, 1.0 if value >> 63 else -1.0


ADAPTERS = registry.ADAPTERS  # name -> AdapterEntry; plugins add theirs through the `specrun.adapters` entry points
for _entry in (
        AdapterEntry("sentence-transformers", SentenceTransformersAdapter, dtypes=DTYPES,
                     description="the model's own sentence-transformers modules (pooling, normalisation)"),
        AdapterEntry("transformers", TransformersAdapter, dtypes=DTYPES,
                     description="the last layer of a transformers model, mean over tokens"),
        AdapterEntry("hashing", HashingAdapter, needs_model=False,
                     description="no model: deterministic word hashing, for tests and scale checks")):
    ADAPTERS.register(_entry.name, _entry)


def choose_adapter(model: ModelRef, requested: str) -> str:
    if requested != "auto":
        return requested
    directory = Path(model.path)
    if (directory / "modules.json").is_file() or (directory / "config_sentence_transformers.json").is_file():
        return "sentence-transformers"
    return "transformers"


JAPANESE_TOKENIZER_PACKAGES = ("fugashi", "unidic", "ipadic", "mecab", "sudachi", "rhoknp", "jumanpp")


def declared_prompts(model: ModelRef, adapter: str) -> ModelPrompts:
    """The prompts the model folder declares (none for an adapter that reads no model)."""
    return ModelPrompts.of(model.path) if ADAPTERS[adapter].needs_model else ModelPrompts()


def resolve_settings(model: ModelRef, requested: EncoderSettings) -> EncoderSettings:
    """The settings as they will be applied, before any model is loaded: the adapter chosen, the prompts' texts
    (also when given by name), and everything the model folder alone can refuse checked (code it would run, a
    --max-length beyond its positions, a dtype the adapter does not compute in)."""
    adapter = checked_adapter(model, requested)
    return resolve_flags(requested.with_values(adapter=adapter), declared_prompts(model, adapter),
                         has_model=ADAPTERS[adapter].needs_model)


def checked_adapter(model: ModelRef, settings: EncoderSettings) -> str:
    """The adapter the settings choose (auto resolved), after what the model folder alone can refuse."""
    adapter = choose_adapter(model, settings.adapter)
    check_model(model, adapter, settings.max_length, settings.trust_remote_code)
    check_dtype(adapter, settings.dtype)
    return adapter


def load_adapter(model: ModelRef, settings: EncoderSettings, devices: list[str]) -> Adapter:
    """Load the model behind an adapter, with settings as `resolve_settings` gives them (the prompt as text). Code
    from the model folder runs only with `trust_remote_code`, which is passed to the libraries explicitly (so they
    never ask on standard input, which is also emptied while loading); every failure becomes one ModelError line."""
    name, trust_remote_code = checked_adapter(model, settings), settings.trust_remote_code
    settings = settings.with_values(adapter=name)
    try:
        with _no_stdin():
            return ADAPTERS[name].factory(model, settings, devices)
    except SpecrunError:
        raise
    except SystemExit as exc:  # a plugin that exits would end the run with its code and no output
        raise ModelError(f"adapter {name} called exit({exc.code!r}) while loading {model.name}; an adapter raises "
                         "an error instead") from None
    except ImportError as exc:
        text = first_line(exc)
        if any(package in text.lower() for package in JAPANESE_TOKENIZER_PACKAGES):
            raise ModelError(f"{model.name} needs a Japanese tokenizer ({text}); "
                             "install it with: pip install 'specrun[ja]'") from None
        raise ModelError(f"adapter {name} needs a package that is missing: {text}") from None
    except OSError as exc:
        raise ModelError(f"cannot load {model.name} with the {name} adapter: {os_error_text(exc)}") from None
    except Exception as exc:  # a library's refusal or crash on a bad folder: one line, never a traceback
        if "trust_remote_code" in str(exc) and not trust_remote_code:
            raise remote_code_error(model, "the loader refused it") from None
        raise ModelError(f"cannot load {model.name} with the {name} adapter: "
                         f"{type(exc).__name__}: {first_line(exc)}") from None


@contextlib.contextmanager
def _no_stdin() -> Iterator[None]:
    """Standard input reads as empty while a model loads: no library prompt can be answered from it."""
    previous = sys.stdin
    sys.stdin = io.StringIO()
    try:
        yield
    finally:
        sys.stdin = previous


def describe(model: ModelRef, info: EncoderInfo) -> dict[str, Any]:
    recorded = {f.name for f in fields(model) if f.metadata.get("recorded", True)}
    return {**{name: value for name, value in asdict(model).items() if name in recorded}, **info.record()}
