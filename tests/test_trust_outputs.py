"""A run's files are one unit: each ROOT/<spec>/<model>/ folder is swapped in whole (or not at all), concurrent
writers are serialised, temporaries of killed writers are removed, Ctrl-C says truthfully what was written, and
output faults end in one line, exit 2, with the disk exactly as before."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from specrun import outputs
from specrun.core.errors import OutputError, OutputInterrupted, SpecrunError
from specrun.outputs import fs as _fs  # noqa: F401  (outputs.fs, outputs._sets: patched below)
from specrun.results import Results
from specrun.runner import RUN_FILES
from tests.conftest import (
    ROOT,
    SPECS,
    assert_one_line_error,
    files_under,
    hears_ctrl_c,
    run_cli,
    run_ok,
    tmpfs,
)

SLUG = "sentence-transformers__all-MiniLM-L6-v2"
BIOSSES = str(SPECS / "biosses.yaml")
JACSTS = str(SPECS / "jacsts.yaml")
HIDDEN_MARKS = (outputs.STAGING_TAG, outputs.OLD_TAG, outputs.LOCK_SUFFIX, ".tmp")


def run_args(data_dir: Path, output: Path, *extra: str, specs: tuple[str, ...] = (BIOSSES,),
             name: str | None = SLUG) -> list[str]:
    """Hashing runs; `--name SLUG` keeps runs with different prompts in one folder, the unit these tests swap."""
    named = ["--name", name] if name else []
    return [*specs, "--data-dir", str(data_dir), "--adapter", "hashing", "--output", str(output), "-q", *named,
            *extra]


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry below folder, hidden ones included: a file's sha256, or 'dir' for a folder."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))}


def temporaries(folder: Path) -> list[str]:
    """Staging and old folders, lock files and per-file temporaries anywhere below folder."""
    return [str(p) for p in folder.rglob(".*") if any(mark in p.name for mark in HIDDEN_MARKS)]


def check_whole(folder: Path, prompt: str | None = None) -> Results:
    """The set in folder is whole and consistent: exactly the files results.json names, the predictions it pins
    (sha256 and rows), a report of the same run (same prompt, same values), and nothing else."""
    results = Results.model_validate_json((folder / "results.json").read_text())
    predictions = folder / results.predictions.file
    assert hashlib.sha256(predictions.read_bytes()).hexdigest() == results.predictions.sha256
    assert len(predictions.read_text().splitlines()) == results.predictions.rows
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        {"results.json", "report.md", results.predictions.file, *results.plots.values()})
    report = (folder / "report.md").read_text()
    assert f"sha256 {results.predictions.sha256}" in report  # the report pins the same predictions
    assert f"run {results.provenance.created}" in report
    for split in results.scores.values():
        for score in split.values():
            assert f"{score.value:.4f}" in report
    if prompt is not None:
        assert results.provenance.model.prompt == prompt
        assert repr(prompt) in report
    else:
        assert results.provenance.model.prompt is None
    return results


# --- the fault table -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fault:
    name: str
    setup: Callable[[Path, ExitStack, Callable[..., list[str]]], Path]  # prepares tmp, returns --output
    contains: str
    extra: tuple[str, ...] = ()
    specs: tuple[str, ...] = (BIOSSES,)
    kept_set: str | None = None  # a whole earlier set that must be there, untouched, afterwards


def _file(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    (tmp / "out").write_text("not a folder\n")
    return tmp / "out"


def _under_file(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    (tmp / "out").write_text("not a folder\n")
    return tmp / "out" / "results"


def _deep_under_file(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    (tmp / "a").mkdir()
    (tmp / "a" / "b").write_text("x")
    return tmp / "a" / "b" / "c" / "d"


def _read_only(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    return stack.enter_context(tmpfs(tmp / "ro", read_only=True))


def _under_read_only(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    return stack.enter_context(tmpfs(tmp / "ro", read_only=True)) / "results" / "deeper"


def _full_before(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    disk = stack.enter_context(tmpfs(tmp / "disk", "64k"))
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="No space left"):
            for _ in range(64):
                os.write(fd, b"x" * 4096)
    finally:
        os.close(fd)
    return disk / "out"


def _no_inodes(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    return stack.enter_context(tmpfs(tmp / "disk", "1m,nr_inodes=1")) / "out"


def _full_fresh(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    return stack.enter_context(tmpfs(tmp / "disk", "16k")) / "out"  # smaller than predictions + report + plot


def _full_with_previous(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    out = stack.enter_context(tmpfs(tmp / "disk", "64k")) / "out"  # one set (48k) fits, a second beside it not
    ok(out, "--prompt", "old: ")
    return out


def _full_second_spec(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    out = stack.enter_context(tmpfs(tmp / "disk", "640k")) / "out"  # both sets fit once; biosses stages, jacsts not
    ok(out, "--prompt", "old: ", specs=(BIOSSES, JACSTS))
    return out


def _name_too_long(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    return tmp / ("n" * 300) / "out"


def _path_too_long(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    return tmp.joinpath(*["p" * 200] * 21)


def _spec_folder_is_file(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    (tmp / "out").mkdir()
    (tmp / "out" / "biosses").write_text("a file where the spec's folder goes\n")
    return tmp / "out"


def _model_folder_is_file(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    (tmp / "out" / "biosses").mkdir(parents=True)
    (tmp / "out" / "biosses" / SLUG).write_text("a file where the model's folder goes\n")
    return tmp / "out"


def _second_spec_blocked(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    ok(tmp / "out", "--prompt", "old: ")
    (tmp / "out" / "jacsts").write_text("a file where the second spec's folder goes\n")
    return tmp / "out"


def _second_spec_read_only(tmp: Path, stack: ExitStack, ok: Callable[..., list[str]]) -> Path:
    ok(tmp / "out", "--prompt", "old: ")  # the first spec's folder is locked, then the second cannot be
    stack.enter_context(tmpfs(tmp / "out" / "jacsts", read_only=True))
    return tmp / "out"


FAULTS = [
    Fault("output-is-a-file", _file, "is a file, not a folder"),
    Fault("output-under-a-file", _under_file, "out is a file, not a folder"),
    Fault("output-deep-under-a-file", _deep_under_file, "b is a file, not a folder"),
    Fault("read-only-folder", _read_only, "read-only file system"),
    Fault("missing-folder-under-read-only", _under_read_only, "read-only file system"),
    Fault("disk-full-before-the-run", _full_before, "no space left"),
    Fault("no-inodes-left", _no_inodes, "no space left"),
    Fault("disk-full-while-writing", _full_fresh, "No space left on device; nothing was written"),
    Fault("disk-full-keeps-previous-set", _full_with_previous, "nothing was written, the previous results are "
          "unchanged", extra=("--prompt", "new: "), kept_set=f"disk/out/biosses/{SLUG}"),
    Fault("disk-full-on-second-spec-keeps-both", _full_second_spec, f"jacsts/{SLUG}: No space left on device; "
          "nothing was written, the previous results are unchanged", extra=("--prompt", "new: "),
          specs=(BIOSSES, JACSTS), kept_set=f"disk/out/biosses/{SLUG}"),
    Fault("name-too-long", _name_too_long, "is 300 bytes long; this filesystem allows 255"),
    Fault("path-too-long", _path_too_long, "the path is"),
    Fault("spec-folder-is-a-file", _spec_folder_is_file, "out/biosses is a file, not a folder"),
    Fault("model-folder-is-a-file", _model_folder_is_file, f"biosses/{SLUG} is a file, not a folder"),
    Fault("second-spec-folder-is-a-file", _second_spec_blocked, "out/jacsts is a file, not a folder",
          extra=("--prompt", "new: "), specs=(BIOSSES, JACSTS), kept_set=f"out/biosses/{SLUG}"),
    Fault("second-spec-folder-read-only", _second_spec_read_only, f"jacsts/{SLUG}: Read-only file system; "
          "nothing was written, the previous results are unchanged", extra=("--prompt", "new: "),
          specs=(BIOSSES, JACSTS), kept_set=f"out/biosses/{SLUG}"),
]


@pytest.mark.parametrize("fault", FAULTS, ids=[fault.name for fault in FAULTS])
def test_output_fault(fault: Fault, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One line, exit 2, no traceback; the disk below tmp_path exactly as it was before the run (an earlier whole
    set included); no staging folder, old folder, lock or temporary file anywhere."""

    def ok(output: Path, *extra: str, specs: tuple[str, ...] = (BIOSSES,)) -> list[str]:
        run_ok(run_args(data_dir, output, *extra, specs=specs), capsys)
        return files_under(output)

    with ExitStack() as stack:
        output = fault.setup(tmp_path, stack, ok)
        before = snapshot(tmp_path)
        code, out, err = run_cli(run_args(data_dir, output, *fault.extra, specs=fault.specs), capsys)
        assert_one_line_error(code, err, contains=fault.contains)
        assert out == ""
        assert snapshot(tmp_path) == before
        assert temporaries(tmp_path) == []
        if fault.kept_set:
            check_whole(tmp_path / fault.kept_set, prompt="old: ")


