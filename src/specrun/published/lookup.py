"""Published values found for a run: the model's folder by its name (`org__model`), the revision folder by the
run's model revision, the task file by the metric's `mteb` counterpart. A value that is not there is a reason
(one line for the reader), never an error of the whole command: a results repository holds what it holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from specrun.core.errors import PublishedError
from specrun.published.files import (
    NO_REVISION,
    PublishedValue,
    TaskFile,
    checked_part,
    model_folder_name,
    read_task_file,
    score_of,
)
from specrun.spec.mteb_ref import MtebRef

MAX_REVISIONS_LISTED = 5


@dataclass(frozen=True)
class Found:
    """A published value, or why there is none; `note` says when the revision was chosen for a run without one."""

    value: PublishedValue | None
    reason: str | None = None
    note: str | None = None


@dataclass
class PublishedDir:
    """One folder in the results repository's layout, each task file read (and validated) once."""

    root: Path
    _files: dict[Path, TaskFile] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.root.is_dir():
            raise PublishedError("--published must be a folder in MTEB's results layout "
                                 "(<org>__<model>/<revision>/<TaskName>.json)", file=str(self.root))

    def task_file(self, path: Path) -> TaskFile:
        if path not in self._files:
            self._files[path] = read_task_file(path)
        return self._files[path]

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

    def find(self, model: str, revision: str | None, ref: MtebRef) -> Found:
        """The published value of `ref` for this model and revision, or why there is none."""
        folder, reason, note = self.revision_folder(model, revision)
        if folder is None:
            return Found(None, reason)
        path = folder / f"{checked_part(ref.task, 'MTEB task')}.json"
        if not path.is_file():
            return Found(None, f"no {ref.task}.json in {folder.relative_to(self.root).as_posix()}/", note)
        return self._value(path, model, folder.name, ref, note)

    def _value(self, path: Path, model: str, revision: str, ref: MtebRef, note: str | None) -> Found:
        task_file = self.task_file(path)
        if task_file.task_name != ref.task:
            raise PublishedError(f"task_name {task_file.task_name!r} is not {ref.task!r}, the file's name",
                                 file=str(path), key="task_name")
        value = score_of(task_file, path, ref.split, ref.subset, ref.score)
        if isinstance(value, str):
            return Found(None, value, note)
        return Found(PublishedValue(model=model, revision=revision, task=ref.task, split=ref.split,
                                    subset=ref.subset, score=ref.score, value=value,
                                    mteb_version=task_file.mteb_version, file=path), None, note)

    def every_model(self, ref: MtebRef) -> list[PublishedValue]:
        """Every model and revision of the folder with a value for `ref` (for published rows beside ours), by
        model then revision; files without that value are passed over."""
        task = checked_part(ref.task, "MTEB task")
        found = []
        for path in sorted(self.root.glob(f"*/*/{task}.json")):
            if path.parent.name.startswith(".") or path.parent.parent.name.startswith("."):
                continue
            model = path.parent.parent.name.replace("__", "/", 1)
            result = self._value(path, model, path.parent.name, ref, None)
            if result.value is not None:
                found.append(result.value)
        return found


__all__ = ["Found", "PublishedDir"]
