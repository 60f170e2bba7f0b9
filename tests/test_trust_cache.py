"""Trust in the cache: estimate and plot entries and info.json carry a checksum (damage is reported once, removed
and recomputed, never served), and a cache folder that cannot be used stops the run in one line before any work,
while a cache disk that fills up mid-run costs one warning and no half-written file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specrun.encoders.shards import read_shard_header
from specrun.results import Results
from tests.conftest import SPECS, assert_one_line_error, files_under, run_cli, run_ok, run_subprocess, tmpfs

BIOSSES = str(SPECS / "biosses.yaml")
UNIQUE = 183
PNG = b"\x89PNG\r\n\x1a\n"


def hashing(tmp_path: Path, data_dir: Path, out: str, *extra: str) -> list[str]:
    return [BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache"),
            "--output", str(tmp_path / out), *extra]


def run_warned(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[Results, list[str]]:
    """Run, require success, and return the results with the warning lines."""
    from specrun.cli import main

    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    warnings = [line for line in captured.err.splitlines() if line.startswith("specrun: warning:")]
    return Results.model_validate_json(Path(captured.out.strip().splitlines()[-1]).read_text()), warnings


def derived_entries(cache: Path, kind: str) -> list[Path]:
    """The derived cache's estimate entries (JSON payload) or plot entries (PNG payload)."""
    found = []
    for path in sorted((cache / "derived").iterdir()):
        payload = path.read_bytes().partition(b"\n")[2]
        if (kind == "plot") == payload.startswith(PNG):
            found.append(path)
    return found


def info_files(cache: Path) -> list[Path]:
    """Every info.json, the one of the key without a prompt (the runs that check it) first."""
    def prompted(path: Path) -> bool:
        return json.loads((path.parent / "key.json").read_text()).get("prompt") != ""
    return sorted(cache.glob("embeddings/*/info.json"), key=lambda path: (prompted(path), path))


def damage(target: str, how: str, cache: Path) -> int:
    """Damage one cache entry of `target` in the way `how`; returns how many entries the next run must report."""
    entries = info_files(cache) if target == "info" else derived_entries(cache, target)
    path = entries[0]
    raw = path.read_bytes()
    if how == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif how == "garbage":
        path.write_bytes(b"\x00not a cache entry\xff" * 8)
    elif how == "edit" and target == "estimate":
        header, _, payload = raw.partition(b"\n")
        score = json.loads(payload)
        path.write_bytes(header + b"\n" + json.dumps({**score, "value": 0.99}).encode())
    elif how == "edit" and target == "plot":
        data = bytearray(raw)
        data[-100] ^= 0xFF
        path.write_bytes(bytes(data))
    elif how == "edit":  # info.json: a false device and max length, checksum left as it was
        stored = json.loads(raw)
        stored["info"].update(device="cuda:7", max_length=7, pooling="cls")
        path.write_text(json.dumps(stored))
    elif how == "swap":
        # one plot per run: it is swapped with an estimate
        other = derived_entries(cache, "estimate")[0] if target == "plot" else entries[1]
        other_raw = other.read_bytes()
        path.write_bytes(other_raw)
        other.write_bytes(raw)
        return 1 if target == "info" else 2  # a run reads only its own key's info.json
    return 1


TAMPERING = [(target, how) for target in ("estimate", "plot", "info")
             for how in ("truncate", "edit", "swap", "garbage")]


