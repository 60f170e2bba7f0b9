"""A results repository indexed once by its names alone (folders and file names, no file opened), so a board
reads only the files of its task: the full repository holds 104,926 files, a task some hundreds. Then, for each
model with several revisions holding the task, the rule that picks one (`choose`), stated in docs/publishing.md:

1. the files whose `dataset_revision` is the one MTEB's task expects (its metadata, from specrun's catalogue),
   when any has it, else all of them;
2. among those, the newest mteb version (a file without one counts as oldest);
3. on a tie, a named revision before `no_revision_available`, before `external` (which the repository does not
   say the origin of: it is flagged on the row), then the revision names in order.

A folder or file whose name is not a plain path component is set aside with a reason naming it. The index holds
one small record per file (its revision's strings and folder shared, no path of its own): about 10 MB of Python
memory and under a second for a synthetic tree of the repository's size (bench/published_scale.py)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from specrun.mteb.results._older import version_key
from specrun.mteb.results.files import NO_REVISION
from specrun.mteb.results.meta import META_FILE

EXTERNAL = "external"  # a folder in place of a revision; the repository does not say where those came from
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,254}$")
MAX_LISTED = 4


@dataclass(frozen=True, slots=True)
class Candidate:
    """One task file of one model and revision, by name: not read until a board needs its task. Its strings and
    folder are shared by every file of the revision (the task name by the index's key), so the index of the whole
    repository holds one small object per file, not a path of its own."""

    model: str  # org/model
    revision: str
    folder: Path  # the revision's folder
    task: str

    @property
    def path(self) -> Path:
        return self.folder / f"{self.task}.json"


@dataclass(frozen=True, slots=True)
class Kept:
    """What a board keeps of a task file once its value is read (the rule of `choose` and the row's columns need
    no more): memory grows with the task's files, never with what they held."""

    mteb_version: str | None
    dataset_revision: str
    layout: str


@dataclass
class PublishedIndex:
    """Task name -> its files, and (model, revision) -> its model_meta.json; what was set aside, with why."""

    root: Path
    tasks: dict[str, list[Candidate]] = field(default_factory=dict)
    meta: dict[tuple[str, str], Path] = field(default_factory=dict)
    set_aside: list[str] = field(default_factory=list)
    n_files: int = 0

    @classmethod
    def build(cls, root: Path) -> PublishedIndex:
        """One pass over the names below root (models, revisions, files); hidden names are passed over."""
        index = cls(root)
        for model_entry in _folders(root):
            if not _PART.fullmatch(model_entry.name):
                index.set_aside.append(f"{model_entry.name}/: not a plain folder name; not read")
                continue
            model = model_entry.name.replace("__", "/", 1)
            for revision_entry in _folders(Path(model_entry.path)):
                index._add_revision(model, model_entry.name, revision_entry)
        return index

    def _add_revision(self, model: str, folder: str, revision: os.DirEntry[str]) -> None:
        if not _PART.fullmatch(revision.name):
            self.set_aside.append(f"{folder}/{revision.name}/: not a plain folder name; not read")
            return
        here, tasks = Path(revision.path), self.tasks
        with os.scandir(revision.path) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not entry.name.endswith(".json"):
                    continue
                self.n_files += 1
                if entry.name == META_FILE:
                    self.meta[(model, revision.name)] = Path(entry.path)
                elif not _PART.fullmatch(entry.name) or not entry.is_file():
                    self.set_aside.append(f"{folder}/{revision.name}/{entry.name}: not a plain file name or not "
                                          "a file; not read")
                else:
                    task = entry.name[:-5]
                    found = tasks.get(task)
                    if found is None:
                        found = tasks[task] = []
                    else:  # the key's own string: one per task name, however many files hold it
                        task = found[0].task
                    found.append(Candidate(model, revision.name, here, task))

    def shown(self, path: Path) -> str:
        """A file named as the repository names it (model folder/revision/file), never by a local path."""
        return "/".join(path.parts[-3:])


def _folders(folder: Path) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        return sorted((e for e in entries if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)),
                      key=lambda e: e.name)


def _tie_order(revision: str) -> tuple[int, str]:
    return (2 if revision == EXTERNAL else 1 if revision == NO_REVISION else 0, revision)


def choose(files: list[tuple[Candidate, Kept, float]], expected: str | None) -> tuple[int, str]:
    """The index of the file taken among one model's revisions (each with its value) and why, in a phrase."""
    flag = " (external: the repository does not say where it came from)"
    if len(files) == 1:
        only = files[0][0].revision
        return 0, f"its only revision, {only}" + (flag if only == EXTERNAL else "")
    on_expected = [i for i, (_, task_file, _) in enumerate(files) if task_file.dataset_revision == expected]
    pool = on_expected or list(range(len(files)))

    def key(i: int) -> tuple[tuple[int, ...], tuple[int, str]]:  # the smallest is taken
        version = version_key(files[i][1].mteb_version) or (-1, -1, -1)
        return tuple(-part for part in version), _tie_order(files[i][0].revision)

    taken = min(pool, key=key)
    listed = ", ".join(c.revision[:12] for c, _, _ in files[:MAX_LISTED]) + (", ..." if len(files) > MAX_LISTED
                                                                            else "")
    where = (f"on MTEB's dataset revision {expected[:12]}" if on_expected else
             f"none on MTEB's dataset revision {(expected or 'unknown')[:12]}, so of all")
    values = [value for _, _, value in files]
    spread = (f"; their values span {min(values):.4f}..{max(values):.4f}" if max(values) - min(values) > 0 else
              "; all hold the same value")
    version = files[taken][1].mteb_version or "none recorded"
    revision = files[taken][0].revision
    return taken, (f"{revision} of {len(files)} revisions ({listed}): the newest mteb version ({version}) {where}"
                   f"{spread}" + (flag if revision == EXTERNAL else ""))


__all__ = ["EXTERNAL", "Candidate", "Kept", "PublishedIndex", "choose"]
