"""A corpus shared by many items: the documents of a BEIR-style set, read once and referenced by every query row,
so Q queries cost Q references, never Q x N texts.

An item's fingerprint, a card cell or a published table shows it as its content digest
(`corpus:<N> documents:sha256:<hex>`, the `fingerprint_value`), never as the whole corpus. `ids` and `texts` are in
file order, which is also the tie order of corpus search."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class SharedCorpus:
    ids: list[str]
    texts: list[str]
    digest: str = field(init=False)
    position: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256()
        for doc_id, text in zip(self.ids, self.texts, strict=True):
            digest.update(json.dumps([doc_id, text], ensure_ascii=False).encode("utf-8"))
            digest.update(b"\n")
        object.__setattr__(self, "digest", f"corpus:{len(self.ids)} documents:sha256:{digest.hexdigest()}")
        object.__setattr__(self, "position", {doc_id: index for index, doc_id in enumerate(self.ids)})

    def fingerprint_value(self) -> str:
        """What an item fingerprint hashes in the corpus' place: its content digest."""
        return self.digest

    def __str__(self) -> str:
        return self.digest

    def __len__(self) -> int:
        return len(self.ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SharedCorpus) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)


def fingerprint_default(value: object) -> str:
    """`json.dumps(default=...)` for item fields: a value with a `fingerprint_value` hook stands for its digest."""
    hook = getattr(value, "fingerprint_value", None)
    if hook is None:
        raise TypeError(f"an item field of type {type(value).__name__} has no fingerprint_value()")
    return hook()
