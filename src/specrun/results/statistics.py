"""Descriptive statistics of the items a run read, per split (MTEB's descriptive statistics, computed at run time
rather than shipped): how many items, how many distinct texts, how long the texts are, how the labels fall and how
many documents each query has relevant. Each field is described by the kind its protocol kinds declare for it, so
a new kind's fields are described without an edit here. A corpus is counted, never read: its texts stay on disk."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from specrun.core.types import Item
from specrun.data import SplitData
from specrun.plan import Plan
from specrun.results.model import FieldStatistics, SplitStatistics, Spread

TEXT_KINDS = ("text", "texts")


def spread(values: Iterable[int | float]) -> Spread | None:
    """min, mean and max in one pass (None for no values)."""
    count, total = 0, 0.0
    low: int | float | None = None
    high: int | float | None = None
    for value in values:
        count += 1
        total += value
        low = value if low is None or value < low else low
        high = value if high is None or value > high else high
    if low is None or high is None:
        return None
    return Spread(min=low, mean=total / count, max=high)


def _label_key(label: Any) -> tuple[int, float | int, str]:
    """Labels in order: numbers numerically first, then texts (the order the protocols sort classes in); an
    integer compared as itself (one beyond float's range has no float)."""
    return (0, label, "") if isinstance(label, (int, float)) else (1, 0, str(label))


def field_statistics(kind: str, values: Sequence[Any]) -> FieldStatistics:
    """One field's values over a split's items, described as its kind allows."""
    if kind == "text":
        return FieldStatistics(kind=kind, unique=len(set(values)), length=spread(len(text) for text in values))
    if kind == "texts":
        return FieldStatistics(kind=kind, unique=len({text for texts in values for text in texts}),
                               length=spread(len(text) for texts in values for text in texts),
                               per_item=spread(len(texts) for texts in values))
    if kind in ("number", "numbers"):
        flat = values if kind == "number" else [number for numbers in values for number in numbers]
        return FieldStatistics(kind=kind, values=spread(flat))
    if kind in ("label", "binary", "label_path"):  # a label path counted as its levels joined by ' > '
        counts = Counter(" > ".join(map(str, value)) if isinstance(value, list) else value for value in values)
        ordered = sorted(counts, key=_label_key)
        return FieldStatistics(kind=kind, labels={str(label): counts[label] for label in ordered})
    if kind == "labels":  # one 0/1 per candidate of a query
        return FieldStatistics(kind=kind, per_item=spread(len(labels) for labels in values),
                               relevant=spread(sum(1 for label in labels if label) for labels in values))
    if kind == "judgments":  # qrels: document id -> score; relevant is a score of 1 or more
        return FieldStatistics(kind=kind, per_item=spread(len(qrels) for qrels in values),
                               relevant=spread(sum(1 for score in qrels.values() if score >= 1) for qrels in values))
    if kind == "corpus":  # one corpus shared by every query of the split: counted, never read
        corpora = {id(corpus): corpus for corpus in values}
        return FieldStatistics(kind=kind, documents=sum(len(corpus) for corpus in corpora.values()))
    return FieldStatistics(kind=kind)


def item_statistics(items: Sequence[Item], kinds: Mapping[str, str], evaluated: bool) -> SplitStatistics:
    """A split's statistics from its items, given each field's kind (fields no kind names are left out)."""
    present = [name for name in kinds if items and name in items[0].fields]
    fields = {name: field_statistics(kinds[name], [item.fields[name] for item in items]) for name in present}
    texts: set[str] = set()
    for name in present:
        if kinds[name] == "text":
            texts.update(item.fields[name] for item in items)
        elif kinds[name] == "texts":
            texts.update(text for item in items for text in item.fields[name])
    return SplitStatistics(n=len(items), evaluated=evaluated, unique_texts=len(texts), fields=fields)


def split_statistics(plan: Plan, splits: Mapping[str, SplitData]) -> dict[str, SplitStatistics]:
    """Every split the run read (evaluated, then those fitted on), each field typed by the plan's protocol kinds."""
    kinds: dict[str, str] = {}
    for protocol in plan.protocols:
        for name, kind in protocol.entry.info.item_fields.items():
            kinds.setdefault(name, kind)
    evaluated = {split.name for split in plan.splits}
    return {name: item_statistics(split.items, kinds, name in evaluated) for name, split in splits.items()}
