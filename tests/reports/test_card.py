"""The card renders exactly in the seed-001 format."""

from __future__ import annotations

from pathlib import Path

import pytest

from specrun.data import load_split
from specrun.reports import metric_lines, render_card, source_lines, subset_lines
from specrun.spec import load_spec
from tests.conftest import SEEDS, SPECS, plan_of, run_cli, run_ok

SEED_CARD = SEEDS / "001_927b26562a42dfc8.txt"


@pytest.fixture(scope="module")
def seed_card() -> str:
    if not SEED_CARD.is_file():
        pytest.fail(f"seed card missing: {SEED_CARD}")
    return SEED_CARD.read_text(encoding="utf-8")


def test_card_command_reproduces_the_seed_card(tmp_path: Path, data_dir: Path, seed_card: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The card is Markdown; rendered and copied as text, it is the seed card line for line, with or without a
    citation in the spec (the seed card has no citation section; the report and the hub card carry it)."""
    from tests.reports.test_card_render import rendered_text, without_citation

    code, out, err = run_cli(["card", str(without_citation(tmp_path)), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    assert rendered_text(out).splitlines() == seed_card.rstrip("\n").splitlines()
    code, out, err = run_cli(["card", str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    assert rendered_text(out).splitlines() == seed_card.rstrip("\n").splitlines()  # the citation is not shown


def test_structured_lines_match_the_seed(seed_card: str) -> None:
    spec = load_spec(SPECS / "biosses.yaml").spec
    lines = seed_card.splitlines()
    for line in source_lines(spec) + subset_lines(spec) + metric_lines(spec):
        assert f"• {line}" in lines
    assert "• seed 20261006" in lines
    assert ("• biosses: hf_dataset tabilab/biosses at revision 2394a2eda8dae34a30f68f0770775fd5c2e863bd, "
            "licence gpl-3.0") in lines


def test_example_rows_are_the_first_items_numbered_by_row(data_dir: Path, seed_card: str) -> None:
    items = load_split(plan_of(SPECS / "biosses.yaml"), "test", data_dir).items
    assert [item.id for item in items[:3]] == ["biosses-000", "biosses-001", "biosses-002"]
    assert items[-1].id == "biosses-099"
    table = seed_card.split("item_id\tsentence 1\tsentence 2\tgold\n")[1].splitlines()
    for item, row in zip(items[:3], table, strict=True):
        assert row == "\t".join([item.id, item.fields["text1"], item.fields["text2"], repr(item.fields["gold"])])


def test_licence_notice_only_while_unconfirmed(tmp_path: Path, data_dir: Path) -> None:
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8").replace("publication: unconfirmed",
                                                                        "publication: confirmed")
    confirmed = tmp_path / "biosses.yaml"
    confirmed.write_text(text, encoding="utf-8")
    plan = plan_of(confirmed)
    card = render_card(plan.spec, load_split(plan, "test", data_dir).items)
    assert "Licence to confirm" not in card
    assert card.startswith("# Biomedical sentence similarity (BIOSSES)\n\n**What is measured.**")


def test_card_html_written_elsewhere_carries_its_plot(tmp_path: Path, data_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`card --results R --html -o elsewhere.html`: the scatter is inside the page (a data URI), not a path
    relative to the results folder that the page's folder lacks."""
    pytest.importorskip("matplotlib")
    results = run_ok([str(SPECS / "biosses.yaml"), "-q", "--adapter", "hashing", "--data-dir", str(data_dir),
                      "--no-cache", "--output", str(tmp_path / "runs")], capsys)
    assert results.plots, "the run wrote no plot"
    results_json = next((tmp_path / "runs").rglob("results.json"))
    page = tmp_path / "elsewhere" / "page.html"
    page.parent.mkdir()
    code, _, err = run_cli(["card", str(SPECS / "biosses.yaml"), "--results", str(results_json), "--data-dir",
                            str(data_dir), "--no-cache", "--html", "-o", str(page)], capsys)
    assert code == 0, err
    html = page.read_text()
    assert html.count('src="data:image/png;base64,') == len(results.plots)
    for file in results.plots.values():
        assert f'src="{file}"' not in html


def test_a_page_of_several_languages_names_one_in_its_html_lang(tmp_path: Path, data_dir: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """<html lang> takes one language tag: a bitext spec's page takes its first (it once wrote lang="ja,en")."""
    import re

    page = tmp_path / "t.html"
    code, _, err = run_cli(["card", str(SPECS / "tatoeba.yaml"), "--subset", "jpn-eng", "--data-dir", str(data_dir),
                            "--no-cache", "--html", "-o", str(page)], capsys)
    assert code == 0, err
    lang = re.search(r'<html lang="([^"]*)"', page.read_text(encoding="utf-8"))
    assert lang is not None and re.fullmatch(r"[a-z]{2,3}", lang.group(1)), lang
