"""The licence gate in front of anything that publishes: a spec whose data licence is not confirmed publishes
nothing without an explicit, recorded confirmation, and data a spec may not republish is never uploaded."""

from __future__ import annotations

from dataclasses import dataclass

from specrun.core.errors import PublishError
from specrun.spec import GitSource, Spec


@dataclass(frozen=True)
class Confirmation:
    """An explicit, recorded decision to publish although the spec's licence is not confirmed."""

    reason: str

    @property
    def sentence(self) -> str:
        return f"Publication confirmed by the publisher although the spec marks the licence unconfirmed: {self.reason}"


def licence_refusal(publication: str, licence: str, what: str, confirmation: Confirmation | None) -> str | None:
    """Why publishing under this licence is refused (unconfirmed, and no confirmation with a reason), or None."""
    if publication == "confirmed" or (confirmation is not None and confirmation.reason.strip()):
        return None
    return (f"{what}: data licence {licence} is not confirmed for publication (licence.publication: unconfirmed); "
            "nothing was published. Pass --confirm-licence REASON to publish anyway; the reason is written into the "
            "card")


def licence_gate(publication: str, licence: str, what: str, confirmation: Confirmation | None) -> None:
    """Refuse to publish under an unconfirmed licence unless the user confirmed it, with a reason."""
    refusal = licence_refusal(publication, licence, what, confirmation)
    if refusal is not None:
        raise PublishError(refusal)


def card_keys() -> str:
    """The card's required keys, as a refusal lists them (examples' own keys in brackets)."""
    from specrun.spec.model import Card, Examples

    def required(model: type[Card] | type[Examples]) -> list[str]:
        return [name for name, info in model.model_fields.items() if info.is_required()]

    return ", ".join(f"{key} ({', '.join(required(Examples))})" if key == "examples" else key
                     for key in required(Card))


def card_gate(spec: Spec, what: str) -> None:
    """Publishing needs the card: a spec without one (allowed for local use) is refused, naming what to write."""
    if spec.card is None:
        raise PublishError(f"{what} has no `card`, which publishing needs: add `card:` with {card_keys()}")


def data_withheld(spec: Spec) -> str | None:
    """Why the evaluated items may not be uploaded to the benchmark repo, or None. A source marked `fetch: false`
    (withdrawn, personal or not-to-be-shared data) is never republished, whatever the licence gate says."""
    for split in spec.evaluated_splits:
        name = spec.splits[split].source
        source = spec.sources[name]
        if isinstance(source, GitSource) and not source.fetch:
            return f"source {name} is marked fetch: false (its data is never redistributed)"
    return None
