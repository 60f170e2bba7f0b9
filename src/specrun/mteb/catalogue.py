"""MTEB's catalogue, read offline: every task and named benchmark of one mteb version as the checked-in file
`data/mteb-<version>.json[.gz]` holds them (made by bench/mteb_catalogue.py in a side environment with mteb;
mteb is never imported here). The models mirror the file key for key and refuse unknown keys, so a file made by a
newer generator fails loudly here instead of being read in part."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import Field

from specrun.core.errors import UsageError
from specrun.core.registry import did_you_mean
from specrun.core.types import Strict

__all__ = ["Benchmark", "Catalogue", "Member", "Task", "Transform", "active_text_tasks", "benchmark", "load",
           "task", "versions"]

FOLDER = "data"  # beside this module, in the package data
FILE_PATTERN = re.compile(r"^mteb-(?P<version>\d+(?:\.\d+)*)\.json(?:\.gz)?$")
COMMIT_PATTERN = r"^[0-9a-f]{40}$"


class Dataset(Strict):
    """What MTEB passes to datasets.load_dataset: the hub repo, its revision and the other arguments (name,
    split, trust_remote_code)."""

    path: str
    revision: str
    options: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_commit(self) -> bool:
        return re.match(COMMIT_PATTERN, self.revision) is not None


class Transform(Strict):
    """dataset_transform read statically by the generator: the steps it recognised, and the calls and constructs
    it did not (`other`; any makes the kind "custom", whose code must be read)."""

    kind: Literal["known", "custom"]
    renames: dict[str, str]
    sampling: list[dict[str, Any]]  # stratified_subsampling's arguments per call; {"expr": source} where computed
    class_encode: list[str]
    select_columns: list[str]
    remove_columns: list[str]
    explode: list[str]  # columns whose rows of lists become one row per element (itertools.chain.from_iterable)
    other: list[str]
    sets: dict[str, Any]  # class attributes the transform assigns (`self.NAME = value`): they hold at evaluation
    joined_splits: list[str]  # source splits a loop extends, in order, into each eval split (renames: their columns)
    solo_dropped: list[str]  # label columns whose labels held by one row lose that row (after explode)
    split_text: dict[str, dict[str, Any]]  # column -> {sep, max_parts}: a mapped function splits its text into a list
    train_test_split: list[dict[str, Any]]  # {split, test_size, seed}: the split becomes train_test_split's test part


class Task(Strict):
    """One MTEB task: its TaskMetadata, its flags, its abstask with the class attributes it resolves, the hooks
    its class overrides, its dataset_transform read statically and MTEB's descriptive statistics."""

    name: str
    type: str
    category: str | None
    modalities: list[str]
    description: str
    reference: str | None
    citation: str | None
    prompt: str | dict[str, str] | None
    dataset: Dataset
    revision_note: str | None  # why the revision is not a 40-hex commit; None when it is
    hf_subsets: list[str]
    languages: dict[str, list[str]]  # hf_subset -> ISO 639-3 and script, in MTEB's order
    is_multilingual: bool
    eval_splits: list[str]
    fit_split: str | None
    main_score: str
    license: str | None
    domains: list[str] | None
    task_subtypes: list[str] | None
    annotations_creators: str | None
    sample_creation: str | None
    dialect: list[str] | None
    date: tuple[str, str] | None
    adapted_from: list[str] | None
    contributed_by: str | None
    superseded_by: str | None
    is_public: bool
    is_beta: bool
    is_aggregate: bool
    aggregate_of: list[str]
    abstask: str
    task_class: str
    own_classes: list[str]  # the task class and those between it and its abstask
    attributes: dict[str, Any]  # the abstask chain's class attributes, as the task class resolves them
    overridden_attributes: list[str]
    hooks: dict[str, str]  # method -> the class that overrides the abstask's
    hook_calls: dict[str, list[str]] = Field(default_factory=dict)  # method -> the names its body calls
    transform: Transform | None  # None: dataset_transform is the abstask's
    stats: dict[str, Any] | None  # MTEB's descriptive statistics per split (hf_subset_descriptive_stats within)

    @property
    def is_active_text(self) -> bool:
        """Text only, not superseded, public, not an aggregate: what MTEB's own defaults select."""
        return (self.modalities == ["text"] and self.superseded_by is None and self.is_public
                and not self.is_aggregate)


