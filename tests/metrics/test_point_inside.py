"""Never an interval without its point: every registered kind's example, on its hashing vectors and on seeded
random vectors, gives each metric it feeds (by the metric's own method, `auto`) a value inside its interval; a
method that can leave the value out (basic, bca) is said in one line by the report, the run's table and compare,
never shown silently."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import yaml

from specrun.board import Difference
from specrun.board.compare import markdown
from specrun.core.contracts import RunContext
from specrun.core.errors import MetricError
from specrun.core.markdown import md_text
from specrun.core.plain_yaml import load_plain
from specrun.core.registry import METRICS, PROTOCOLS
from specrun.metrics import estimate
from specrun.reports import outside_note
from specrun.results.verify import load_verified
from tests.conftest import run_cli
from tests.protocols.test_kind_grid import run_example
from tests.protocols.test_kinds_cli import sentence, spec, write_jsonl


def _random_embed(seed: int):
    def embed(texts: Sequence[str], text_field: str) -> np.ndarray:
        return np.stack([np.random.default_rng([seed, *text.encode("utf-8")]).standard_normal(24) for text in texts])
    return embed


def _fed(kind: str) -> tuple[str, ...]:
    protocol = PROTOCOLS[kind]
    example = protocol.example()
    return example.metrics or tuple(name for name, metric in METRICS.items()
                                    if set(metric.inputs) <= set(protocol.info.outputs))


@pytest.mark.parametrize("kind", sorted(PROTOCOLS))
def test_every_kind_s_values_lie_inside_their_own_intervals(kind: str) -> None:
    _, scores = run_example(kind)
    for name, score in scores.items():
        assert score.interval == METRICS[name].interval
        assert score.ci_low <= score.value <= score.ci_high, (kind, name, score)
    protocol = PROTOCOLS[kind]
    example = protocol.example()
    options = protocol.Options.model_validate(dict(example.options))
    checked = 0
    for seed in range(6):
        outputs = protocol.run(list(example.items), RunContext(_random_embed(seed), dict(example.support)), options)
        for name in _fed(kind):
            try:
                score = estimate(name, outputs.arrays, resamples=300, confidence=0.95, seed=seed)
            except MetricError:
                continue  # random vectors can leave a tiny example undefined (one class predicted): an error
            checked += 1
            assert score.ci_low <= score.value <= score.ci_high, (kind, name, seed, score)
    assert checked, f"{kind}: no metric was defined on random vectors"


def _clusters_spec(tmp: Path, interval: str) -> Path:
    """A toy clustering benchmark of 40 labels on 400 texts of random words: its V-measure is mostly the
    plug-in's small-sample bias, so a basic interval (aimed at the population value) leaves the value out."""
    rng = np.random.default_rng(11)
    rows = [{"text": sentence(rng, 6), "label": f"l{i % 40}"} for i in range(400)]
    write_jsonl(tmp / "data" / "toy" / "test.jsonl", rows)
    path = spec(tmp, "clustering", {"text": "text", "label": "label"},
                {"v": "v_measure", "n": "nmi"}, options={"n_runs": 2, "batch_size": 400})
    document = load_plain(path.read_text(encoding="utf-8"))
    document["uncertainty"]["interval"] = interval
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def test_a_value_outside_its_interval_is_said_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run's table, the report and compare each say in one line that a value lies outside its interval;
    the same spec under auto (centred for these measures) has every value inside."""
    path = _clusters_spec(tmp_path, "basic")
    out = tmp_path / "out"
    common = [str(path), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing", "--output", str(out)]
    code, stdout, err = run_cli(common, capsys)
    assert code == 0, err
    first = Path(stdout.strip().splitlines()[-1])
    results = load_verified(first).results
    outside = [s for s in results.scores["test"].values() if not s.ci_low <= s.value <= s.ci_high]
    assert outside and all(s.interval == "basic" for s in outside)
    notes = [line for line in err.splitlines() if line.startswith("specrun: note:")]
    assert len(notes) == len(outside) and all("outside its basic interval" in line for line in notes)
    report = (first.parent / "report.md").read_text(encoding="utf-8")
    assert sum("lies outside its" in line for line in report.splitlines() if line.startswith("**Note.**")) == \
        len(outside)  # (the other notes: too few documents per class x cluster cell, round 4 item 10)
    code, stdout, err = run_cli([*common, "--truncate-dim", "48"], capsys)
    assert code == 0, err
    second = Path(stdout.strip().splitlines()[-1])
    code, compared, err = run_cli(["compare", str(first), str(second)], capsys)
    assert code == 0, err
    assert "basic intervals" in compared
    b = load_verified(second).results
    a_minus_b = results.scores["test"]["v"].value - b.scores["test"]["v"].value
    shown = markdown(results, b, [Difference(split="test", metric="v", a=0.3, b=0.2, difference=a_minus_b,
                                             ci_low=a_minus_b + 0.01, ci_high=a_minus_b + 0.05, a_better=1.0, n=400,
                                             interval="basic")])
    assert "Note: v on test: the difference lies outside its basic interval" in shown
    assert f"**Note.** {md_text(outside_note('test', 'v', outside[0]) or '')}" in report

    auto = _clusters_spec(tmp_path / "auto", "auto")
    code, stdout, err = run_cli([str(auto), "--data-dir", str(tmp_path / "auto" / "data"), "--adapter", "hashing",
                                 "--output", str(tmp_path / "auto-out")], capsys)
    assert code == 0, err
    scores = load_verified(Path(stdout.strip().splitlines()[-1])).results.scores["test"].values()
    assert all(s.interval == "centred" and s.ci_low <= s.value <= s.ci_high for s in scores)
    assert "specrun: note:" not in err
