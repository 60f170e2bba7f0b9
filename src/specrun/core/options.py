"""The run's settings and their defaults, stated once: the command line takes its defaults from here and the
runner reads nothing else."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunOptions:
    model: str | None = None  # hub id or local directory; None: the bundled default model
    model_revision: str | None = None
    adapter: str = "auto"
    data_dir: str | None = None
    output: str = "results"
    name: str | None = None  # the run's folder under ROOT/<spec id>/; None: the model's name and chosen settings
    device: str = "auto"
    batch_size: int = 32
    max_length: int | None = None
    prompt: str | None = None
    prompt_name: str | None = None
    cache_dir: str | None = None
    no_cache: bool = False
    trust_remote_code: bool = False
    dtype: str = "float32"  # float32 | float16 | bfloat16: what the model computes in; vectors are float32
    executor: str = "local"  # local | ray
    ray_address: str | None = None  # None: $RAY_ADDRESS, else a local Ray cluster


DEFAULTS = RunOptions()
