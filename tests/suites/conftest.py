"""The small world every suite test runs in: BIOSSES from the mirror and a QABot fixture, their specs, and a
suites folder; `write_suite` puts a suite of `MEMBERS` (or others) into it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import SPECS
from tests.fixtures import fixture_spec, make_qabot

MEMBERS = [{"spec": "../specs/biosses.yaml", "metric": "spearman_zero_shot"},
           {"spec": "../specs/biosses.yaml", "metric": "pearson_zero_shot", "weight": 3},
           {"spec": "../specs/qabot.yaml", "metric": "map"}]


@pytest.fixture
def world(tmp_path: Path, data_dir: Path) -> Path:
    """tmp/data (BIOSSES from the mirror, a QABot fixture), tmp/specs (their specs), tmp/suites."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "biosses").symlink_to((data_dir / "biosses").resolve())  # SPECRUN_DATA_DIR may be relative
    make_qabot(data)
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(SPECS / "biosses.yaml", specs / "biosses.yaml")
    fixture_spec("qabot", specs, data)
    (tmp_path / "suites").mkdir()
    return tmp_path


def write_suite(world: Path, members: list[dict], suite_id: str = "mini", **extra: object) -> Path:
    document = {"id": suite_id, "title": "A small suite", "version": "1", "description": "Two STS scores, one "
                "retrieval score.", "members": members, **extra}
    path = world / "suites" / f"{suite_id}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path
