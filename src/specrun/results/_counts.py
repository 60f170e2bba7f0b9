"""The numbers a reader of a run trusts before it recomputes a score: the bootstrap's size, confidence and seed
within what a spec allows (a file saying 10**12 resamples would hang every reader), and the recorded item counts
against the units, which an edit that turns a --limit smoke run into a full one cannot keep consistent."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from specrun.core.errors import ResultsError
from specrun.core.registry import PROTOCOLS
from specrun.results.model import Results, Unit

Units = dict[Unit, tuple[list[str], dict[str, np.ndarray]]]  # as verify reads them


def check_uncertainty(results: Results, path: Path) -> None:
    u = results.provenance.uncertainty
    if not 0 < u.resamples <= 100_000:  # the spec's own bound
        raise ResultsError(f"resamples must lie in 1..100000 (the spec's bound), got {u.resamples}", file=str(path),
                           key="provenance.uncertainty.resamples")
    if not 0 <= u.seed <= 2**63 - 1:  # the spec's bound
        raise ResultsError(f"seed must lie in 0..2**63-1, got {u.seed}", file=str(path),
                           key="provenance.uncertainty.seed")
    if not (math.isfinite(u.confidence) and 0 < u.confidence < 1):
        raise ResultsError(f"confidence must lie strictly between 0 and 1, got {u.confidence!r}", file=str(path),
                           key="provenance.uncertainty.confidence")


def _count(selection: str) -> int:
    """A recorded selection that is no count ('all' aside) is an edit: -1 matches no split."""
    return int(selection) if selection.isdigit() else -1


def check_unit_counts(results: Results, units: Units, path: Path) -> None:
    """The items a run records against its units: a split read whole has every item selected (a --limit run
    with its limit edited out keeps its few), and a kind whose every item is a unit has one per item selected."""
    p = results.provenance
    for split, data in p.data.items():
        key = f"provenance.data.{split}"
        whole = data.n_source if data.selection == "all" else min(_count(data.selection), data.n_source)
        if not 0 <= data.n_selected <= data.n_source or (p.limit is None and data.n_selected != whole):
            raise ResultsError(f"{data.n_selected} items selected of {data.n_source} read with selection "
                               f"{data.selection!r}; refusing edited results", file=str(path), key=key)
    kinds = {info.protocol: info.protocol_kind for info in results.metrics.values()}
    for (split, protocol), (ids, _arrays) in units.items():
        data = p.data.get(split)
        kind = PROTOCOLS.get(kinds.get(protocol, ""))
        if data is not None and kind is not None and kind.info.every_item_a_unit and len(ids) != data.n_selected:
            raise ResultsError(f"split {split}, protocol {protocol}: {len(ids)} units where each of the "
                               f"{data.n_selected} items selected is one; refusing edited results", file=str(path))


__all__ = ["check_uncertainty", "check_unit_counts"]
