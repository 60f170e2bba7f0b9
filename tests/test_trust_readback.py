"""Trust issue, read-back side: compare, publish and card --results verify what they read (results.json, the
predictions it pins, the spec it names) and refuse every tampering or fault in one line, writing nothing."""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from specrun.publish import task_ids
from specrun.results import confidence_percent
from tests.conftest import SPECS, assert_one_line_error, files_under, run_cli, run_subprocess

BIOSSES = SPECS / "biosses.yaml"


@dataclass(frozen=True)
class Runs:
    a: Path  # results.json of a hashing run on specs/biosses.yaml
    b: Path  # the same with --prompt 'x: ' (other predictions, same items)
    other_version: Path  # a run on a copy of the spec with one comment more (another sha256)
    collision: Path  # a run on a spec whose task ids collide (split test + x-pearson, split test-x + pearson)
    collision_spec: Path
    exact: tuple[Path, Path]  # two runs at confidence 0.9999999999
    data_dir: Path


def _run(spec: Path, data_dir: Path, output: Path, *extra: str) -> Path:
    from specrun.cli import main

    assert main([str(spec), "--data-dir", str(data_dir), "--adapter", "hashing", "--output", str(output), "-q",
                 *extra]) == 0
    [folder] = (output / "biosses").iterdir()  # one run per output root: <model>+adapter-hashing[+prompt-...]
    return folder / "results.json"


def _without_mteb(text: str) -> str:
    """The spec's text less each metric's `mteb:` block (its line and the deeper-indented lines under it)."""
    kept, dropping = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("    mteb:"):
            dropping = True
            continue
        if dropping and line.startswith("      "):
            continue
        dropping = False
        kept.append(line)
    return "".join(kept)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Runs:
    out = tmp_path_factory.mktemp("trust-runs")
    text = BIOSSES.read_text(encoding="utf-8")
    other = out / "v2" / "biosses.yaml"
    other.parent.mkdir()
    other.write_text("# version 2: one comment more\n" + text, encoding="utf-8")
    collision = out / "collide" / "biosses.yaml"
    collision.parent.mkdir()
    # without the metrics' MTEB counterparts: with two evaluated splits each would have to name its split
    plain = _without_mteb(text)
    test_split = plain.split("splits:\n  test:\n")[1].split("  train:\n")[0]
    metric = plain.split("metrics:\n  pearson_zero_shot:\n")[1].split("  spearman_zero_shot:\n")[0]
    # split test + metric x-pearson and split test-x + metric pearson: both 'test-x-pearson' on the hub
    collision.write_text(plain.replace("splits:\n  test:\n", f"splits:\n  test-x:\n{test_split}  test:\n")
                         .replace("    test: all\n", "    test: all\n    test-x: all\n")
                         .replace("metrics:\n", f"metrics:\n  x-pearson:\n{metric}  pearson:\n{metric}"),
                         encoding="utf-8")
    exact = out / "exact" / "biosses.yaml"
    exact.parent.mkdir()
    exact.write_text(text.replace("confidence: 0.95", "confidence: 0.9999999999")
                     .replace("resamples: 1000", "resamples: 200"), encoding="utf-8")
    return Runs(a=_run(BIOSSES, data_dir, out / "a"), b=_run(BIOSSES, data_dir, out / "b", "--prompt", "x: "),
                other_version=_run(other, data_dir, out / "v2out"), collision=_run(collision, data_dir, out / "c"),
                collision_spec=collision,
                exact=(_run(exact, data_dir, out / "e1"), _run(exact, data_dir, out / "e2", "--prompt", "x: ")),
                data_dir=data_dir)


def copy_run(results: Path, target: Path) -> Path:
    shutil.copytree(results.parent, target)
    return target / "results.json"


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")  # NaN and Infinity as JSON5 literals


def score(document: dict[str, Any], metric: str = "spearman_zero_shot") -> dict[str, Any]:
    return document["scores"]["test"][metric]


def _more_items(path: Path, runs: Runs) -> None:
    def change(document: dict[str, Any]) -> None:
        document["provenance"]["data"]["test"].update(n_selected=150, n_source=150)
    edit(path, change)


def _set(*keys_and_value: Any) -> Callable[[Path, Runs], None]:
    *keys, value = keys_and_value

    def tamper(path: Path, runs: Runs) -> None:
        def change(document: dict[str, Any]) -> None:
            node = document
            for key in keys[:-1]:
                node = node[key]
            node[keys[-1]] = value(node[keys[-1]]) if callable(value) else value
        edit(path, change)
    return tamper


