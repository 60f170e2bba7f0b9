"""What a run is called: its identity (the model and every setting that can change its vectors, from
EncoderSettings' metadata), the labels that tell runs apart, and the interval's level as written."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from specrun.core.errors import PublishError, printable
from specrun.core.registry import ADAPTERS
from specrun.core.settings import EncoderSettings
from specrun.results.model import Results


def confidence_percent(confidence: float) -> str:
    """The interval's level as written, e.g. '95%' or '99.99999999%': rounding would misstate it ('100%')."""
    text = format(Decimal(repr(float(confidence))).scaleb(2).normalize(), "f")
    return f"{text}%"


# what can tell two runs of one model name apart: the user's settings first, then what follows from the model
IDENTITY_FIELDS = (*EncoderSettings.identity_fields(), "pooling", "normalize", "revision", "weights_sha256",
                   "device")  # not the applied prompts: they name the spec's task types, so differ between specs
SHOWN_WHEN_DIFFERENT = len(EncoderSettings.identity_fields())  # the user's own settings: named whenever they differ


def run_identity(results: Results) -> tuple[Any, ...]:
    m = results.provenance.model
    return (m.name, *(getattr(m, field) for field in IDENTITY_FIELDS))


def away_from_plain(field: str, value: Any) -> bool:
    """Whether a user's setting, as a run recorded it, makes the run something other than the model as it is
    (what MTEB's files and a model card mean by the model's score): an adapter that reads no model (hashing), a
    prompt of the user's, the model's prompts turned off, another dtype, truncation, quantisation, a reranker.
    Batch size is numerics, not configuration; a max length is judged against the model's own (configuration)."""
    if field == "adapter":
        return not (value == "auto" or (isinstance(value, str) and value in ADAPTERS and ADAPTERS[value].needs_model))
    if field in ("prompt", "prompt_name", "query_prompt", "document_prompt", "instruction_template",
                 "truncate_dim", "reranker"):
        return value is not None
    if field == "model_prompts":
        return value is False
    if field in ("dtype", "precision"):
        return value != "float32"
    return False


def configuration(results: Results) -> list[str]:
    """What this run changed about the model, each setting as a label names it; empty for the model as it is.
    What writes a run as the model's own score (MTEB's files, a hub model-index) refuses a run with any."""
    m = results.provenance.model
    parts = [describe_setting(field, getattr(m, field)) for field in EncoderSettings.identity_fields()
             if away_from_plain(field, getattr(m, field))]
    own = results.provenance.model_meta.max_tokens if results.provenance.model_meta is not None else None
    if m.max_length is not None and own is not None and m.max_length != own:
        parts.append(describe_setting("max_length", m.max_length) + f" (the model's own: {own})")
    return parts


def configured_note(changed: list[str], label: str = "Ours") -> str | None:
    """Said beside published values (check-published, compare --published, a suite's published section) for a
    run that is not the model as it is: those values are the model's own, so the difference is no check."""
    if not changed:
        return None
    return (f"{label} is not the model as it is ({', '.join(changed)}); the published values are the model's own: "
            "the difference is the configuration's, not a check of the run")


def refuse_configured(results: Results, path: str | os.PathLike[str], what: str, where: str) -> None:
    """Files that name a model and hold a score (MTEB's result files, a hub model-index) would credit the model
    as it is with a run of another configuration (the hashing adapter, a prompt, truncation, a reranker): refused,
    naming what differs."""
    changed = configuration(results)
    if changed:
        raise PublishError(f"{what}: this run is not {results.provenance.model.name} as it is ({', '.join(changed)}), "
                           f"and {where} would name the model alone; only a run of the model as it is goes there",
                           file=str(path))


def describe_setting(field: str, value: Any) -> str:
    if field in ("prompt", "prompt_name", "query_prompt", "document_prompt", "instruction_template"):
        name = field.replace("_", " ")
        return f"{name} {json.dumps(value, ensure_ascii=False)}" if value else f"no {name}"
    if field == "model_prompts":
        return "model prompts" if value else "no model prompts"
    if field in ("weights_sha256", "revision"):
        return f"{field.split('_')[0]} {str(value)[:10]}"
    return f"{field.replace('_', ' ')} {value}" if value is not None else f"no {field.replace('_', ' ')}"


def run_labels(identities: Sequence[tuple[Any, ...]]) -> list[str]:
    """What `compare` and `leaderboard` call each run: the model name, plus every setting of the user's that makes
    it other than the model as it is (away_from_plain: never a hashing run under the model's bare name), and,
    when a name has several configurations, every field (in IDENTITY_FIELDS order: adapter, prompt, max length,
    pooling, ...) on which they differ: a label that hid a truncation behind the adapter would credit the adapter
    with what the truncation did."""
    chosen: dict[str, list[int]] = {}
    for name in dict.fromkeys(ident[0] for ident in identities):
        group = list(dict.fromkeys(ident for ident in identities if ident[0] == name))
        # what a user set (adapter, prompt, max length) is shown whenever it differs; what follows from it
        # (pooling, normalisation, ...) only when still needed to tell runs apart
        fields = [i for i in range(1, SHOWN_WHEN_DIFFERENT + 1) if len({g[i] for g in group}) > 1
                  or any(away_from_plain(IDENTITY_FIELDS[i - 1], g[i]) for g in group)]
        for i in range(SHOWN_WHEN_DIFFERENT + 1, len(IDENTITY_FIELDS) + 1):
            if len({tuple(g[f] for f in fields) for g in group}) == len(group):
                break
            if len({g[i] for g in group}) > 1:
                fields.append(i)
        chosen[name] = fields
    out = []
    for ident in identities:
        parts = [describe_setting(IDENTITY_FIELDS[i - 1], ident[i]) for i in chosen[ident[0]]]
        out.append(printable(shown_name(ident[0]) + (f" ({', '.join(parts)})" if parts else "")))
    # a name that reads like another configuration's label is quoted above; any label still shared by two
    # configurations is told apart by the weights digest and, failing that, a number
    for label in {label for label in out if out.count(label) > 1}:
        rows = [i for i, other in enumerate(out) if other == label]
        digests = {identities[i][IDENTITY_FIELDS.index("weights_sha256") + 1] for i in rows}
        for number, i in enumerate(rows, start=1):
            ident = identities[i]
            out[i] = f"{label} [weights {str(ident[IDENTITY_FIELDS.index('weights_sha256') + 1])[:10]}]" \
                if len(digests) == len(rows) else f"{label} [#{number}]"
    return out


def shown_name(name: str) -> str:
    """A model's name as a label shows it: quoted when it holds what a label's settings part looks like
    (parentheses, brackets) or starts or ends with white space, so no folder name passes for a setting."""
    if any(ch in name for ch in "()[]") or name != name.strip():
        return json.dumps(name, ensure_ascii=False)
    return name