def test_the_fault_table_covers_enough(tmp_path: Path) -> None:
    assert len(FAULTS) >= 12
    assert len({fault.name for fault in FAULTS}) == len(FAULTS)


# --- what a successful run leaves ------------------------------------------------------------------------------

@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_a_run_leaves_only_its_sets(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Two specs, then a rerun with another prompt: each folder is the new set, whole, swapped in by one atomic
    exchange each; no lock, no temporary. A file a user left in the folder is never deleted with the old set: the
    rerun is refused in one line, nothing written (round 4, item 1), and goes through once it is moved away."""
    out = tmp_path / "out"
    run_ok(run_args(data_dir, out, specs=(BIOSSES, JACSTS)), capsys)
    first = {spec: check_whole(out / spec / SLUG) for spec in ("biosses", "jacsts")}
    (out / "biosses" / SLUG / "notes.txt").write_text("mine")
    before = snapshot(out)
    code, _, err = run_cli(run_args(data_dir, out, "--prompt", "q: ", specs=(BIOSSES, JACSTS)), capsys)
    assert_one_line_error(code, err, contains="it holds 'notes.txt'")
    assert snapshot(out) == before
    (out / "biosses" / SLUG / "notes.txt").unlink()
    exchanged: list[tuple[str, bool]] = []
    real_exchange = outputs.fs.exchange_paths

    def exchange(a: Path, b: Path) -> bool:
        exchanged.append((b.parent.name, done := real_exchange(a, b)))
        return done

    monkeypatch.setattr(outputs.fs, "exchange_paths", exchange)
    run_ok(run_args(data_dir, out, "--prompt", "q: ", specs=(BIOSSES, JACSTS)), capsys)
    if exchanged != [("biosses", True), ("jacsts", True)]:
        assert outputs.fs._renameat2 is None or exchanged == [("biosses", False), ("jacsts", False)], exchanged
    for spec in ("biosses", "jacsts"):
        results = check_whole(out / spec / SLUG, prompt="q: ")
        assert results.predictions.sha256 != first[spec].predictions.sha256
    assert sorted(os.listdir(out)) == ["biosses", "jacsts"]
    assert sorted(os.listdir(out / "biosses")) == [SLUG]
    assert temporaries(out) == []


def test_mode_of_written_files_follows_umask(tmp_path: Path, data_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Staging folders are made 0700 by mkdtemp; the swapped-in folder and its files are ordinary (umask)."""
    previous = os.umask(0o022)
    try:
        run_ok(run_args(data_dir, tmp_path / "out"), capsys)
    finally:
        os.umask(previous)
    folder = tmp_path / "out" / "biosses" / SLUG
    assert folder.stat().st_mode & 0o777 == 0o755
    assert {p.stat().st_mode & 0o777 for p in folder.iterdir()} == {0o644}


def test_a_long_model_folder_name_still_stages(tmp_path: Path, data_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A model folder named with 255 bytes (the filesystem's limit): `.<name>.tmp-<random>` would not fit, so
    hidden names use a shortened stem; with the settings added the name is cut to 255 bytes and told apart by a
    digest; the set lands, nothing else is left."""
    model = tmp_path / ("m" * 255)
    model.mkdir()
    (model / "config.json").write_text("{}")
    out = tmp_path / "out"
    for prompt in ("a: ", "b: "):
        run_ok(run_args(data_dir, out, "--model", str(model), "--prompt", prompt, name=model.name), capsys)
        check_whole(out / "biosses" / model.name, prompt=prompt)
    assert os.listdir(out / "biosses") == [model.name]
    run_ok(run_args(data_dir, out, "--model", str(model), "--prompt", "c: ", name=None), capsys)
    named = sorted(set(os.listdir(out / "biosses")) - {model.name})
    assert len(named) == 1 and len(named[0]) == 255 and named[0].startswith("m" * 200) and "~" in named[0]
    check_whole(out / "biosses" / named[0], prompt="c: ")
    assert sorted(os.listdir(out / "biosses")) == sorted([model.name, named[0]])  # no temporaries left


# --- stale temporaries -----------------------------------------------------------------------------------------

def test_stale_temporaries_are_removed_under_the_lock(tmp_path: Path, data_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """What killed writers leave (a staging folder, an old folder, a 0-byte `.report.md.*.tmp` of older versions,
    a lock file) is removed by the next run; temporaries of other models are not touched."""
    out = tmp_path / "out"
    run_ok(run_args(data_dir, out), capsys)
    parent = out / "biosses"
    (parent / f".{SLUG}.tmp-1234abcd").mkdir()
    (parent / f".{SLUG}.tmp-1234abcd" / "results.json").write_text("{half")
    (parent / f".{SLUG}.old-99999999").mkdir()
    (parent / f".{SLUG}.lock").write_text("")
    (parent / SLUG / ".report.md.x1y2.tmp").write_bytes(b"")
    (parent / ".other-model.tmp-00000000").mkdir()
    run_ok(run_args(data_dir, out, "--prompt", "p: "), capsys)
    check_whole(parent / SLUG, prompt="p: ")
    assert sorted(os.listdir(parent)) == [".other-model.tmp-00000000", SLUG]


def test_an_old_set_left_aside_is_put_back(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Without RENAME_EXCHANGE the old folder is renamed aside first; a writer killed before the new one went in
    leaves the folder missing: the next writer puts the old set back before anything else, so even when it then
    fails the old set is there."""
    out = tmp_path / "out"
    run_ok(run_args(data_dir, out, "--prompt", "old: "), capsys)
    folder = out / "biosses" / SLUG
    before = snapshot(folder)
    aside = out / "biosses" / f".{SLUG}.old-0badf00d"
    folder.rename(aside)
    (out / "biosses" / f".{SLUG}.tmp-0badf00d").mkdir()  # the staged set the killed writer had not swapped in
    with pytest.raises(ValueError, match="not a plain file name"):
        outputs.write_output_sets([(folder, {"../escape": "x"}, RUN_FILES)])  # refused before touching anything

    def full(unit: outputs._sets.PendingSet, sigint: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs._sets, "_stage", full)
    with pytest.raises(OutputError, match="the previous results are unchanged"):
        outputs.write_output_sets([(folder, {"results.json": "x", "report.md": "r"}, RUN_FILES)])
    assert snapshot(folder) == before
    assert sorted(os.listdir(out / "biosses")) == [SLUG]
    check_whole(folder, prompt="old: ")


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_killed_before_the_swap_leaves_the_old_set_and_the_next_run_cleans_up(tmp_path: Path,
                                                                               data_dir: Path) -> None:
    """SIGKILL once everything is staged: the old set is in place, whole; the hidden staging folder is the only
    other thing, and the next run removes it."""
    out = tmp_path / "out"
    assert _spawn(data_dir, out, "--prompt", "old: ").wait(timeout=120) == 0
    before = snapshot(out)
    proc = _spawn(data_dir, out, "--prompt", "new: ", pause_before=30)
    staged = _wait_for_staged(out / "biosses")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    check_whole(out / "biosses" / SLUG, prompt="old: ")
    assert {k: v for k, v in snapshot(out).items() if not k.startswith(f"biosses/{staged.name}")} == {
        **before, f"biosses/.{SLUG}.lock": hashlib.sha256(b"").hexdigest()}
    assert _spawn(data_dir, out, "--prompt", "next: ").wait(timeout=120) == 0
    check_whole(out / "biosses" / SLUG, prompt="next: ")
    assert temporaries(out) == []


# --- swaps that fail, and the fallback without RENAME_EXCHANGE ---------------------------------------------------

def _two_old_sets(tmp_path: Path) -> list[outputs.OutputSet]:
    sets: list[outputs.OutputSet] = []
    for spec in ("a", "b"):
        folder = tmp_path / "out" / spec / "m"
        outputs.write_output_sets([(folder, {"results.json": f"old {spec}", "report.md": "old"}, RUN_FILES)])
        sets.append((folder, {"results.json": f"new {spec}", "report.md": "new", "predictions.jsonl": "{}\n"},
                     RUN_FILES))
    return sets


def test_a_failed_second_swap_undoes_the_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """All sets are staged before any swap; when the second swap fails the first is swapped back: nothing of the
    run is in place, every old set is whole, nothing hidden is left, and the message says so."""
    sets = _two_old_sets(tmp_path)
    before = snapshot(tmp_path)
    real_swap = outputs._sets._swap
    calls: list[Path] = []

    def failing_swap(unit: outputs._sets.PendingSet) -> None:
        calls.append(unit.folder)
        assert all((folder.parent / f".{folder.name}.lock").exists() for folder, _, _ in sets)  # both held
        assert len(list(unit.folder.parent.glob(".m.tmp-*"))) == 1  # staged before the swaps began
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        real_swap(unit)

    monkeypatch.setattr(outputs._sets, "_swap", failing_swap)
    with pytest.raises(OutputError) as caught:
        outputs.write_output_sets(sets)
    assert caught.value.exit_code == 2
    assert caught.value.one_line() == (f"cannot write results to {tmp_path}/out/b/m: Input/output error; nothing "
                                       "was written, the previous results are unchanged")
    assert len(calls) == 2
    assert snapshot(tmp_path) == before
    assert (tmp_path / "out" / "a" / "m" / "results.json").read_text() == "old a"


def test_without_rename_exchange_the_two_rename_swap_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where renameat2 is missing (other systems, some filesystems): the old folder goes aside, the new comes
    in, the old is removed; a failing second swap is undone too."""
    monkeypatch.setattr(outputs.fs, "_renameat2", None)
    sets = _two_old_sets(tmp_path)
    outputs.write_output_sets(sets)
    assert snapshot(tmp_path / "out") == {
        **{f"{s}": "dir" for s in ("a", "b", "a/m", "b/m")},
        **{f"{s}/m/{name}": hashlib.sha256(text.encode()).hexdigest() for s in ("a", "b")
           for name, text in (("results.json", f"new {s}"), ("report.md", "new"), ("predictions.jsonl", "{}\n"))}}
    before = snapshot(tmp_path)
    real_rename = os.rename

    def rename(src: str | Path, dst: str | Path) -> None:
        if Path(dst) == tmp_path / "out" / "b" / "m" and ".tmp-" in str(src):
            raise OSError(28, "No space left on device")
        real_rename(src, dst)

    monkeypatch.setattr(outputs._sets.os, "rename", rename)
    with pytest.raises(OutputError, match="nothing was written, the previous results are unchanged"):
        outputs.write_output_sets([(folder, {"results.json": "newer"}, RUN_FILES) for folder, _, _ in sets])
    assert snapshot(tmp_path) == before


def test_exchange_is_atomic_on_this_system(tmp_path: Path) -> None:
    """The primary path: renameat2(RENAME_EXCHANGE) swaps two folders in one step (Linux, ext4/tmpfs...)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "f").write_text("a")
    (b / "f").write_text("b")
    if not outputs.fs.exchange_paths(a, b):
        pytest.skip("renameat2 RENAME_EXCHANGE is not available here")
    assert ((a / "f").read_text(), (b / "f").read_text()) == ("b", "a")


# --- signals ---------------------------------------------------------------------------------------------------

def _spawn(data_dir: Path, out: Path, *extra: str, pause_before: float = 0, pause_during: float = 0,
           specs: tuple[str, ...] = (BIOSSES,), cache: Path | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if cache is not None:
        env["SPECRUN_CACHE_DIR"] = str(cache)
    return subprocess.Popen([sys.executable, "-c", PAUSED_SPECRUN, str(pause_before), str(pause_during),
                             *run_args(data_dir, out, *extra, specs=specs)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=hears_ctrl_c)


# `python -m specrun` with the output writer's pauses set first (outputs.PAUSES: production code reads no variable);
# SIGUSR1 releases a pause (_release)
PAUSED_SPECRUN = ("import signal, sys\nfrom specrun import outputs\n"
                  "outputs.PAUSES.before_swap, outputs.PAUSES.during_swap = map(float, sys.argv[1:3])\n"
                  "signal.signal(signal.SIGUSR1, lambda *_: setattr(outputs.PAUSES, 'released', True))\n"
                  "from specrun.cli import main\nsys.exit(main(sys.argv[3:]))\n")


def _wait_for_staged(parent: Path, timeout: float = 120) -> Path:
    """The staging folder, once its results.json (written last) is there; then the writer is in its pause."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        staged = [p for p in parent.glob(f".{SLUG}.tmp-*") if (p / "results.json").is_file()]
        if staged:
            time.sleep(0.3)
            return staged[0]
        time.sleep(0.05)
    raise AssertionError(f"no staged set appeared in {parent}")


def _wait_for_prompt(folder: Path, prompt: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _prompt_of(folder) == prompt:
                time.sleep(0.3)
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{folder} never got prompt {prompt!r}")


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_ctrl_c_before_the_swap_keeps_the_old_set_and_says_so(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "out"
    assert _spawn(data_dir, out, "--prompt", "old: ").wait(timeout=120) == 0
    before = snapshot(out)
    proc = _spawn(data_dir, out, "--prompt", "new: ", pause_before=30)
    _wait_for_staged(out / "biosses")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    line = assert_one_line_error(proc.returncode, stderr, 130, contains="interrupted while writing results")
    assert line.endswith("nothing was written, the previous results are unchanged")
    assert stdout == ""
    assert snapshot(out) == before
    check_whole(out / "biosses" / SLUG, prompt="old: ")


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_ctrl_c_during_the_swaps_is_held_back_and_the_new_sets_are_whole(tmp_path: Path, data_dir: Path) -> None:
    """Ctrl-C after the first of two swaps: both new sets go in, then exit 130 saying they were written whole."""
    out = tmp_path / "out"
    assert _spawn(data_dir, out, "--prompt", "old: ", specs=(BIOSSES, JACSTS)).wait(timeout=120) == 0
    proc = _spawn(data_dir, out, "--prompt", "new: ", pause_during=60, specs=(BIOSSES, JACSTS))
    _wait_for_prompt(out / "biosses" / SLUG, "new: ")
    check_whole(out / "jacsts" / SLUG, prompt="old: ")  # mid-commit: the first set is new, the second still old
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGUSR1)  # ends the pause; SIGINT (the lower number) is handled first
    stdout, stderr = proc.communicate(timeout=60)
    assert_one_line_error(proc.returncode, stderr, 130,
                          contains=f"interrupted while writing results; they were written whole to {out}/biosses")
    assert stdout == ""
    for spec in ("biosses", "jacsts"):
        check_whole(out / spec / SLUG, prompt="new: ")
    assert temporaries(out) == []


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_ctrl_c_while_waiting_for_another_writer(tmp_path: Path, data_dir: Path) -> None:
    """A second run waiting on the lock stops at once on Ctrl-C, writes nothing; the first finishes whole."""
    out = tmp_path / "out"
    # the second run must start, load the model and reach the lock within the first's pause; the test then
    # releases the first (SIGUSR1) instead of waiting its pause out
    first = _spawn(data_dir, out, "--prompt", "first: ", pause_before=120)
    _wait_for_staged(out / "biosses")
    second = _spawn(data_dir, out, "--prompt", "second: ")
    deadline = time.monotonic() + 60
    while "waiting for another specrun" not in (line := second.stderr.readline() if second.stderr else ""):
        assert time.monotonic() < deadline and line, line
    second.send_signal(signal.SIGINT)
    stdout, stderr = second.communicate(timeout=30)
    assert_one_line_error(second.returncode, stderr, 130, contains="interrupted while waiting for another specrun")
    assert stdout == ""
    assert first.poll() is None  # the first still holds the lock, in its pause
    first.send_signal(signal.SIGUSR1)
    assert first.wait(timeout=60) == 0
    check_whole(out / "biosses" / SLUG, prompt="first: ")
    assert temporaries(out) == []


# --- concurrency -----------------------------------------------------------------------------------------------

@pytest.mark.slow  # a real model or several processes: the full suite runs it
@pytest.mark.parametrize(("pause", "rounds"), [(0, 3), (1.0, 2)])
def test_concurrent_writers_leave_one_whole_set(pause: float, rounds: int, tmp_path: Path, data_dir: Path) -> None:
    """Four runs with different prompts and batch sizes on one cache and one output, a few rounds (with a pause
    while holding the lock, they surely overlap): all exit 0; the final set is one of theirs, whole and
    consistent; nothing else is left."""
    out, cache = tmp_path / "out", tmp_path / "cache"
    waited = 0
    stderr: list[str] = []
    for round_ in range(rounds):
        prompts = [f"r{round_}w{i}: " for i in range(4)]
        procs = [_spawn(data_dir, out, "--prompt", prompt, "--batch-size", str(8 + i), pause_before=pause,
                        cache=cache, specs=(BIOSSES, JACSTS) if i % 2 else (BIOSSES,))
                 for i, prompt in enumerate(prompts)]
        finished = [proc.communicate(timeout=300) for proc in procs]
        assert [proc.returncode for proc in procs] == [0] * 4, [err for _, err in finished]
        waited += sum("waiting for another specrun" in err for _, err in finished)
        stderr += [err for _, err in finished]
        results = check_whole(out / "biosses" / SLUG, prompt=_prompt_of(out / "biosses" / SLUG))
        assert results.provenance.model.prompt in prompts
        jacsts = check_whole(out / "jacsts" / SLUG, prompt=_prompt_of(out / "jacsts" / SLUG))
        assert jacsts.provenance.model.prompt in prompts[1::2]
        assert temporaries(out) == []
        assert sorted(os.listdir(out / "biosses")) == [SLUG]
    if pause:
        assert waited > 0, stderr  # holding the lock for a second, some writers had to wait: the lock was used


def _prompt_of(folder: Path) -> str | None:
    return json.loads((folder / "results.json").read_text())["provenance"]["model"]["prompt"]


def test_interrupt_error_is_a_specrun_error_with_exit_130() -> None:
    assert issubclass(OutputInterrupted, SpecrunError) and OutputInterrupted.exit_code == 130
    assert issubclass(OutputError, SpecrunError) and OutputError.exit_code == 2


def test_settings_name_the_folder_so_no_run_replaces_another(tmp_path: Path, data_dir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The settings chosen away from their defaults are part of the folder's name: a run with a prompt, a max
    length or another dtype lands beside the model's run, never over it; --name names the folder instead."""
    import hashlib as hashing_lib

    out = tmp_path / "out"
    first = run_ok(run_args(data_dir, out, name=None), capsys)
    base = f"{SLUG}+adapter-hashing"
    before = snapshot(out / "biosses" / base)
    run_ok(run_args(data_dir, out, "--prompt", "query: ", "--max-length", "64", name=None), capsys)
    run_ok(run_args(data_dir, out, "--name", "my-run.v2"), capsys)
    digest = hashing_lib.sha256(b"query: ").hexdigest()[:8]
    assert sorted(os.listdir(out / "biosses")) == sorted(
        [base, f"{base}+prompt-{digest}+max-length-64", "my-run.v2"])
    assert snapshot(out / "biosses" / base) == before  # the first run's set, untouched
    assert check_whole(out / "biosses" / base).scores == first.scores
    check_whole(out / "biosses" / f"{base}+prompt-{digest}+max-length-64", prompt="query: ")


@pytest.mark.parametrize("name", ["../escape", ".hidden", "a/b", "", "x" * 256, "tab\tname"])
def test_a_bad_name_is_one_line(name: str, tmp_path: Path, data_dir: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(run_args(data_dir, tmp_path / "out", "--name", name, name=None), capsys)
    assert_one_line_error(code, err, contains="--name")
    assert not (tmp_path / "out").exists()


def test_a_lock_file_planted_as_a_link_is_never_followed(tmp_path: Path, data_dir: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The output lock sits beside the run's folder; a link planted in its place would make the open create a file
    wherever it points: refused in one line, nothing created there or in the output root."""
    from specrun.cli import main

    assert main([str(SPECS / "biosses.yaml"), "-q", "--adapter", "hashing", "--data-dir", str(data_dir),
                 "--no-cache", "--output", str(tmp_path / "first")]) == 0
    [folder] = (tmp_path / "first" / "biosses").iterdir()
    capsys.readouterr()
    root = tmp_path / "out"
    (root / "biosses").mkdir(parents=True)
    outside = tmp_path / "outside" / "planted"
    outside.parent.mkdir()
    (root / "biosses" / f".{folder.name}.lock").symlink_to(outside)
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "-q", "--adapter", "hashing", "--data-dir", str(data_dir),
                            "--no-cache", "--output", str(root)], capsys)
    assert "is a symbolic link" in assert_one_line_error(code, err)
    assert not outside.exists()
    assert files_under(root) == [f"biosses/.{folder.name}.lock"]
