"""Published values found for a run: the model's folder by its name (`org__model`), the revision folder by the
run's model revision, the task file by the metric's `mteb` counterpart. A value that is not there is a reason
(one line for the reader), never an error of the whole command: a results repository holds what it holds."""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from specrun.core.errors import PublishedError, SpecrunError
from specrun.mteb.results._index import Candidate, Kept, PublishedIndex, choose
from specrun.mteb.results.files import (
    NO_REVISION,
    PublishedValue,
    TaskFile,
    checked_part,
    model_folder_name,
    read_task_file,
    score_of,
)
from specrun.mteb.results.meta import PublishedModelMeta, read_model_meta
from specrun.mteb.score_ref import MtebRef

MAX_REVISIONS_LISTED = 5
FILES_KEPT = 32  # task files `find` keeps read (a run's metrics share a few); a board's task reads keep none


Bounds = tuple[float, float] | None  # a metric's range (its spec's): a published value outside it is set aside


@dataclass(frozen=True)
class Found:
    """A published value, or why there is none; `note` says when the revision was chosen for a run without one."""

    value: PublishedValue | None
    reason: str | None = None
    note: str | None = None


@dataclass
class PublishedDir:
    """One folder in the results repository's layout: its names indexed once; a task file read (and validated)
    when asked, the last few kept, so memory grows with the index of names, never with the files opened."""

    root: Path
    _files: OrderedDict[Path, TaskFile] = field(default_factory=OrderedDict)
    _index: PublishedIndex | None = None
    _meta: dict[Path, PublishedModelMeta | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.root.is_dir():
            raise PublishedError("--published must be a folder in MTEB's results layout "
                                 "(<org>__<model>/<revision>/<TaskName>.json)", file=str(self.root))
        if not _holds_model_folders(self.root) and (self.root / "results").is_dir():
            self.root = self.root / "results"  # the repository's root, as a clone gives it: its files lie there
        if not _holds_model_folders(self.root):  # a mistyped path would compare nothing and pass any gate
            raise PublishedError("holds no <org>__<model> folders: --published must be a folder in MTEB's results "
                                 "layout (<org>__<model>/<revision>/<TaskName>.json), or a clone of the results "
                                 "repository", file=str(self.root))

    def task_file(self, path: Path) -> TaskFile:
        """The file, read once while among the last FILES_KEPT asked (several metrics of a run share one)."""
        found = self._files.get(path)
        if found is None:
            found = self._files[path] = read_task_file(path)
            if len(self._files) > FILES_KEPT:
                self._files.popitem(last=False)
        else:
            self._files.move_to_end(path)
        return found

    def revision_folder(self, model: str, revision: str | None) -> tuple[Path | None, str | None, str | None]:
        """(folder, reason when none, note): the run's revision when it records one; without one, MTEB's
        `no_revision_available`, else the model's only revision folder (said in the note), else none."""
        try:
            folder = self.root / model_folder_name(model)
        except PublishedError as exc:  # a local model's folder name, say: it cannot be in the repository
            return None, exc.message, None
        if not folder.is_dir():
            return None, f"no published results for {model} (no folder {folder.name})", None
        if revision is not None:
            here = folder / checked_part(revision, "model revision")
            if here.is_dir():
                return here, None, None
            return None, f"no published results for {model} at revision {revision} ({self._listed(folder)})", None
        if (folder / NO_REVISION).is_dir():
            return folder / NO_REVISION, None, None
        revisions = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        if len(revisions) == 1:
            return folder / revisions[0], None, (
                f"the run records no model revision (a bundled or local model); {model}'s only published revision, "
                f"{revisions[0]}, is used")
        return None, (f"the run records no model revision and {model} has {len(revisions)} published revisions "
                      f"({self._listed(folder)}); none is chosen"), None

    @staticmethod
    def _listed(folder: Path) -> str:
        names = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        shown = ", ".join(names[:MAX_REVISIONS_LISTED]) + (", ..." if len(names) > MAX_REVISIONS_LISTED else "")
        return f"published: {shown}" if names else "no revision folders"

    def find(self, model: str, revision: str | None, ref: MtebRef, bounds: Bounds = None) -> Found:
        """The published value of `ref` for this model and revision, or why there is none (a value outside the
        metric's `bounds`, its spec's range, is none: another scale, a percent, is no value of this metric)."""
        folder, reason, note = self.revision_folder(model, revision)
        if folder is None:
            return Found(None, reason)
        path = folder / f"{checked_part(ref.task, 'MTEB task')}.json"
        if not path.is_file():
            return Found(None, f"no {ref.task}.json in {folder.relative_to(self.root).as_posix()}/", note)
        return self._value(self.task_file(path), path, model, folder.name, ref, note, bounds)

    @staticmethod
    def _value(task_file: TaskFile, path: Path, model: str, revision: str, ref: MtebRef, note: str | None,
               bounds: Bounds = None) -> Found:
        if task_file.task_name != ref.task:
            raise PublishedError(f"task_name {task_file.task_name!r} is not {ref.task!r}, the file's name",
                                 file=str(path), key="task_name")
        value = score_of(task_file, path, ref.split, ref.subset, ref.score)
        if isinstance(value, str):
            return Found(None, value, note)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            return Found(None, f"{path.parent.parent.name}/{path.parent.name}/{path.name}: {ref.score} {value!r} lies "
                               f"outside the metric's range [{bounds[0]:g}, {bounds[1]:g}] (another scale?)", note)
        return Found(PublishedValue(model=model, revision=revision, task=ref.task, split=ref.split,
                                    subset=ref.subset, score=ref.score, value=value,
                                    mteb_version=task_file.mteb_version, file=path), None, note)

    @property
    def index(self) -> PublishedIndex:
        """The folder's names, indexed on first use (no file read)."""
        if self._index is None:
            self._index = PublishedIndex.build(self.root)
        return self._index

    def every_model(self, ref: MtebRef, bounds: Bounds = None) -> Published:
        """Every model of the folder with a value for `ref`, one revision each by the rule of `index.choose`, by
        model; each file that has no such value, or cannot be read, is set aside with a reason naming it."""
        checked_part(ref.task, "MTEB task")
        out = Published(set_aside=[f"{line} (the whole repository)" for line in self.index.set_aside])
        by_model: dict[str, list[tuple[Candidate, Kept, float]]] = {}
        for candidate in self.index.tasks.get(ref.task, []):
            out.n_files += 1
            shown = self.index.shown(candidate.path)
            try:  # read here, not kept: only the value and what `choose` needs stay
                task_file = read_task_file(candidate.path)
                result = self._value(task_file, candidate.path, candidate.model, candidate.revision, ref, None,
                                     bounds)
            except SpecrunError as exc:
                out.set_aside.append(f"{shown}: " + (f"{exc.key}: " if exc.key else "") + exc.message)
                continue
            if result.value is None:
                out.set_aside.append(result.reason or shown)
                continue
            kept = Kept(task_file.mteb_version, task_file.dataset_revision, task_file.layout)
            by_model.setdefault(candidate.model, []).append((candidate, kept, result.value.value))
        expected = _expected_dataset_revision(ref.task)
        for model, files in sorted(by_model.items()):
            taken, why = choose(files, expected)
            candidate, kept, value = files[taken]
            out.values.append(PublishedValue(
                model=model, revision=candidate.revision, task=ref.task, split=ref.split, subset=ref.subset,
                score=ref.score, value=value, mteb_version=kept.mteb_version, file=candidate.path,
                dataset_revision=kept.dataset_revision, layout=kept.layout, chosen=why,
                meta=self.model_meta(model, candidate.revision, out.set_aside)))
        return out

    def model_meta(self, model: str, revision: str, set_aside: list[str]) -> PublishedModelMeta | None:
        """The revision's model_meta.json, read once; None when absent or set aside (its reason added once)."""
        path = self.index.meta.get((model, revision))
        if path is None:
            return None
        if path not in self._meta:
            try:
                self._meta[path] = read_model_meta(path, self.index.shown(path))
            except SpecrunError as exc:
                self._meta[path] = exc.one_line()
                set_aside.append(self._meta[path])  # type: ignore[arg-type]
        found = self._meta[path]
        return found if isinstance(found, PublishedModelMeta) else None


@dataclass
class Published:
    """One MTEB score's published values, one per model, and every file set aside with its reason."""

    values: list[PublishedValue] = field(default_factory=list)
    set_aside: list[str] = field(default_factory=list)
    n_files: int = 0  # task files of the task in the folder (read or set aside)


def _expected_dataset_revision(task: str) -> str | None:
    """The dataset revision MTEB's task reads (specrun's offline catalogue of it); None for a task it lacks."""
    from specrun.mteb.task_facts import task_facts

    facts = task_facts(task)
    return None if facts is None else facts.dataset_revision


__all__ = ["Found", "Published", "PublishedDir"]


def _holds_model_folders(folder: Path) -> bool:
    """Whether the folder holds a model's folder (`<org>__<model>`): a repository root's own `__init__.py` or
    `__pycache__` is none (a review found a clone's root read as the results folder, 0 files)."""
    return any(entry.is_dir() and "__" in entry.name and not entry.name.startswith(("_", "."))
               for entry in os.scandir(folder))
