"""Whether a published number measures what our run measures: each reason it may not is a flag on its row, never
a silent drop, and `--published-only comparable` leaves flagged rows out of the ranking (still listed). The flags:

- `dataset_revision`: the file's `dataset_revision` is not the one MTEB's task reads (its metadata's
  `dataset.revision`, from specrun's catalogue), or the file records none (the layout before 1.11);
- `mteb_version`: the task type is one whose numbers changed at an mteb major version (`VERSION_SENSITIVE`) and the
  file was written before it, or records no version. Today: Clustering, whose published numbers from mteb 1.x
  used an unseeded k-means over 1.x's procedure; 2.x's (which specrun's import follows) gives other numbers;
- `external`: the row comes from an `external/` folder, which the repository does not say the origin of."""

from __future__ import annotations

from dataclasses import dataclass

from specrun.mteb.results._index import EXTERNAL
from specrun.mteb.results._older import version_key
from specrun.mteb.results.files import PublishedValue

FLAGS = ("dataset_revision", "mteb_version", "external")
# MTEB task type -> the first mteb major version whose numbers the type's imported specs equal (docs/mteb.md)
VERSION_SENSITIVE = {"Clustering": 2}


@dataclass(frozen=True)
class Flag:
    code: str  # one of FLAGS
    reason: str  # a phrase for the reader


def flags_of(value: PublishedValue, task_type: str | None) -> list[Flag]:
    """Every reason this published value may not be comparable with our run of the task (module docstring)."""
    from specrun.mteb.task_facts import task_facts

    out = []
    facts = task_facts(value.task)
    expected = None if facts is None else facts.dataset_revision
    if expected is None:
        out.append(Flag("dataset_revision", f"the dataset revision MTEB's {value.task} reads is unknown here"))
    elif value.dataset_revision != expected:
        recorded = value.dataset_revision or "none"
        said = "records no dataset revision" if not value.dataset_revision or " " in recorded else \
            f"dataset revision {recorded[:12]}"
        out.append(Flag("dataset_revision", f"{said}, not the task's {expected[:12]}"))
    first = VERSION_SENSITIVE.get(task_type or "")
    if first is not None:
        version = version_key(value.mteb_version)
        if version is None or version[0] < first:
            out.append(Flag("mteb_version", f"{task_type} numbers of mteb < {first} differ from {first}.x "
                                            f"(written by {value.mteb_version or 'an unrecorded mteb version'})"))
    if value.revision == EXTERNAL:
        out.append(Flag("external", "from an external/ folder: the repository does not say where it came from"))
    return out


__all__ = ["FLAGS", "VERSION_SENSITIVE", "Flag", "flags_of"]
