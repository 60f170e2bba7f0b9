"""A run checked against its data, not only against itself: read-back verification (verify.py) proves a result
set consistent (its scores recomputed from its predictions, the predictions' sha256, the spec by sha256), but a
set whose predictions, pin and scores were all forged to agree passes it. Re-reading the pinned data proves the
units are the split's items and the gold values in the predictions are the data's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specrun.core.errors import ResultsError
from specrun.core.workspace import Workspace
from specrun.data import load_split
from specrun.plan import make_plan
from specrun.results.verify import Verified
from specrun.spec import LoadedSpec


@dataclass(frozen=True)
class Rederived:
    items: int  # items of the evaluated splits re-read
    units: int  # units whose ids were found among them
    gold: int  # gold values compared with the data's


def rederive(verified: Verified, loaded: LoadedSpec, data_dir: Path | None,
             workspace: Workspace | None = None) -> Rederived:
    """Every evaluated split read again from the data (its sha256 pins and fingerprint checked by the data
    stage); each protocol's unit ids must be items of the split, in its order, none twice, and each output a
    kind declares a copy of an item field (`KindInfo.gold`) must equal that field."""
    results, path = verified.results, verified.path
    plan = make_plan(loaded)
    limit = results.provenance.limit
    items_read = units_found = gold_checked = 0
    for split in results.scores:
        items = load_split(plan, split, data_dir, workspace=workspace).items
        items = items[:limit] if limit else items
        items_read += len(items)
        position = {item.id: index for index, item in enumerate(items)}
        for protocol in plan.protocols:
            ids, arrays = verified.units[(split, protocol.name)]
            where = [position.get(unit) for unit in ids]
            if None in where or len(set(where)) != len(where) or where != sorted(where):  # type: ignore[type-var]
                bad = next((unit for unit, at in zip(ids, where, strict=True) if at is None), ids[0])
                raise ResultsError(f"split {split}, protocol {protocol.name}: the units are not the data's items "
                                   f"(first unexpected: {bad!r}); the predictions do not come from this data",
                                   file=str(path))
            units_found += len(ids)
            for output, item_field in protocol.entry.info.gold.items():
                expected = np.array([float(items[at].fields[item_field]) for at in where])  # type: ignore[index]
                found = np.asarray(arrays[output], dtype=np.float64)
                if found.shape != expected.shape or not np.array_equal(found, expected):
                    first = int(np.argmax(found != expected)) if found.shape == expected.shape else 0
                    raise ResultsError(f"split {split}, protocol {protocol.name}: {output} of unit {ids[first]!r} "
                                       f"is not the data's {item_field}; the predictions do not come from this "
                                       "data", file=str(path))
                gold_checked += len(ids)
    return Rederived(items=items_read, units=units_found, gold=gold_checked)