class Member(Strict):
    """A benchmark's task with the subsets and splits the benchmark takes of it."""

    task: str
    hf_subsets: list[str]
    eval_splits: list[str]


class Benchmark(Strict):
    name: str
    aliases: list[str]
    display_name: str | None
    description: str
    reference: str | None
    citation: str | None
    contacts: list[str]
    superseded_by: str | list[str] | None
    language_view: str | list[str]
    members: list[Member]


class Provenance(Strict):
    mteb_version: str
    python_version: str
    sklearn_version: str
    generator: str


class Catalogue(Strict):
    format: Literal[1]
    provenance: Provenance
    tasks: dict[str, Task]
    benchmarks: dict[str, Benchmark]

    def task(self, name: str) -> Task:
        """The task of that name, or one line naming the closest."""
        if name in self.tasks:
            return self.tasks[name]
        raise UsageError(f"no MTEB task {name!r} in the catalogue of mteb {self.provenance.mteb_version}"
                         f"{did_you_mean(name, list(self.tasks))}")

    def benchmark(self, name: str) -> Benchmark:
        """The named benchmark (by name or alias), or one line naming the closest."""
        if name in self.benchmarks:
            return self.benchmarks[name]
        for found in self.benchmarks.values():
            if name in found.aliases:
                return found
        known = [*self.benchmarks, *(alias for b in self.benchmarks.values() for alias in b.aliases)]
        raise UsageError(f"no MTEB benchmark {name!r} in the catalogue of mteb {self.provenance.mteb_version}"
                         f"{did_you_mean(name, known)}; known: {', '.join(sorted(self.benchmarks))}")

    def active_text_tasks(self) -> dict[str, Task]:
        return {name: t for name, t in self.tasks.items() if t.is_active_text}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def versions() -> dict[str, str]:
    """The packaged catalogues: mteb version -> file name, oldest first."""
    found = {}
    for entry in resources.files(__package__).joinpath(FOLDER).iterdir():
        match = FILE_PATTERN.match(entry.name)
        if match:
            found[match["version"]] = entry.name
    return dict(sorted(found.items(), key=lambda item: _version_key(item[0])))


def load(version: str | None = None) -> Catalogue:
    """The catalogue of that mteb version (the newest packaged when None), read once per process."""
    known = versions()
    if not known:
        raise UsageError("no MTEB catalogue is packaged (bench/mteb_catalogue.py writes one)")
    version = version or next(reversed(known))
    if version not in known:
        raise UsageError(f"no MTEB catalogue for mteb {version}{did_you_mean(version, list(known))}; "
                         f"packaged: {', '.join(known)}")
    return _read(known[version])


@cache
def _read(file_name: str) -> Catalogue:
    """One packaged file, parsed (0.7 s: 34 MB of JSON): cached by its name, so load(), load(None) and
    load("2.26.24") read it once between them (functools.cache keys each way of calling apart)."""
    raw = resources.files(__package__).joinpath(FOLDER).joinpath(file_name).read_bytes()
    text = gzip.decompress(raw) if file_name.endswith(".gz") else raw
    return Catalogue.model_validate(json.loads(text))


def active_text_tasks(version: str | None = None) -> dict[str, Task]:
    """The tasks MTEB runs by default on text: text only, not superseded, public, not an aggregate."""
    return load(version).active_text_tasks()


def task(name: str, version: str | None = None) -> Task:
    return load(version).task(name)


def benchmark(name: str, version: str | None = None) -> Benchmark:
    return load(version).benchmark(name)
