"""A split's `expect` from MTEB's descriptive statistics (the catalogue's `stats`): what an imported spec's run
compares its own statistics with (results.identity), so a local copy that is not MTEB's data shows up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def expected_split(stats: Mapping[str, Any] | None, fields: Mapping[str, str], *, label_field: str | None = None,
                   source: str) -> dict[str, Any] | None:
    """`expect` for one split: `fields` maps our item field to MTEB's statistics block (`text1` ->
    `text1_statistics`); `label_field`, if any, gets the label counts of `label_statistics`. None where MTEB
    states nothing for the split (a task without statistics, a subset's own numbers)."""
    if not stats or "num_samples" not in stats:
        return None
    out: dict[str, Any] = {"source": source, "n": int(stats["num_samples"])}
    expected: dict[str, dict[str, Any]] = {}
    for field, block in fields.items():
        found = stats.get(block) or {}
        entry = {key: int(found[theirs]) for key, theirs in (("unique", "unique_texts"),
                                                             ("characters", "total_text_length"))
                 if isinstance(found.get(theirs), int)}
        if entry:
            expected[field] = entry
    # MTEB names the block label_statistics, and labels_statistics for PairClassification
    labels = (stats.get("label_statistics") or stats.get("labels_statistics") or {}).get("labels")
    if label_field is not None and isinstance(labels, dict) and labels:
        counts = [int(v["count"]) for v in labels.values() if isinstance(v, dict) and "count" in v]
        if len(counts) == len(labels) and sum(counts) == out["n"]:  # one label an item (not a label path's levels)
            expected[label_field] = {"label_counts": sorted(counts, reverse=True)}
    if expected:
        out["fields"] = expected
    return out


__all__ = ["expected_split"]
