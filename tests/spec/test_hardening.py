"""Property-based tests: whatever YAML arrives, the loader answers with a SpecError or a spec, never another
exception; and a run killed at any point leaves the old results or the new ones, never half a file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specrun.core.errors import SpecError
from specrun.core.plain_yaml import load_plain
from specrun.results import Results
from specrun.spec import load_spec
from specrun.yamlsafe import parse_yaml
from tests.conftest import ROOT, SPECS, plan_of

SPEC = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_yaml_or_one_spec_error(text: str) -> None:
    try:
        parse_yaml(text, "random.yaml")
    except SpecError as exc:
        assert "\n" not in exc.one_line()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=":-[]{}&*!|>'\"#%@`,? \n\tabc01", max_size=200))
def test_yaml_punctuation_is_yaml_or_one_spec_error(text: str) -> None:
    try:
        parse_yaml(text, "random.yaml")
    except SpecError as exc:
        assert "\n" not in exc.one_line()


def _load(document: object) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spec.yaml"
        path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
        try:
            load_spec(path)
        except SpecError as exc:
            line = exc.one_line()
            assert "\n" not in line and line.startswith(str(path))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_random_documents_never_escape_as_other_exceptions(document: object) -> None:
    _load(document)


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SPEC)), values)
def test_the_real_spec_with_one_key_replaced(key: str, value: object) -> None:
    _load({**SPEC, key: value})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["sources", "splits", "protocols", "metrics", "card", "licence", "subset"]),
       st.text(max_size=8), values)
@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_the_real_spec_with_a_nested_key_added(section: str, key: str, value: object) -> None:
    document = load_plain(yaml.safe_dump(SPEC))
    target = document[section]
    first = next(iter(target))
    if isinstance(target[first], dict):
        target[first][key] = value
    else:
        target[key] = value
    _load(document)


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_killed_runs_leave_whole_results(tmp_path: Path, data_dir: Path) -> None:
    """Kill reruns into the same output at spread-out moments: results.json is always a whole, valid file. The
    hashing adapter: a run takes about a second, so the kills land in every stage, the writing included (with the
    real model every kill came before the first vector)."""
    env = {**os.environ, "SPECRUN_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "specrun", str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir),
               "--output", str(tmp_path / "out"), "-q", "--adapter", "hashing"]
    first = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    results = Path(first.stdout.strip())
    seen = {Results.model_validate_json(results.read_text()).provenance.created}
    for delay in (0.3, 0.6, 0.9, 1.2, 1.5, 2.0):
        proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for name in ("results.json", "report.md", "predictions.jsonl"):
            assert (results.parent / name).stat().st_size > 0
        parsed = Results.model_validate_json(results.read_text())  # never half a file
        seen.add(parsed.provenance.created)
        from specrun.results import read_predictions

        read_predictions(results, parsed)  # the predictions it pins are whole too
    assert len(seen) >= 1, seen


@pytest.mark.parametrize("newline", ["\r\n", "\n"])
def test_crlf_and_bom_in_spec_and_data_are_read(newline: str, tmp_path: Path, data_dir: Path) -> None:
    from specrun.data import load_split

    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", newline).encode("utf-8"))
    mirror = tmp_path / "data" / "biosses"
    mirror.mkdir(parents=True)
    raw = (data_dir / "biosses" / "all.tsv").read_bytes()
    (mirror / "all.tsv").write_bytes(b"\xef\xbb\xbf" + raw.replace(b"\n", newline.encode()))
    split = load_split(plan_of(spec), "test", tmp_path / "data")  # the fingerprint check passes
    assert len(split.items) == 100