def _swap_predictions(repin: bool) -> Callable[[Path, Runs], None]:
    def tamper(path: Path, runs: Runs) -> None:
        shutil.copy(runs.b.parent / "predictions.jsonl", path.parent / "predictions.jsonl")
        if repin:
            sha = json.loads(runs.b.read_text())["predictions"]["sha256"]
            edit(path, lambda d: d["predictions"].__setitem__("sha256", sha))
    return tamper


def _truncate_predictions(path: Path, runs: Runs) -> None:
    predictions = path.parent / "predictions.jsonl"
    predictions.write_bytes(predictions.read_bytes()[:-200])


def _predictions_special(kind: str) -> Callable[[Path, Runs], None]:
    def tamper(path: Path, runs: Runs) -> None:
        predictions = path.parent / "predictions.jsonl"
        predictions.unlink()
        if kind == "fifo":
            os.mkfifo(predictions)
        else:
            predictions.symlink_to("/dev/zero")
    return tamper


def _results_special(kind: str) -> Callable[[Path, Runs], None]:
    def tamper(path: Path, runs: Runs) -> None:
        if kind == "huge":
            with path.open("r+b") as handle:
                handle.truncate(17 << 20)  # sparse: over the 16 MiB limit without writing it
            return
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    return tamper


def _rename_split(path: Path, runs: Runs) -> None:
    edit(path, lambda d: d["scores"].__setitem__("valid", d["scores"].pop("test")))


def _extra_score(path: Path, runs: Runs) -> None:
    edit(path, lambda d: d["scores"]["test"].__setitem__("extra", dict(score(d))))


def _invert_interval(path: Path, runs: Runs) -> None:
    def change(document: dict[str, Any]) -> None:
        s = score(document)
        s["ci_low"], s["ci_high"] = s["ci_high"], s["ci_low"]
    edit(path, change)


ALL = ("compare", "publish", "card")
SPEC_SIDE = ("publish", "card")  # compare reads no spec

