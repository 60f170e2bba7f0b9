"""Errors keep where they came from when a stage adds its context, and each upper stage raises its own class."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import specrun
from specrun.core.errors import CompareError, MetricError, PublishError, ResultsError, SpecError, SpecrunError

PACKAGE = Path(specrun.__file__).parent


def test_prefixed_keeps_class_file_line_and_key() -> None:
    error = SpecError("expected a number", file="spec.yaml", line=12, key="metrics.p.range")
    prefixed = error.prefixed("jsts, split test")
    assert type(prefixed) is SpecError
    assert (prefixed.file, prefixed.line, prefixed.key) == ("spec.yaml", 12, "metrics.p.range")
    assert prefixed.one_line() == "spec.yaml:12: metrics.p.range: jsts, split test: expected a number"


def test_named_context_keeps_the_key_of_an_error_without_a_file() -> None:
    with pytest.raises(MetricError) as caught, SpecrunError.named("biosses, split test"):
        raise MetricError("constant over all 100 units", key="pearson")
    assert caught.value.key == "pearson"
    assert caught.value.one_line() == "pearson: biosses, split test: constant over all 100 units"


def test_an_error_with_a_file_passes_through_named_unchanged() -> None:
    with pytest.raises(SpecError) as caught, SpecrunError.named("context"):
        raise SpecError("bad", file="a.yaml", line=3)
    assert caught.value.one_line() == "a.yaml:3: bad"


@pytest.mark.parametrize(("where", "expected"), [
    ("results", ResultsError), ("publish", PublishError), ("board/leaderboard", CompareError),
    ("board/compare.py", CompareError),
])
def test_upper_stages_raise_their_own_error_class(where: str, expected: type[SpecrunError]) -> None:
    """A caller (and a test) can tell a refused results file from a refused comparison or publication."""
    root = PACKAGE / where
    files = [root] if root.is_file() else sorted(root.glob("*.py"))
    raised: list[str] = []
    bare: list[str] = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name):
                raised.append(node.exc.func.id)
                if node.exc.func.id == "SpecrunError":
                    bare.append(f"{path.name}:{node.lineno}")
    assert not bare, f"bare SpecrunError raised in {where}: {bare}"
    assert expected.__name__ in raised
