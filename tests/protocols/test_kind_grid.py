"""Every registered protocol kind runs its own tiny example (`ProtocolKind.example`) through the evaluation's
parts with the hashing adapter, without the CLI: options typed, items validated, only the declared texts embedded,
outputs aligned, and every metric it feeds estimated with an interval. A new kind is tested by being registered."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specrun.core.contracts import KindExample, KindInfo, NoOptions, ProtocolKind, RunContext, announced_embed
from specrun.core.errors import SpecrunError
from specrun.core.registry import METRICS, PROTOCOLS
from specrun.core.settings import EncoderSettings
from specrun.core.types import Item, Outputs
from specrun.encoders.adapters import HashingAdapter
from specrun.metrics import estimate


def hashing_embed(asked: list[tuple[str, str]]):
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])  # type: ignore[arg-type]

    def embed(texts: Sequence[str], text_field: str) -> np.ndarray:
        asked.extend((text_field, text) for text in texts)
        return adapter.encode_group(list(texts), 32)

    return embed


def run_example(kind: str) -> tuple[Outputs, dict[str, object]]:
    protocol = PROTOCOLS[kind]
    example = protocol.example()
    assert isinstance(example, KindExample), f"{kind}: declare a tiny example() for the per-kind grid"
    options = protocol.Options.model_validate(dict(example.options))
    items = list(example.items)
    for item in items:
        assert set(protocol.info.item_fields) <= set(item.fields), f"{kind}: example item {item.id} lacks fields"
    support = dict(example.support)
    assert set(support) == set(protocol.support_splits(options)), f"{kind}: the example's support splits"
    protocol.validate_items(items, options, "example", support)
    declared = set(protocol.texts(items, options, support))
    declared |= {(text_field, text) for text_field, corpus in protocol.corpora(items, options)
                 for text in corpus.texts()}
    asked: list[tuple[str, str]] = []
    embed = announced_embed(kind, protocol, items, options, support, hashing_embed(asked))  # as evaluation does
    outputs = protocol.run(items, RunContext(embed, support), options)
    assert set(asked) <= declared, f"{kind}: run embedded (field, text) pairs that texts() did not declare"
    assert {text_field for text_field, _ in declared} <= set(protocol.info.text_fields), \
        f"{kind}: texts() names a field that is not one of its text fields"
    assert outputs.unit == protocol.info.unit
    assert set(outputs.arrays) == set(protocol.info.outputs)
    assert len(set(outputs.ids)) == len(outputs.ids)
    for name, values in outputs.arrays.items():
        assert values.shape[:1] == (len(outputs.ids),) and values.ndim in (1, 2), \
            f"{kind}: {name} is not one value (or one per run) per unit"
        assert np.all(np.isfinite(values)), f"{kind}: {name} has non-finite values"
    fed = example.metrics or tuple(name for name, metric in METRICS.items()
                                   if set(metric.inputs) <= set(protocol.info.outputs))
    assert fed, f"{kind}: no registered metric reads its outputs"
    scores = {name: estimate(name, outputs.arrays, resamples=50, confidence=0.9, seed=7) for name in fed}
    return outputs, scores


@pytest.mark.parametrize("kind", sorted(PROTOCOLS))
def test_every_kind_runs_its_example(kind: str) -> None:
    outputs, scores = run_example(kind)
    for name, score in scores.items():
        assert score.ci_low <= score.value <= score.ci_high, (kind, name, score)
    again, _ = run_example(kind)  # deterministic: the same vectors give the same outputs
    for name in outputs.arrays:
        np.testing.assert_array_equal(outputs.arrays[name], again.arrays[name])


def test_a_kind_registered_from_a_test_is_in_the_grid() -> None:
    """Registering a kind is all it takes for the grid to run it (nothing else is edited)."""

    class Lengths(ProtocolKind[NoOptions]):
        Options = NoOptions
        info = KindInfo(item_fields={"text": "text", "target": "number"}, outputs=("prediction", "gold"),
                        unit="texts")

        def run(self, items: Sequence[Item], ctx: RunContext, options: NoOptions) -> Outputs:
            vectors = ctx.embed([item.fields["text"] for item in items], "text")
            return Outputs(unit=self.info.unit, ids=[item.id for item in items], arrays={
                "prediction": vectors[:, 0].astype(np.float64),
                "gold": np.array([item.fields["target"] for item in items])})

        def example(self) -> KindExample:
            texts = ["a", "a cat", "the black cat", "a dog in the park", "one two three four five"]
            return KindExample(items=[Item(id=f"t{i}", fields={"text": t, "target": float(len(t))})
                                      for i, t in enumerate(texts)], metrics=("spearman",))

    PROTOCOLS.register("toy_lengths", Lengths())
    try:
        assert "toy_lengths" in sorted(PROTOCOLS)
        _, scores = run_example("toy_lengths")
        assert set(scores) == {"spearman"}
    finally:
        PROTOCOLS.unregister("toy_lengths")


BAD_VALUES = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "zero": 0.0}


@pytest.mark.parametrize("kind", sorted(PROTOCOLS))
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_every_kind_refuses_non_finite_and_zero_vectors(kind: str, data: st.DataObject) -> None:
    """One text's vector made NaN, inf or zero (everywhere or in one dimension) ends the kind's run in one
    SpecrunError line, never a number: whichever text and kind."""
    protocol = PROTOCOLS[kind]
    example = protocol.example()
    options = protocol.Options.model_validate(dict(example.options))
    asked: list[tuple[str, str]] = []
    support = dict(example.support)
    protocol.run(list(example.items), RunContext(hashing_embed(asked), support), options)
    poisoned = data.draw(st.sampled_from(sorted({text for _, text in asked})), label="text")
    bad = data.draw(st.sampled_from(sorted(BAD_VALUES)), label="value")
    whole = data.draw(st.booleans(), label="whole vector") or bad == "zero"
    clean = hashing_embed([])

    def embed(texts: Sequence[str], text_field: str) -> np.ndarray:
        vectors = clean(texts, text_field).copy()
        for row, text in enumerate(texts):
            if text == poisoned:
                if whole:
                    vectors[row] = BAD_VALUES[bad]
                else:
                    vectors[row, 0] = BAD_VALUES[bad]
        return vectors

    with pytest.raises(SpecrunError) as caught:
        protocol.run(list(example.items), RunContext(embed, support), options)
    assert "embedding" in caught.value.one_line() and "\n" not in caught.value.one_line()


@pytest.mark.parametrize("kind", sorted(PROTOCOLS))
def test_every_kind_refuses_one_vector_for_every_text(kind: str) -> None:
    """A model that maps every text to one vector predicts a constant: each kind refuses it, in its run or in
    every metric's estimate (NaN is an error), never a number made of tie-breaking (a bad-input hunt found
    classification, bitext mining, corpus retrieval, clustering, regression, conditional STS and pair AP scoring
    it: accuracy 0.33, nDCG@10 0.54, V-measure 0, AP the positive rate)."""
    protocol = PROTOCOLS[kind]
    example = protocol.example()
    options = protocol.Options.model_validate(dict(example.options))
    items, support = list(example.items), dict(example.support)

    def one_vector(texts: Sequence[str], _field: str) -> np.ndarray:
        return np.tile(np.array([1.0, 0.5, 0.0, 0.25], dtype=np.float32), (len(texts), 1))

    try:
        embed = announced_embed(kind, protocol, items, options, support, one_vector)
        outputs = protocol.run(items, RunContext(embed, support), options)
    except SpecrunError as refused:
        assert "same" in refused.one_line() or "constant" in refused.one_line(), refused.one_line()
        return
    fed = example.metrics or tuple(name for name, metric in METRICS.items()
                                   if set(metric.inputs) <= set(protocol.info.outputs))
    for name in fed:
        with pytest.raises(SpecrunError):
            estimate(name, outputs.arrays, resamples=50, confidence=0.9, seed=7)
