"""A model that returns NaN or inf for some texts: the run ends in one line naming such a text, exit 2, and the
cache holds no vector of the refused group (issue 20's corpus-retrieval case gave nDCG 0.0 or 0.7311 before)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from specrun.core.contracts import AdapterEntry
from specrun.core.registry import ADAPTERS
from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import HashingAdapter
from specrun.encoders.models import ModelRef
from tests.conftest import assert_one_line_error, files_under, run_cli
from tests.protocols.test_corpus_retrieval import corpus_spec, make_graded_beir


class PoisonedAdapter(HashingAdapter):
    """The hashing adapter, except that texts holding a word of POISON come back as NaN or inf."""

    POISON: ClassVar[dict[str, float]] = {"the": np.nan, "a": np.inf}

    def __init__(self, model: ModelRef | None, settings: EncoderSettings, devices: list[str]) -> None:
        super().__init__(model, settings.with_values(adapter="hashing"), devices)

    def encode_group(self, texts: Sequence[str], batch_size: int, role: str = "symmetric",
                     prompt: str = "") -> np.ndarray:
        vectors = super().encode_group(texts, batch_size, role, prompt)  # type: ignore[arg-type]
        for row, text in enumerate(texts):
            for word, value in self.POISON.items():
                if word in text.lower().split():
                    vectors[row, 3] = value
        return vectors


@pytest.fixture()
def poisoned() -> str:
    ADAPTERS.register("poisoned", AdapterEntry("poisoned", PoisonedAdapter, needs_model=False))
    yield "poisoned"
    ADAPTERS.unregister("poisoned")


def test_non_finite_vectors_are_refused_and_never_cached(poisoned: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data)
    capsys.readouterr()  # what the fingerprint step printed
    cache, out = tmp_path / "cache", tmp_path / "out"
    code, _, err = run_cli([str(spec), "--data-dir", str(data), "--adapter", poisoned, "--cache-dir", str(cache),
                            "--output", str(out), "-q"], capsys)
    line = assert_one_line_error(code, err, contains="non-finite vector(s) (NaN or inf)")
    assert "nothing of the group was cached" in line
    assert not [name for name in files_under(cache) if name.endswith(".shard")]
    assert files_under(out) == []
