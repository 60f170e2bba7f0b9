"""Registries are typed by their contracts: a wrong entry is refused when it registers, in one line naming its
provider; a name is registered once; unknown names get the closest known one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from specrun.core.contracts import AdapterEntry, KindInfo, MetricEntry, NoOptions, ProtocolKind, ReaderEntry
from specrun.core.errors import RegistryError, SpecrunError
from specrun.core.registry import ADAPTERS, FIELD_KINDS, METRICS, PROTOCOLS, READERS


class Half(ProtocolKind[NoOptions]):
    Options = NoOptions
    info = KindInfo(item_fields={"text": "text"}, outputs=("score",), unit="texts")

    def run(self, items, ctx, options):  # type: ignore[no-untyped-def]
        raise NotImplementedError


class OldRun(Half):  # the contract before RunContext: embed and support as arguments
    def run(self, items, embed, options, support=None):  # type: ignore[no-untyped-def]
        raise NotImplementedError


class NoInfo(ProtocolKind[NoOptions]):
    Options = NoOptions

    def run(self, items, ctx, options):  # type: ignore[no-untyped-def]
        raise NotImplementedError


def half(**changes: object) -> Half:
    """A Half whose info differs by `changes`."""
    return type("Changed", (Half,), {"info": replace(Half.info, **changes)})()


@pytest.mark.parametrize("registry, entry, expected", [
    (PROTOCOLS, object(), "is not a specrun.core.contracts.ProtocolKind"),
    (PROTOCOLS, half(item_fields={"text": "sound"}), "unknown field kinds ['sound']"),
    (PROTOCOLS, half(outputs=()), "outputs must be a non-empty tuple"),
    (PROTOCOLS, half(plot=("score", "gold")), "plot must be two of its outputs"),
    (PROTOCOLS, half(split_options=("fit_split",)), "split_options ['fit_split'] are not options of the kind"),
    (PROTOCOLS, OldRun(), "run must take (items, ctx, options)"),
    (PROTOCOLS, NoInfo(), "declares no `info`"),
    (METRICS, lambda x, weights: x, "is not a specrun.core.contracts.MetricEntry"),
    (METRICS, MetricEntry(("x",), np.mean, direction="up"), "direction must be one of"),
    (METRICS, MetricEntry(("x",), np.mean, must_vary=("y",)), "must_vary must be among its inputs"),
    (READERS, ReaderEntry("x", "not callable"), "read must be callable"),  # type: ignore[arg-type]
    (ADAPTERS, AdapterEntry("x", object, dtypes=("float16",)), "dtypes must include float32"),
    (FIELD_KINDS, "text", "is not a converter"),
])
def test_a_wrong_entry_is_one_line_naming_its_provider(registry, entry, expected: str) -> None:
    with pytest.raises(RegistryError) as caught:
        registry.register("toy", entry, provider="plugin toy (toy-dist)")
    assert expected in caught.value.one_line() and "plugin toy (toy-dist)" in caught.value.one_line()
    assert "toy" not in registry


def test_a_name_is_registered_once() -> None:
    assert "text" in FIELD_KINDS and "spearman" in METRICS  # the built-ins loaded, whichever test ran before here
    with pytest.raises(RegistryError, match="'text' from specrun is registered twice"):
        FIELD_KINDS.register("text", lambda value: value)
    with pytest.raises(RegistryError, match="registered twice"):
        METRICS.register("spearman", MetricEntry(("prediction", "gold"), np.mean))
    assert METRICS["spearman"].hub_id == "spearmanr"


def test_unknown_names_get_the_closest_known_one() -> None:
    with pytest.raises(SpecrunError, match=r"unknown protocol kind 'stss' \(did you mean 'sts'\?\)"):
        PROTOCOLS.lookup("stss")
    with pytest.raises(SpecrunError, match=r"unknown metric 'spearmann' \(did you mean 'spearman'\?\)"):
        METRICS.lookup("spearmann")
    with pytest.raises(SpecrunError) as caught:
        READERS.lookup("zzz")
    assert "did you mean" not in str(caught.value) and "tsv" in str(caught.value)


def test_each_adapter_says_what_it_needs() -> None:
    assert ADAPTERS["hashing"].needs_model is False and ADAPTERS["hashing"].dtypes == ("float32",)
    assert ADAPTERS["sentence-transformers"].needs_model and "bfloat16" in ADAPTERS["transformers"].dtypes