# (id, tampering, commands it applies to, text the one error line contains)
TAMPERINGS: list[tuple[str, Callable[[Path, Runs], None], tuple[str, ...], str]] = [
    ("edited-score", _set("scores", "test", "spearman_zero_shot", "value", lambda v: v + 0.01), ALL,
     "its predictions give; refusing edited results"),
    ("edited-n", _set("scores", "test", "spearman_zero_shot", "n", 99), ALL, "n 99 differs from the 100 units"),
    ("edited-ci", _set("scores", "test", "pearson_zero_shot", "ci_low", lambda v: v - 0.01), ALL,
     "interval ["),
    ("edited-publication", _set("publication", "confirmed"), SPEC_SIDE, "'confirmed' differs from 'unconfirmed'"),
    ("edited-licence", _set("licence", "mit"), SPEC_SIDE, "'mit' differs from 'gpl-3.0'"),
    ("edited-title", _set("title", "Something else"), SPEC_SIDE, "differs from 'Biomedical"),
    ("swapped-predictions", _swap_predictions(False), ALL, "that results.json pins"),
    ("swapped-predictions-repinned", _swap_predictions(True), ALL, "its predictions give"),
    ("truncated-predictions", _truncate_predictions, ALL, "that results.json pins"),
    ("predictions-rows", _set("predictions", "rows", 99), ALL, "100 rows, not the 99"),
    ("predictions-absolute", _set("predictions", "file", "/etc/passwd"), ALL, "must be a plain file name"),
    ("predictions-dotdot", _set("predictions", "file", "../a/predictions.jsonl"), ALL, "must be a plain file name"),
    ("predictions-dev-zero-path", _set("predictions", "file", "/dev/zero"), ALL, "must be a plain file name"),
    ("predictions-link-to-dev-zero", _predictions_special("zero"), ALL, "is not a regular file"),
    ("predictions-fifo", _predictions_special("fifo"), ALL, "is not a regular file"),
    ("spec-id-traversal", _set("spec_id", "../../x"), ALL, "spec id '../../x' is not a lower-case name"),
    ("plot-traversal", _set("plots", "test/zero_shot", "../../evil.png"), ALL, "must be a plain file name"),
    ("unknown-metric", _set("metrics", "pearson_zero_shot", "metric", "bogus"), ALL, "unknown metric 'bogus'"),
    ("unknown-protocol-kind", _set("metrics", "pearson_zero_shot", "protocol_kind", "bogus"), ALL,
     "unknown protocol kind 'bogus'"),
    ("extra-score", _extra_score, ALL, "which metrics does not define"),
    ("split-without-provenance", _rename_split, ALL, "no provenance.data entry"),
    ("resamples-0", _set("provenance", "uncertainty", "resamples", 0), ALL, "resamples must lie in 1..100000"),
    ("resamples-negative", _set("provenance", "uncertainty", "resamples", -5), ALL, "resamples must lie in 1..100000"),
    # a bad-input hunt: 10**12 hung every reader, a negative seed was a numpy traceback
    ("resamples-huge", _set("provenance", "uncertainty", "resamples", 10**12), ALL, "resamples must lie in 1..100000"),
    ("seed-negative", _set("provenance", "uncertainty", "seed", -5), ALL, "seed must lie in 0..2**63-1"),
    ("confidence-1.5", _set("provenance", "uncertainty", "confidence", 1.5), ALL, "confidence must lie"),
    # a --limit run with its limit edited out was verified, exported and published as a full run (a bad-input
    # hunt): a whole split has every item selected, and each item of such a kind is one unit
    ("fewer-selected", _set("provenance", "data", "test", "n_selected", 10), ALL, "10 items selected of 100"),
    # compare and the leaderboard read a run's direction and range from the file (a bad-input hunt: both runs'
    # directions flipped ranked the worse first): the registry's direction always, the spec's labels where found
    ("direction-flipped", _set("metrics", "spearman_zero_shot", "direction", "lower"), ALL,
     "spearman is higher is better; the file says lower"),
    ("label-edited", _set("metrics", "spearman_zero_shot", "label", "Spearman, better"), ("compare", "leaderboard"),
     "metric 'spearman_zero_shot' differs from its spec"),
    ("range-forged", _set("metrics", "spearman_zero_shot", "range", [-0.99, 0.99]), ("publish", "card", "leaderboard"),
     "metric 'spearman_zero_shot' differs from its spec"),
    ("more-items-than-units", _more_items, ALL, "100 units where each of the 150 items selected is one"),
    ("nan-value", _set("scores", "test", "spearman_zero_shot", "value", math.nan), ALL, "not a finite number"),
    ("inf-ci", _set("scores", "test", "spearman_zero_shot", "ci_high", math.inf), ALL, "not a finite number"),
    ("inverted-interval", _invert_interval, ALL, "is above ci_high"),
    ("n-zero", _set("scores", "test", "spearman_zero_shot", "n", 0), ALL, "not a specrun results file"),
    ("results-fifo", _results_special("fifo"), ALL, "is not a regular file"),
    ("results-dev-zero", _results_special("zero"), ALL, "is not a regular file"),
    ("results-huge", _results_special("huge"), ALL, "over the 16777216-byte limit"),
]


def command_line(command: str, results: Path, runs: Runs, out: Path) -> list[str]:
    if command == "compare":
        return ["compare", str(results), str(runs.b), "-o", str(out / "compare.md")]
    if command == "publish":
        return ["publish", str(results), "--benchmark", "specrun/biosses", "--confirm-licence", "reviewed", "-o",
                str(out)]
    if command == "leaderboard":
        return ["leaderboard", str(results), "-o", str(out / "board")]  # alone: its spec is what it meets
    return ["card", str(BIOSSES), "--results", str(results), "--data-dir", str(runs.data_dir), "-o",
            str(out / "card.md")]


CASES = [pytest.param(command, tamper, contains, id=f"{command}-{name}")
         for name, tamper, commands, contains in TAMPERINGS for command in commands]


