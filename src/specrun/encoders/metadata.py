"""What a model is, as MTEB's ModelMeta describes one (n_parameters, embed_dim, max_tokens, license, languages,
adapted_from, training_datasets), read from the model folder's files without loading it, so a fully cached run
has it too: parameters counted from the safetensors headers, sizes from the files, the rest only where the
model card's front matter (README.md) or a config states it; a field nothing states is absent, never guessed.
The embedding dimension comes from the vectors the run scored and the peak memory from the encode itself
(`PeakMemory`), which a cached run does not do."""

from __future__ import annotations

import json
import math
import resource
import struct
import sys
from pathlib import Path
from typing import Any

import yaml

from specrun.core.files import folder_files
from specrun.core.plain_yaml import load_plain
from specrun.encoders.models import WEIGHT_SUFFIXES, ModelRef, position_limit

HEADER_LIMIT = 100 << 20  # a safetensors header is kilobytes; one larger than this is not read
CARD_LIMIT = 1 << 20  # the README's front matter is read from its first MiB
INTEGER_DTYPES = ("I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "BOOL")  # buffers (position ids), not
# parameters: a quantised model's packed integer weights are not counted either, and the record says so


def safetensors_header(path: Path) -> dict[str, Any] | None:
    """The JSON header of a safetensors file (tensor name -> dtype, shape, offsets), or None when it is not one."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(8)
            if len(raw) != 8:
                return None
            size = struct.unpack("<Q", raw)[0]
            if size > HEADER_LIMIT:
                return None
            header = json.loads(handle.read(size))
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) else None


def count_parameters(directory: Path) -> int | None:
    """Elements of the floating-point tensors of every safetensors file of the folder (integer buffers such as
    position ids left out); None when the folder has no readable safetensors file."""
    files = [directory / relative for relative in folder_files(directory) if relative.suffix == ".safetensors"]
    headers = [safetensors_header(path) for path in files]
    if not files or any(header is None for header in headers):
        return None
    counts = [_elements(tensor) for header in headers if header for name, tensor in header.items()
              if name != "__metadata__"]
    if any(count is None for count in counts):  # a malformed header (a stray file): the count is left out
        return None
    return sum(count for count in counts if count is not None)


def _elements(tensor: Any) -> int | None:
    """A floating-point tensor's element count (0 for an integer buffer); None when the entry is not a tensor's
    (no dtype, a shape that is not a list of whole numbers)."""
    if not isinstance(tensor, dict) or not isinstance(tensor.get("dtype"), str):
        return None
    shape = tensor.get("shape")
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                              for n in shape):
        return None
    return 0 if tensor["dtype"] in INTEGER_DTYPES else math.prod(shape)


def weights_bytes(directory: Path) -> int | None:
    """Bytes of the folder's weight files (every format a loader may read, as the weights digest takes them)."""
    try:
        sizes = [(directory / relative).stat().st_size for relative in folder_files(directory)
                 if relative.name.lower().endswith(WEIGHT_SUFFIXES)]
    except OSError:  # a file gone since the digests were taken: no size is stated rather than a wrong one
        return None
    return sum(sizes) if sizes else None


def card_front_matter(directory: Path) -> dict[str, Any]:
    """The YAML front matter of the model card (README.md between its `---` lines), read safely; {} without one."""
    try:
        with (directory / "README.md").open("rb") as handle:
            text = handle.read(CARD_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return {}
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return {}
    try:
        data = load_plain("\n".join(lines[1:end]))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _texts(value: Any) -> list[str] | None:
    """A front matter value that is a text or a list of texts, as a list; None otherwise."""
    if isinstance(value, str) and value.strip():
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**7 else None


def max_tokens(directory: Path) -> tuple[int, str] | None:
    """The model's own limit on tokens per text and the file stating it: sentence-transformers' max_seq_length
    (what its encode truncates to), else the tokenizer's model_max_length, else the position embeddings."""
    found = _whole(_json(directory / "sentence_bert_config.json").get("max_seq_length"))
    if found:
        return found, "sentence_bert_config.json"
    found = _whole(_json(directory / "tokenizer_config.json").get("model_max_length"))
    if found:
        return found, "tokenizer_config.json"
    config = _json(directory / "config.json")
    found = position_limit(config) if config else None
    return (found, "config.json") if found else None


def files_metadata(model: ModelRef) -> dict[str, Any]:
    """What the model folder states about the model: each field with the file it came from (`sources`)."""
    directory = Path(model.path)
    out: dict[str, Any] = {}
    sources: dict[str, str] = {}
    parameters = count_parameters(directory)
    if parameters is not None:
        out["n_parameters"], sources["n_parameters"] = parameters, "safetensors headers"
    size = weights_bytes(directory)
    if size is not None:
        out["weights_bytes"], sources["weights_bytes"] = size, "weight files"
    tokens = max_tokens(directory)
    if tokens is not None:
        out["max_tokens"], sources["max_tokens"] = tokens
    card = card_front_matter(directory)
    config = _json(directory / "config.json")
    for field, key in (("license", "license"), ("languages", "language"), ("base_model", "base_model"),
                       ("training_datasets", "datasets")):
        values = _texts(card.get(key))
        where = "README.md front matter"
        if values is None and key in config:  # a config that states it (rare; never the architecture's name)
            values, where = _texts(config.get(key)), "config.json"
        if values is not None:
            out[field] = ", ".join(values) if field == "license" else values
            sources[field] = where
    declared = _json(directory / "config_sentence_transformers.json").get("similarity_fn_name")
    if isinstance(declared, str):
        out["similarity_fn_name"], sources["similarity_fn_name"] = declared, "config_sentence_transformers.json"
    out["sources"] = sources
    return out


class PeakMemory:
    """The peak memory of a model load and encode in this process: on a CUDA device torch's
    max_memory_allocated over the encode (the weights included, allocator caching not), else how far the
    process's peak resident memory (getrusage ru_maxrss) rose from before the load to after the encode (a lower
    bound; nothing is recorded when an earlier peak of the process was higher, as after another run in it). It
    varies from run to run: recorded, never compared or keyed."""

    def __init__(self) -> None:
        self.device = "cpu"
        self.cuda = False
        self.start = self._rss()  # before the load: torch and the weights are part of what an encode costs

    @staticmethod
    def _rss() -> int:
        value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(value if sys.platform == "darwin" else value * 1024)  # Linux reports KiB, macOS bytes

    def loaded(self, device: str) -> None:
        """Called once the model is loaded on `device` (torch imported): a CUDA peak starts here."""
        self.device, self.cuda = device, device.startswith("cuda")
        if self.cuda:
            import torch

            torch.cuda.reset_peak_memory_stats(self.device)

    def record(self) -> dict[str, Any]:
        if self.cuda:
            import torch

            return {"peak_memory_bytes": int(torch.cuda.max_memory_allocated(self.device)),
                    "peak_memory_measure": f"torch.cuda.max_memory_allocated on {self.device} during the encode"}
        rise = self._rss() - self.start
        if rise <= 0:  # the process had peaked higher before (an earlier run in it): nothing was measured
            return {}
        return {"peak_memory_bytes": rise,
                "peak_memory_measure": "rise of the process's peak resident memory (ru_maxrss) over the model load "
                                       "and encode"}
