"""What `specrun list` filters by: a spec's languages and domains (its metadata) and its task types, which come
from its protocols' kinds."""

from __future__ import annotations

from specrun.core import registry
from specrun.spec.metadata import Metadata
from specrun.spec.model import Spec


def matches(spec: Spec, language: str | None = None, task_type: str | None = None,
            domain: str | None = None) -> bool:
    """Whether a spec passes `specrun list`'s filters, each one case-insensitive and all of them together: a
    language as an ISO 639-3 code (jpn), with its script (jpn-Jpan), or as the `language` key writes it (ja); a task
    type as MTEB names it (sts, retrieval) or a protocol kind (corpus_retrieval); a domain of MTEB's vocabulary."""
    meta = spec.metadata or Metadata()
    if language is not None:
        known = {*(meta.languages or []), *meta.language_codes, *(spec.language or [])}
        if language.lower() not in {code.lower() for code in known}:
            return False
    if task_type is not None:
        known = {*task_types(spec), *(p.kind for p in spec.protocols.values())}
        if task_type.lower() not in {name.lower() for name in known}:
            return False
    return domain is None or domain.lower() in {name.lower() for name in meta.domains or []}


def task_types(spec: Spec) -> list[str]:
    """MTEB's task type of each protocol, from its kind (KindInfo.prompt_task; the kind's name where it has none),
    without repeats: a spec states no task type of its own."""
    kinds = (p.kind for p in spec.protocols.values())
    return list(dict.fromkeys(
        (registry.PROTOCOLS[kind].info.prompt_task or kind) if kind in registry.PROTOCOLS else kind
        for kind in kinds))
