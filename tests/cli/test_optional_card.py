"""A local spec may leave out `card`: it validates and runs, its report has no card sections (one line on stderr
says so), `specrun card` renders nothing, and publishing is refused in one line listing the card's keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from specrun.publish.licence import card_keys
from specrun.spec import load_spec
from tests.conftest import SPECS, assert_one_line_error, run_cli

KEYS = "what_is_measured, data, items, uncertainty, caveats, examples (count, heading, columns)"


def without_card(folder: Path) -> Path:
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8")
    start, end = text.index("\ncard:\n"), text.index("\ncitation:")
    path = folder / "biosses.yaml"
    path.write_text(text[:start + 1] + text[end + 1:], encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def cardless_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, Path, str]:
    from specrun.cli import main

    folder = tmp_path_factory.mktemp("cardless")
    spec = without_card(folder)
    out = folder / "results"
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main([str(spec), "--data-dir", str(data_dir), "--adapter", "hashing", "--output", str(out),
                     "-q"]) == 0
    return spec, next(out.rglob("results.json")), err.getvalue()


def test_the_card_keys_are_listed_from_the_model() -> None:
    assert card_keys() == KEYS  # items_label has a default: not required


def test_a_spec_without_card_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = without_card(tmp_path)
    assert load_spec(path).spec.card is None
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert code == 0 and "(biosses)" in out + err, err


def test_card_renders_nothing_and_says_so(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = without_card(tmp_path)
    code, out, err = run_cli(["card", str(path), "--data-dir", str(data_dir)], capsys)
    assert code == 0 and out == ""
    assert err.strip() == f"specrun: {path} has no `card`: no card rendered"


def test_the_run_writes_a_report_without_card_sections(cardless_run: tuple[Path, Path, str],
                                                       capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    spec, results, err = cardless_run
    assert "specrun: note: biosses has no `card`: report.md has no card sections" in err
    report = (results.parent / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# Biomedical sentence similarity (BIOSSES)\n\n> Licence to confirm")
    for gone in ("**What is measured.**", "**Data.**", "**Items (exc).**", "**Uncertainty.**", "**Caveats.**",
                 "| item_id |"):
        assert gone not in report
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert headings == ["## Data", "## Subset", "## Metrics", "## Results", "## Provenance", "## Citation"]
    assert "**Zero-shot (pearson_zero_shot, spearman_zero_shot; capability embed.text.pooled).**" in report
    code, out, err = run_cli(["card", str(spec), "--results", str(results), "--data-dir", str(data_dir)], capsys)
    assert code == 0 and out == report  # the report, rendered again from results.json
    assert err.strip() == f"specrun: {spec} has no `card`: the report has no card sections"


def test_publish_refuses_in_one_line_naming_the_keys(cardless_run: tuple[Path, Path, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    spec, results, _ = cardless_run
    code, out, err = run_cli(["publish", str(results), "--benchmark", "specrun/biosses", "--spec", str(spec),
                              "--confirm-licence", "ok"], capsys)
    line = assert_one_line_error(code, err, contains="has no `card`, which publishing needs")
    assert line.endswith(f"add `card:` with {KEYS}") and out == ""
    code, out, err = run_cli(["publish-benchmark", str(spec), "--confirm-licence", "ok"], capsys)
    line = assert_one_line_error(code, err, contains=f"spec {spec} has no `card`")
    assert line.endswith(KEYS) and out == ""
