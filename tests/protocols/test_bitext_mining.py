"""Bitext mining against a brute-force loop and MTEB's scoring (scikit-learn over lines as labels), and the
line-aligned reader's edge cases."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn import metrics as sk

from specrun.core.contracts import NoOptions, ReadLayout, RunContext
from specrun.core.errors import DataError, SpecError
from specrun.core.plain_yaml import load_plain
from specrun.core.types import Item
from specrun.metrics import estimate
from specrun.protocols.bitext_mining import BitextMiningProtocol, nearest_targets
from specrun.readers.aligned_lines import read_aligned_lines
from tests.conftest import SPECS, plan_of


def test_nearest_targets_equal_a_brute_force_loop_with_first_index_ties() -> None:
    rng = np.random.default_rng(0)
    sources, targets = rng.standard_normal((300, 8)), rng.standard_normal((90, 8))  # blocks of 256: two
    targets[7] = targets[3]  # an exact duplicate: the tie goes to line 3
    sources[0] = targets[3] * 2
    found = nearest_targets(sources, targets)
    for i, row in enumerate(sources):
        cosines = [row @ t / (np.linalg.norm(row) * np.linalg.norm(t)) for t in targets]
        best = max(cosines)
        assert found[i] == next(j for j, c in enumerate(cosines) if abs(c - best) < 1e-12)
    assert found[0] == 3


def test_scores_are_mteb_s_sklearn_measures_over_lines() -> None:
    rng = np.random.default_rng(1)
    vectors = {f"s{i}": rng.standard_normal(4) for i in range(40)} | {f"t{i}": rng.standard_normal(4)
                                                                     for i in range(40)}
    items = [Item(id=str(i), fields={"source": f"s{i}", "target": f"t{i}"}) for i in range(40)]
    for i in range(0, 40, 3):  # a third of the targets close to their sources
        vectors[f"t{i}"] = vectors[f"s{i}"] + 0.01
    out = BitextMiningProtocol().run(items,
                                     RunContext(lambda texts, _field: np.stack([vectors[t] for t in texts])),
                                     NoOptions())
    labels, predictions = np.arange(40), out.arrays["predicted_class"]
    for metric, theirs in (("f1_weighted", sk.f1_score), ("precision_weighted", sk.precision_score),
                           ("recall_weighted", sk.recall_score)):
        score = estimate(metric, out.arrays, resamples=100, confidence=0.9, seed=1)
        assert score.value == pytest.approx(theirs(labels, predictions, zero_division=0, average="weighted"),
                                            abs=1e-12)
    assert estimate("accuracy", out.arrays, resamples=100, confidence=0.9, seed=1).value == pytest.approx(
        sk.accuracy_score(labels, predictions), abs=1e-12)


def write(folder: Path, name: str, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


LAYOUT = ReadLayout(format="aligned_lines", options={"files": {"a": "x.{split}.a", "b": "x.{split}.b"}})


def test_lines_split_at_newline_only(tmp_path: Path) -> None:
    write(tmp_path, "x.p.a", "\ufeffone\u2028still one\r\ntwo\n".encode())
    write(tmp_path, "x.p.b", b"uno\ndos")
    assert read_aligned_lines(tmp_path, LAYOUT, "p") == [{"a": "one\u2028still one", "b": "uno"},
                                                          {"a": "two", "b": "dos"}]


@pytest.mark.parametrize("a, b, expected", [
    (b"one\ntwo\n", b"uno\n", "different numbers of lines (a 2, b 1)"),
    (b"\xff\xfe\n", b"x\n", "not UTF-8"),
])
def test_misaligned_or_undecodable_files_are_one_line(tmp_path: Path, a: bytes, b: bytes, expected: str) -> None:
    write(tmp_path, "x.p.a", a)
    write(tmp_path, "x.p.b", b)
    with pytest.raises(DataError, match=re.escape(expected)):
        read_aligned_lines(tmp_path, LAYOUT, "p")


def test_a_file_read_beside_pinned_ones_must_be_pinned_too(tmp_path: Path) -> None:
    data = load_plain((SPECS / "tatoeba.yaml").read_text(encoding="utf-8"))
    del data["sources"]["tatoeba"]["files"]["jpn-eng"]["contents"]["tatoeba.jpn-eng.eng"]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError, match=re.escape("reads 'tatoeba.jpn-eng.eng', which `contents` does not pin")):
        plan_of(path)
