"""The run's settings and their defaults, stated once: the command line takes its defaults from here and the
runner reads nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field

from specrun.core.settings import EncoderSettings

RAY_WAIT_FACTOR = 10  # the actors' start and each encoded group may take this many times --ray-timeout


@dataclass(frozen=True)
class RunOptions:
    model: str | None = None  # hub id or local directory; None: the bundled default model
    model_revision: str | None = None
    data_dir: str | None = None
    output: str = "results"
    name: str | None = None  # the run's folder under ROOT/<spec id>/; None: the model's name and chosen settings
    device: str = "auto"
    cache_dir: str | None = None
    no_cache: bool = False
    encoder: EncoderSettings = field(default_factory=EncoderSettings)  # every setting that changes a vector
    executor: str = "local"  # local | ray
    ray_address: str | None = None  # None: a fresh local Ray cluster ($RAY_ADDRESS is not read)
    ray_timeout: float = 30.0  # seconds to reach or start the Ray cluster (actors, groups: RAY_WAIT_FACTOR x)
    prompt_set: str | None = None  # a YAML file of prompt variants, each scored on the same items in this run
    subsets: tuple[str, ...] | None = None  # the subsets of a spec with `subsets` to run; None: all of them
    splits: tuple[str, ...] | None = None  # the evaluated splits to score; None: every one the spec evaluates
    limit: int | None = None  # the first N items of each split read (a smoke run: marked, never published)


DEFAULTS = RunOptions()