@pytest.mark.parametrize(("target", "how"), TAMPERING)
def test_a_damaged_cache_entry_is_reported_once_removed_and_recomputed(
        target: str, how: str, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    first = run_ok(hashing(tmp_path, data_dir, "a"), capsys)
    if target == "info":  # a second key, so there is another info.json to swap with
        run_ok(hashing(tmp_path, data_dir, "p", "--prompt", "query: "), capsys)
    before = {path.name: path.read_bytes() for path in (cache / "derived").iterdir()}
    expected_warnings = damage(target, how, cache)

    again, warnings = run_warned(hashing(tmp_path, data_dir, "b"), capsys)
    assert len(warnings) == expected_warnings, warnings
    assert all("specrun: warning: cache: ignored" in line for line in warnings), warnings
    assert again.scores == first.scores  # never the edited 0.99
    assert again.provenance.model == first.provenance.model  # never the edited device, max length, pooling
    assert again.texts.encoded == 0  # only the damaged entry is recomputed, not the vectors
    png = tmp_path / "b" / "biosses" / "sentence-transformers__all-MiniLM-L6-v2+adapter-hashing" / \
        "scatter-test-zero_shot.png"
    assert png.read_bytes() == (tmp_path / "a" / png.relative_to(tmp_path / "b")).read_bytes()
    assert {path.name: path.read_bytes() for path in (cache / "derived").iterdir()} == before  # rewritten whole

    third, warnings = run_warned(hashing(tmp_path, data_dir, "c"), capsys)
    assert warnings == [] and third.scores == first.scores


def test_info_json_is_checked_even_when_it_parses(tmp_path: Path, data_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """An info.json with the right key and checksum but fields of another version is not trusted either."""
    from specrun.encoders.store import info_checksum

    first = run_ok(hashing(tmp_path, data_dir, "a"), capsys)
    path = info_files(tmp_path / "cache")[0]
    stored = json.loads(path.read_text())
    stored["info"]["colour"] = "blue"
    stored["checksum"] = info_checksum(stored["key"], stored["info"])
    path.write_text(json.dumps(stored))
    again, warnings = run_warned(hashing(tmp_path, data_dir, "b"), capsys)
    assert len(warnings) == 1 and "unexpected fields" in warnings[0]
    assert again.provenance.model == first.provenance.model


# --- the cache folder itself ----------------------------------------------------------------------------------

def no_cache_at(path: Path) -> None:
    """Nothing of a cache was made there: the run stopped before writing anything."""
    assert not (path / "embeddings").exists() and not (path / "derived").exists()


CACHE_DIR_FAULTS = ["is-a-file", "below-a-file", "read-only", "env-is-a-file", "xdg-is-a-file"]


@pytest.mark.parametrize("case", CACHE_DIR_FAULTS)
def test_an_unusable_cache_dir_is_one_line_before_any_work(case: str, tmp_path: Path, data_dir: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    args = [BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--output", str(tmp_path / "out")]
    expected = str(blocker)
    if case == "is-a-file":
        args += ["--cache-dir", str(blocker)]
    elif case == "below-a-file":
        args += ["--cache-dir", str(blocker / "cache")]
    elif case == "env-is-a-file":
        monkeypatch.setenv("SPECRUN_CACHE_DIR", str(blocker))
        expected = "$SPECRUN_CACHE_DIR"
    elif case == "xdg-is-a-file":
        monkeypatch.delenv("SPECRUN_CACHE_DIR")
        monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
        expected = "$XDG_CACHE_HOME"
    if case == "read-only":
        with tmpfs(tmp_path / "ro", read_only=True) as folder:
            code, _, err = run_cli([*args, "--cache-dir", str(folder)], capsys)
            assert files_under(folder) == []
        expected = "Read-only file system"
    else:
        code, _, err = run_cli(args, capsys)
    line = assert_one_line_error(code, err, contains=expected)
    assert "--cache-dir DIR" in line and "--no-cache" in line
    assert blocker.read_text() == "not a folder"
    assert files_under(tmp_path / "out") == []


HOME_FAULTS = ["missing", "a-file"]


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize("case", HOME_FAULTS)
def test_an_unusable_home_is_one_line_naming_it(case: str, tmp_path: Path, data_dir: Path) -> None:
    home = tmp_path / "home"
    if case == "a-file":
        home.write_text("not a folder")
    env = {"HOME": str(home), "SPECRUN_CACHE_DIR": None, "XDG_CACHE_HOME": None,
           "MPLCONFIGDIR": str(tmp_path / "mpl")}
    done = run_subprocess([BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--output",
                           str(tmp_path / "out")], env=env, timeout=120)
    line = assert_one_line_error(done.returncode, done.stderr, contains=str(home))
    assert "$HOME" in line and "--cache-dir DIR" in line and "--no-cache" in line
    assert home.exists() is (case == "a-file")  # a missing home is never created
    assert files_under(tmp_path / "out") == []


@pytest.mark.slow  # a real model or several processes: the full suite runs it
@pytest.mark.parametrize("flag", ["--no-cache", "--cache-dir"])
def test_a_missing_home_is_fine_with_no_cache_or_a_cache_dir(flag: str, tmp_path: Path, data_dir: Path) -> None:
    home = tmp_path / "home"
    cache = tmp_path / "cache"
    env = {"HOME": str(home), "SPECRUN_CACHE_DIR": None, "XDG_CACHE_HOME": None,
           "MPLCONFIGDIR": str(tmp_path / "mpl")}
    extra = ["--no-cache"] if flag == "--no-cache" else ["--cache-dir", str(cache)]
    done = run_subprocess([BIOSSES, "-q", "--data-dir", str(data_dir), "--output", str(tmp_path / "out"),
                           "--adapter", "hashing", *extra], env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not home.exists()
    results = Results.model_validate_json(Path(done.stdout.strip().splitlines()[-1]).read_text())
    assert results.texts.encoded == UNIQUE
    if flag == "--cache-dir":  # everything the run remembers, file hashes included, is under --cache-dir
        assert (cache / "file-hashes").is_dir() and list(cache.glob("embeddings/*/*.shard"))
    else:
        assert not cache.exists()


@pytest.mark.parametrize("size", ["4k", "32k"])
def test_a_full_cache_disk_is_one_warning_and_nothing_half_written(size: str, tmp_path: Path, data_dir: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The documented choice (cache.CacheWriter): the run goes on without caching, with the same numbers."""
    reference = run_ok([BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--no-cache",
                        "--output", str(tmp_path / "ref")], capsys)
    with tmpfs(tmp_path / "full", size) as cache:
        args = [BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--cache-dir", str(cache)]
        for out in ("a", "b"):
            results, warnings = run_warned([*args, "--output", str(tmp_path / out)], capsys)
            assert len(warnings) == 1 and "No space left on device" in warnings[0], warnings
            assert "continues without caching" in warnings[0]
            assert results.scores == reference.scores and results.texts.encoded == UNIQUE
        left = files_under(cache)
        assert not [name for name in left if name.endswith(".tmp")], left
        for name in left:  # whatever shard made it is whole (its size matches its header)
            if name.endswith(".shard"):
                read_shard_header(cache / name)


@pytest.mark.parametrize("change", ["rewritten", "truncated"])
def test_a_shard_changed_between_its_check_and_its_use_ends_the_run_in_one_line(
        change: str, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm run's shards are verified at lookup; another process then rewrites one in place (the scores would
    move silently through a memory map) or truncates it (a memory map would die of SIGBUS, exit 135): the run
    ends in one line, exit 2, and writes no results."""
    from specrun.encoders.store import EmbeddingCache

    assert run_ok(hashing(tmp_path, data_dir, "cold"), capsys).texts.encoded == UNIQUE
    looked_up = EmbeddingCache.lookup

    def lookup_then_change(self: EmbeddingCache, texts: list[str]) -> object:
        found = looked_up(self, texts)
        for shard in self.shards():
            with shard.open("r+b") as handle:
                if change == "rewritten":
                    handle.seek(-4, 2)
                    handle.write(b"\0\0\x80\x7f")
                else:
                    handle.truncate(shard.stat().st_size // 2)
        return found

    monkeypatch.setattr(EmbeddingCache, "lookup", lookup_then_change)
    code, _, err = run_cli(hashing(tmp_path, data_dir, "warm"), capsys)
    assert "changed on disk after it was verified" in assert_one_line_error(code, err)
    assert files_under(tmp_path / "warm") == []
    monkeypatch.setattr(EmbeddingCache, "lookup", looked_up)
    again, warnings = run_warned(hashing(tmp_path, data_dir, "again"), capsys)
    assert again.texts.encoded == UNIQUE and warnings  # every changed shard reported, dropped and encoded again


@pytest.mark.slow  # a fresh process
def test_fifos_and_links_to_devices_in_the_cache_are_ignored_never_read(tmp_path: Path, data_dir: Path) -> None:
    """A FIFO in place of a shard, of info.json, of a derived entry and of a file-hash memo (an open for reading
    would block for ever), and a shard that is a link to /dev/zero: each is reported, removed and recomputed; the
    run ends, with the numbers of the cold run."""
    cache = tmp_path / "cache"
    weights = bytes(range(256)) * 8192  # 2 MiB: its hash is remembered
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(weights)
    cold = run_subprocess([*hashing(tmp_path, data_dir, "cold"), "--model", str(model), "--batch-size", "4"],
                          timeout=120)  # groups of 64 texts: several shards
    assert cold.returncode == 0, cold.stderr
    shards = sorted(cache.glob("embeddings/*/*.shard"))
    [info] = cache.glob("embeddings/*/info.json")
    derived = sorted((cache / "derived").iterdir())
    memos = sorted((cache / "file-hashes").iterdir())
    assert shards and derived and memos
    for path in (shards[0], info, derived[0], memos[0]):
        path.unlink()
        os.mkfifo(path)
    shards[1].unlink()
    shards[1].symlink_to("/dev/zero")
    warm = run_subprocess([*hashing(tmp_path, data_dir, "warm"), "--model", str(model), "--batch-size", "4"],
                          timeout=120)
    assert warm.returncode == 0, warm.stderr
    # two shards and the estimate are reported; the memo is silently hashed again; info.json is rewritten (the
    # model had texts to encode, so it stated its settings)
    assert "Traceback" not in warm.stderr and warm.stderr.count("specrun: warning: cache: ignored") == 3
    first = Results.model_validate_json(Path(cold.stdout.strip().splitlines()[-1]).read_text())
    second = Results.model_validate_json(Path(warm.stdout.strip().splitlines()[-1]).read_text())
    assert second.scores == first.scores and 0 < second.texts.encoded < UNIQUE
    assert second.provenance.model.weights_sha256 == first.provenance.model.weights_sha256
    assert not [path for path in cache.rglob("*") if path.is_fifo() or path.is_symlink()]
    info.unlink()
    os.mkfifo(info)  # now every vector is cached: the run reads info.json instead of loading the model
    third = run_subprocess([*hashing(tmp_path, data_dir, "third"), "--model", str(model), "--batch-size", "4"],
                           timeout=120)
    assert third.returncode == 0 and "ignored info.json" in third.stderr, third.stderr
    assert Results.model_validate_json(Path(third.stdout.strip().splitlines()[-1]).read_text()).scores == first.scores


@pytest.mark.slow  # a fresh process
def test_no_cache_leaves_no_matplotlib_font_cache_under_home(tmp_path: Path, data_dir: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "SPECRUN_CACHE_DIR": None, "XDG_CACHE_HOME": None, "XDG_CONFIG_HOME": None,
           "MPLCONFIGDIR": None}
    done = run_subprocess([BIOSSES, "-q", "--data-dir", str(data_dir), "--output", str(tmp_path / "out"),
                           "--adapter", "hashing", "--no-cache"], env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    results = Results.model_validate_json(Path(done.stdout.strip().splitlines()[-1]).read_text())
    assert results.plots  # the scatter was drawn, so matplotlib ran
    assert files_under(home) == []


def test_a_folder_in_place_of_info_json_is_reported_once_and_repaired(tmp_path: Path, data_dir: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """It was never removed, so every later run warned and ran without the stored settings (issue 32)."""
    first = run_ok(hashing(tmp_path, data_dir, "a"), capsys)
    (info,) = info_files(tmp_path / "cache")
    info.unlink()
    info.mkdir()
    (info / "junk").write_text("x", encoding="utf-8")
    again, warnings = run_warned(hashing(tmp_path, data_dir, "b"), capsys)
    assert len(warnings) == 1 and "ignored info.json" in warnings[0] and again.scores == first.scores
    assert info.is_file()  # stored again, as a file
    third, warnings = run_warned(hashing(tmp_path, data_dir, "c"), capsys)
    assert warnings == [] and third.scores == first.scores
