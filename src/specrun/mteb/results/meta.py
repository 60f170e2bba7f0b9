"""A published model's `model_meta.json` (the file mteb's ResultCache writes beside a revision's task files: the
keys of its `ModelMeta.to_dict`), read into the fields our own runs' ModelMeta carries, so a published row says
what model it is as ours do. The file is as open to anyone as the task files: it is read bounded, only the known
keys are taken (the others, which vary between mteb versions, are passed over), each checked; a file that fails is
set aside with a reason, never an error of the command."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationError, field_validator

from specrun.core.errors import PublishedError
from specrun.core.files import read_regular_file
from specrun.core.types import Strict

META_FILE = "model_meta.json"
META_LIMIT = 1 << 20  # bytes: mteb writes ~1-3 kB; a training-datasets list may make some tens
Name = Annotated[str, Field(min_length=1, max_length=200)]


class PublishedModelMeta(Strict):
    """The model's metadata as its published `model_meta.json` states it (none measured here); None where the
    file gives none. `max_tokens` is an integer (mteb writes 32768.0); a static model's `Infinity` (no token
    limit) is None with `no_token_limit`; older files name `memory_usage`."""

    n_parameters: int | None = Field(None, ge=0, le=10**14)
    embed_dim: int | None = Field(None, ge=1, le=1 << 20)
    memory_usage_mb: float | None = Field(None, ge=0, le=1e9)
    max_tokens: int | None = Field(None, ge=1, le=1 << 40)
    no_token_limit: bool = False
    license: Name | None = None
    open_weights: bool | None = None
    release_date: str | None = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    framework: list[Name] | None = Field(None, max_length=32)
    file: str = Field(description="The model_meta.json read (model folder/revision/model_meta.json).")

    @field_validator("max_tokens", "n_parameters", "embed_dim", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        """An integral float (32768.0, as mteb writes max_tokens) is the integer; infinity or 0.5 stay refused."""
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        return value


FIELDS = ("n_parameters", "embed_dim", "memory_usage_mb", "max_tokens", "license", "open_weights", "release_date",
          "framework")


def read_model_meta(path: Path, shown: str) -> PublishedModelMeta:
    """The record of one model_meta.json; PublishedError (one line naming the file and key) when malformed."""
    raw = read_regular_file(path, META_LIMIT, "published model_meta.json", error=PublishedError, shown=shown)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise PublishedError("not JSON", file=shown) from None
    if not isinstance(data, dict):
        raise PublishedError("not a JSON object", file=shown)
    taken = {key: data[key] for key in FIELDS if data.get(key) is not None}
    if "memory_usage_mb" not in taken and isinstance(data.get("memory_usage"), (int, float)):
        taken["memory_usage_mb"] = data["memory_usage"]  # mteb's name for it before memory_usage_mb
    if taken.get("max_tokens") == math.inf:
        taken["max_tokens"], taken["no_token_limit"] = None, True
    if isinstance(taken.get("framework"), str):
        taken["framework"] = [taken["framework"]]
    try:
        return PublishedModelMeta.model_validate({**taken, "file": shown})
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        key = ".".join(str(part) for part in error["loc"]) or None
        raise PublishedError(f"not a model_meta.json: {error['msg']}", file=shown, key=key) from None


__all__ = ["META_FILE", "PublishedModelMeta", "read_model_meta"]