@pytest.mark.parametrize(("command", "tamper", "contains"), CASES)
def test_tampering_is_refused_in_one_line_and_nothing_is_written(
        command: str, tamper: Callable[[Path, Runs], None], contains: str, runs: Runs, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_run(runs.a, tmp_path / "run")
    tamper(results, runs)
    out = tmp_path / "out"
    started = time.monotonic()
    code, stdout, err = run_cli(command_line(command, results, runs, out), capsys)
    assert time.monotonic() - started < 60  # a FIFO or /dev/zero never blocks or reads forever
    assert_one_line_error(code, err, contains=contains)
    assert stdout == ""
    assert files_under(out) == []


@pytest.mark.parametrize("command", ALL)
def test_untampered_copies_pass(command: str, runs: Runs, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """The table's control: the same commands on an unedited copy succeed and write their files."""
    results = copy_run(runs.a, tmp_path / "run")
    code, _, err = run_cli(command_line(command, results, runs, tmp_path / "out"), capsys)
    assert code == 0, err
    assert files_under(tmp_path / "out")


@pytest.mark.parametrize("command", ALL)
def test_an_edited_interval_behind_edited_package_versions_is_never_shown(command: str, runs: Runs, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """results.json claims another numpy, so the check could not reproduce its bootstrap: the interval is computed
    here from the predictions anyway, every output shows that one, and a warning line says so."""
    results = copy_run(runs.a, tmp_path / "run")

    def change(document: dict[str, Any]) -> None:
        document["provenance"]["packages"]["numpy"] = "0.0.1"
        pearson = score(document, "pearson_zero_shot")
        pearson["ci_low"], pearson["ci_high"] = pearson["value"] - 0.0011, pearson["value"] + 0.0011
    edit(results, change)
    code, _, err = run_cli(command_line(command, results, runs, tmp_path / "out"), capsys)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("specrun: warning:")]
    assert len(warnings) == 1 and "test/pearson_zero_shot is the one computed here" in warnings[0], err
    assert "numpy 0.0.1" in warnings[0]
    value = score(json.loads(results.read_text()), "pearson_zero_shot")["value"]
    written = "\n".join(path.read_text(errors="replace") for path in (tmp_path / "out").rglob("*") if path.is_file())
    assert written and f"{value - 0.0011:.4f}" not in written and f"{value + 0.0011:.4f}" not in written
    if command != "compare":  # compare shows its own paired intervals; the card and the hub files the run's
        truth = score(json.loads(runs.a.read_text()), "pearson_zero_shot")
        assert f"{truth['ci_low']:.4f}" in written or f"{truth['ci_low']:.3f}" in written


def test_publication_comes_from_the_spec_not_the_results(runs: Runs, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Without --confirm-licence, a results.json edited to 'confirmed' still meets the spec's gate."""
    results = copy_run(runs.a, tmp_path / "run")
    _set("publication", "confirmed")(results, runs)
    code, _, err = run_cli(["publish", str(results), "--benchmark", "o/d", "-o", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="refusing edited results")
    code, _, err = run_cli(["publish", str(runs.a), "--benchmark", "o/d", "-o", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="data licence gpl-3.0 is not confirmed")
    assert files_under(tmp_path / "out") == []


def test_card_refuses_results_of_another_spec_version(runs: Runs, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "card.md"
    code, _, err = run_cli(["card", str(BIOSSES), "--results", str(runs.other_version), "--data-dir",
                            str(runs.data_dir), "-o", str(out)], capsys)
    assert_one_line_error(code, err, contains="results were made from another version of")
    assert not out.exists()


def test_publish_finds_the_spec_by_sha256_or_needs_spec(runs: Runs, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    moved = copy_run(runs.other_version, tmp_path / "run")
    spec_copy = tmp_path / "elsewhere.yaml"
    recorded = Path(json.loads(moved.read_text())["provenance"]["spec_path"])
    shutil.copy(recorded, spec_copy)
    edit(moved, lambda d: d["provenance"].__setitem__("spec_path", str(tmp_path / "gone.yaml")))
    common = ["publish", str(moved), "--benchmark", "o/d", "--confirm-licence", "ok"]
    code, _, err = run_cli([*common, "-o", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="pass --spec SPEC")
    code, _, err = run_cli([*common, "--spec", str(BIOSSES), "-o", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="is not the spec this run used")
    assert files_under(tmp_path / "out") == []
    code, out, err = run_cli([*common, "--spec", str(spec_copy)], capsys)
    assert code == 0, err
    assert "task_id: test-spearman_zero_shot" in out


def test_task_id_collision_is_refused_identically(runs: Runs, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["publish", str(runs.collision), "--benchmark", "o/d", "--confirm-licence", "ok", "-o",
                            str(tmp_path / "a")], capsys)
    first = assert_one_line_error(code, err, contains="hub task id 'test-x-pearson' would name both")
    code, _, err = run_cli(["publish-benchmark", str(runs.collision_spec), "--confirm-licence", "ok", "--data-dir",
                            str(runs.data_dir), "-o", str(tmp_path / "b")], capsys)
    second = assert_one_line_error(code, err)
    assert first == second
    assert files_under(tmp_path) == []
    assert task_ids([("test", "pearson"), ("test", "spearman")]) == {("test", "pearson"): "test-pearson",
                                                                     ("test", "spearman"): "test-spearman"}
    with pytest.raises(Exception, match="would name both"):
        task_ids([("a", "b-c"), ("a-b", "c")])


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
@pytest.mark.parametrize("command", ["publish", "publish-benchmark"])
def test_push_offline_is_one_quick_line_without_the_token(command: str, runs: Runs, tmp_path: Path) -> None:
    from specrun.cli import main

    token = "hf_dummyTOKENthatmustneverbeprinted"
    if command == "publish":  # a run of the real model: a hashing run is refused before the hub is asked
        assert main([str(BIOSSES), "--data-dir", str(runs.data_dir), "--output", str(tmp_path / "real"), "-q"]) == 0
        target = str(next((tmp_path / "real").rglob("results.json")))
    else:
        target = str(SPECS / "jsts.yaml")
    extra = ["--benchmark", "o/d", "--confirm-licence", "ok"] if command == "publish" else [
        "--data-dir", str(runs.data_dir), "--evaluation-framework", "inspect-ai"]  # one the hub lists: gets to the net
    started = time.monotonic()
    done = run_subprocess([command, target, *extra, "--push", "--repo", "someone/thing", "-o", str(tmp_path / "out")],
                          env={"HF_ENDPOINT": "http://127.0.0.1:9", "HF_TOKEN": token, "HF_HUB_OFFLINE": None},
                          timeout=120)
    assert time.monotonic() - started < 15
    assert_one_line_error(done.returncode, done.stderr, contains="cannot reach the hub at http://127.0.0.1:9")
    assert token not in done.stdout + done.stderr and done.stdout == ""
    assert files_under(tmp_path / "out") == []


def test_output_of_the_wrong_kind_is_one_line(runs: Runs, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("keep\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    for args, contains in [
        (["publish", str(runs.a), "--benchmark", "o/d", "--confirm-licence", "ok", "-o", str(a_file)],
         "is not a folder"),
        (["publish-benchmark", str(SPECS / "jsts.yaml"), "--data-dir", str(runs.data_dir), "-o", str(a_file)],
         "is not a folder"),
        (["publish", str(runs.a), "--benchmark", "o/d", "--confirm-licence", "ok", "-o", str(a_file / "sub")],
         "is not a folder"),
        (["card", str(BIOSSES), "--results", str(runs.a), "--data-dir", str(runs.data_dir), "-o", str(folder)],
         "is a folder"),
        (["card", str(BIOSSES), "--data-dir", str(runs.data_dir), "-o", str(folder)], "is a folder"),
        (["compare", str(runs.a), str(runs.b), "-o", str(folder)], "is a folder"),
    ]:
        code, out, err = run_cli(args, capsys)
        assert_one_line_error(code, err, contains=contains)
        assert out == ""
    assert a_file.read_text() == "keep\n" and files_under(folder) == []


def test_confidence_is_labelled_exactly(runs: Runs, capsys: pytest.CaptureFixture[str]) -> None:
    assert confidence_percent(0.95) == "95%" and confidence_percent(0.5) == "50%"
    assert confidence_percent(0.9999999999) == "99.99999999%" and confidence_percent(0.975) == "97.5%"
    first, second = runs.exact
    assert "| value | 99.99999999% CI | interval | n |" in (first.parent / "report.md").read_text()
    code, out, err = run_cli(["compare", str(first), str(second)], capsys)
    assert code == 0, err
    assert "99.99999999% CI" in out and "100% CI" not in out
    code, out, err = run_cli(["publish", str(first), "--benchmark", "o/d", "--confirm-licence", "ok"], capsys)
    assert code == 0, err
    assert "99.99999999% percentile bootstrap CI [" in out


def test_compare_refuses_runs_scoring_different_metrics(runs: Runs, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["compare", str(runs.a), str(runs.collision), "-o", str(tmp_path / "c.md")], capsys)
    assert_one_line_error(code, err)
    assert not (tmp_path / "c.md").exists()


def test_compare_names_the_settings_in_which_two_runs_of_one_model_differ(runs: Runs,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs of one model name must not read as the same model: the header names the differing prompt, in the
    leaderboard's words (results.run_labels serves both)."""
    code, out, err = run_cli(["compare", str(runs.a), str(runs.b)], capsys)
    assert code == 0, err
    header = out.splitlines()[0]
    name = "sentence-transformers/all-MiniLM-L6-v2"
    assert header == (f'Paired comparison on biosses: A = {name} (adapter hashing, no prompt), '
                      f'B = {name} (adapter hashing, prompt "x: ")')  # never the model's bare name: round 4
