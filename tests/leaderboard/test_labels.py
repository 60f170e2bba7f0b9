"""Labels of runs: a model name that reads like another configuration's label is quoted, and no two
configurations ever share a label (compare, the leaderboard and its JSON name them by it)."""

from __future__ import annotations

from typing import Any

from specrun.core.settings import EncoderSettings
from specrun.results import IDENTITY_FIELDS, run_labels

FOLLOWING = {"pooling": "mean", "normalize": True, "revision": None, "weights_sha256": "a" * 64, "device": "cpu"}


def identity(name: str, **values: Any) -> tuple[Any, ...]:
    defaults = {**{field: info.default for field, info in EncoderSettings.model_fields.items()}, **FOLLOWING}
    return (name, *({**defaults, **values}[field] for field in IDENTITY_FIELDS))


def test_a_folder_named_like_a_configuration_cannot_pass_for_it() -> None:
    hashing = identity("m", adapter="hashing")
    plain = identity("m", adapter="sentence-transformers")
    impostor = identity("m (adapter hashing)", adapter="sentence-transformers")
    labels = run_labels([hashing, plain, impostor])
    assert labels == ["m (adapter hashing)", "m (adapter sentence-transformers)", '"m (adapter hashing)"']
    assert len(set(labels)) == 3


def test_labels_stay_distinct_whatever_the_names() -> None:
    # names that look alike once printed: a quoted one, a plain one, one with brackets
    first = identity('"m"')
    second = identity("m", weights_sha256="b" * 64)
    third = identity("x [y]")
    labels = run_labels([first, second, third])
    assert len(set(labels)) == 3
    assert labels[2] == '"x [y]"'
