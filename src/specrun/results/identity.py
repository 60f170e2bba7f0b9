"""A split's statistics against what its spec expects (`splits.NAME.expect`: MTEB's descriptive statistics for
an imported task): each difference as one sentence, which the run prints on stderr and the report states. A copy
of a dataset that is not the reference's (another revision, re-cased or re-spaced text, a filtered file) shows up
here, where no score could show it."""

from __future__ import annotations

from specrun.results.model import FieldStatistics, Results, SplitStatistics
from specrun.spec.model import Expected, Spec


def differences(expected: Expected, found: SplitStatistics) -> list[str]:
    """What differs, as 'NAME: ours X, expected Y' phrases; empty when everything stated agrees."""
    out = []
    if expected.n is not None and expected.n != found.n:
        out.append(f"items: {found.n}, expected {expected.n}")
    for name, want in expected.fields.items():
        have = found.fields.get(name)
        if have is None:
            out.append(f"{name}: no such field in the items, expected one")
            continue
        out += [f"{name} {what}: {ours}, expected {theirs}" for what, ours, theirs in _field_pairs(want, have, found.n)
                if ours != theirs]
    return out


def _field_pairs(want: object, have: FieldStatistics, n: int) -> list[tuple[str, object, object]]:
    pairs: list[tuple[str, object, object]] = []
    unique, characters, labels = (getattr(want, key) for key in ("unique", "characters", "label_counts"))
    if unique is not None:
        pairs.append(("distinct texts", have.unique, unique))
    if characters is not None:  # the mean times the count gives the total back exactly at these sizes
        texts = n if have.per_item is None else have.per_item.mean * n  # a field of several texts per item
        total = None if have.length is None else round(have.length.mean * texts)
        pairs.append(("characters", total, characters))
    if labels is not None:
        counts = None if have.labels is None else sorted(have.labels.values(), reverse=True)
        pairs.append(("items per label", counts, sorted(labels, reverse=True)))
    return pairs


def identity_notes(spec: Spec, results: Results) -> list[str]:
    """One sentence per evaluated split whose statistics differ from the spec's `expect`."""
    notes = []
    for split, statistics in (results.statistics or {}).items():
        declared = spec.splits.get(split)
        expected = declared.expect if declared is not None else None
        if expected is None:
            continue
        found = differences(expected, statistics)
        if found:
            notes.append(f"split {split} differs from {expected.source}: {'; '.join(found)}")
    return notes


__all__ = ["differences", "identity_notes"]
