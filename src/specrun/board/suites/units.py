"""Which items a suite member's resampled units are: members whose units are the same items share their draws
(`board.joint.joint_draws`), so that an aggregate over two metrics of the same pairs carries their
correlation into its interval."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from specrun.results.model import Results


def units_key(results: Results, split: str, ids: Sequence[str]) -> str:
    """sha256 of the split's source data and the ordered ids of the evaluated units. The data is named by the
    sha256 of every file it was read from, where results.json records them, so that two specs reading the same
    file (one pair set scored for relatedness by one spec and for entailment by another) match: the split's
    fingerprint covers each item's mapped fields too (a relatedness score there, an entailment label here), so it
    tells two specs of the same pairs apart. A split read without recorded files (a hub dataset at its commit) is
    named by its fingerprint: only members of one spec share. The same id in the same files is the same item;
    units merely overlapping, or the same items in another order, give another key and stay independent."""
    data = results.provenance.data.get(split)
    source: object = (sorted(data.files.items()) if data.files else data.fingerprint) if data is not None else [
        results.provenance.spec_sha256, split]
    text = json.dumps([source, list(ids)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
