"""A suite's members beside their published MTEB values (`specrun suites/NAME.yaml --published DIR`): each
member's counterpart is its spec metric's `mteb` key (inherited, never restated in the suite). Published values
are shown, never resampled: they have no interval, and the aggregates' intervals never see them. The published
Mean (task) is given only when every member has a published value."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from specrun.core.markdown import md_text
from specrun.mteb.results import Found, PublishedDir
from specrun.mteb.results.markdown import PublishedCell, published_table
from specrun.results import configured_note
from specrun.spec.model import Spec
from specrun.suites.model import LoadedSuite
from specrun.suites.results import SuiteResults


@dataclass(frozen=True)
class MemberPublished:
    index: int
    label: str
    found: Found | None  # None: the member's spec metric names no MTEB counterpart on its split


def members_published(loaded: LoadedSuite, published: PublishedDir, model: str,
                      revision: str | None) -> list[MemberPublished]:
    """Each member's published value for this model and revision, or why there is none."""
    out = []
    for m in loaded.members:
        cells = [(c.spec.spec, c.metric, c.split) for c in m.cells] or [(m.loaded.spec, m.metric, m.split)]
        found = [_find(published, model, revision, spec, metric, split) for spec, metric, split in cells]
        out.append(MemberPublished(index=m.index, label=m.label, found=found[0] if not m.cells else _mean(found)))
    return out


def _find(published: PublishedDir, model: str, revision: str | None, spec: Spec, metric: str,
          split: str) -> Found | None:
    ref = spec.mteb_ref(metric, split)
    return published.find(model, revision, ref, spec.metrics[metric].range) if ref is not None else None


def _mean(found: list[Found | None]) -> Found | None:
    """A member over several cells: the mean of their published values (MTEB's task score over its subsets and
    splits), when every cell has one; else why not (the first cell without)."""
    if any(f is None for f in found):
        return None
    values = [f.value for f in found if f is not None and f.value is not None]
    if len(values) < len(found):
        return next(f for f in found if f is not None and f.value is None)
    mean = math.fsum(v.value for v in values) / len(values)
    notes = "; ".join(dict.fromkeys(f.note for f in found if f is not None and f.note))
    return Found(value=replace(values[0], subset=", ".join(dict.fromkeys(v.subset for v in values)),
                               split=", ".join(dict.fromkeys(v.split for v in values)), value=mean),
                 note=notes or None)


def published_mean(rows: list[MemberPublished]) -> float | None:
    """The plain mean of the members' published values, when every member has one."""
    values = [r.found.value.value for r in rows if r.found is not None and r.found.value is not None]
    return math.fsum(values) / len(values) if values and len(values) == len(rows) else None


def published_markdown(results: SuiteResults, rows: list[MemberPublished], changed: list[str] | None = None,
                       other_data: list[str] | None = None) -> str:
    """suite.md's published section: ours, published, the difference per member; then the published mean.
    `changed`: what our run changed about the model (results.configuration), said first: the published files
    describe the model as it is."""
    ours = {m.index: m.value for m in results.members}
    lines = ["", "## Published (MTEB result files)", ""]
    note = configured_note(changed or [])
    lines += [md_text(note) + ".", ""] if note else []
    lines += [*(f"Not the reference's data: {md_text(line)}." for line in other_data or []), ""] if other_data else []
    lines += ["Shown beside, never resampled: a published value has no interval, and the aggregates' intervals do "
              "not use it.", ""]
    table = published_table(("member",), [PublishedCell(keys=(r.label,), ours=ours.get(r.index), found=r.found,
                                                        label=r.label) for r in rows])
    rule = table.index("") if "" in table else len(table)  # the mean goes between the table and its notes
    mean = published_mean(rows)
    have = sum(1 for r in rows if r.found is not None and r.found.value is not None)
    mean_line = (f"Mean (task), published: {mean:.4f}." if mean is not None else
                 f"Mean (task), published: not computed ({have} of {len(rows)} members published).")
    lines += [*table[:rule], "", mean_line, *table[rule + 1:]]
    return "\n".join(lines) + "\n"


__all__ = ["MemberPublished", "members_published", "published_markdown", "published_mean"]
