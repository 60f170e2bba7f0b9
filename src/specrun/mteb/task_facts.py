"""Three facts of every MTEB task (its main score, the dataset revision it reads, the languages of each subset),
packaged apart from the catalogue they are taken from: reading MTEB's older result files needs them for a handful
of tasks, and loading the whole catalogue (36 MB of JSON, with every task's statistics) took 2 s and 400 MB of
memory for that. The file is derived from the packaged catalogue alone (`facts_from_catalogue`;
`python bench/published_slice.py --write-facts` writes it, a slow test checks it equals the catalogue's)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources
from typing import Any

from pydantic import Field

from specrun.core.types import Strict

FACTS_FILE = "task-facts-2.26.24.json.gz"  # beside the catalogue of the same mteb version, in `data/`


class TaskFacts(Strict):
    main_score: str
    dataset_revision: str
    languages: dict[str, list[str]] = Field(description="hf_subset -> ISO 639-3 and script, in MTEB's order.")


class FactsFile(Strict):
    mteb_version: str
    tasks: dict[str, TaskFacts]


def facts_from_catalogue(catalogue: Any) -> FactsFile:
    """The facts of every task of a loaded `specrun.mteb.catalogue.Catalogue`."""
    return FactsFile(mteb_version=catalogue.provenance.mteb_version, tasks={
        name: TaskFacts(main_score=task.main_score, dataset_revision=task.dataset.revision,
                        languages=task.languages) for name, task in sorted(catalogue.tasks.items())})


@cache
def load_facts() -> FactsFile:
    raw = resources.files(__package__).joinpath("data").joinpath(FACTS_FILE).read_bytes()
    return FactsFile.model_validate(json.loads(gzip.decompress(raw)))


def task_facts(task: str) -> TaskFacts | None:
    """The task's facts; None for a task the catalogue does not hold (one MTEB dropped or renamed)."""
    return load_facts().tasks.get(task)


__all__ = ["FACTS_FILE", "FactsFile", "TaskFacts", "facts_from_catalogue", "task_facts"]
