"""The leaderboard page's filters (language, task type, domain, model size, search), sticky headers and width,
driven in headless Chromium on a board of hashing runs over three specs of different languages and task types."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from specrun.leaderboard import Leaderboard
from specrun.leaderboard.facets import filter_options, size_bucket, spec_facets
from specrun.leaderboard.render import render_html
from specrun.results.verify import load_verified
from tests.conftest import SPECS
from tests.leaderboard.test_leaderboard import chromium_driver

LONG_PROMPT = "b-" + "averyverylongpromptwithoutspaces" * 4  # a long label: the page must still fit 1280 px
RUNS = {  # folder -> (spec, prompt): two prompts on BIOSSES (en, STS, Medical), one each on JSTS and BANKING77
    "bio-a": ("biosses", "a: "), "bio-b": ("biosses", LONG_PROMPT), "jsts-a": ("jsts", "a: "),
    "bank-b": ("banking77", LONG_PROMPT),
}


def test_size_buckets() -> None:
    assert [size_bucket(n) for n in (None, 0, 99_999_999, 10**8, 10**9 - 1, 10**9)] == [
        "unknown", "<100M", "<100M", "100M–1B", "100M–1B", ">1B"]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, Leaderboard]:
    """The board of the four runs, its models given sizes (hashing records none): one <100M, one >1B."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("page-runs")
    for name, (spec, prompt) in RUNS.items():
        assert main([str(SPECS / f"{spec}.yaml"), "--data-dir", str(data_dir), "-q", "--adapter", "hashing",
                     "--prompt", prompt, "--output", str(out / name)]) == 0
    board_dir = tmp_path_factory.mktemp("page")
    assert main(["leaderboard", str(out), "-o", str(board_dir), "--title", "Filter board"]) == 0
    board = Leaderboard.model_validate_json((board_dir / "leaderboard.json").read_text())
    sizes = {label: (50 * 10**6 if '"a: "' in label else 2 * 10**9) for label in (m.label for m in board.models)}
    board = board.model_copy(update={"models": [m.model_copy(update={"n_parameters": sizes[m.label]})
                                                for m in board.models]})
    path = board_dir / "sized.html"
    path.write_text(render_html(board))
    return path, board


@pytest.mark.slow  # real data and several runs: the full suite runs it
def test_board_records_each_specs_filters(page: tuple[Path, Leaderboard]) -> None:
    _, board = page
    got = {s.spec_id: (s.languages, s.task_types, s.domains) for s in board.specs}
    assert got == {"biosses": (["eng-Latn"], ["STS"], ["Medical"]), "jsts": (["jpn-Jpan"], ["STS"], []),
                   "banking77": (["eng-Latn"], ["Classification"], [])}
    options = filter_options(board)
    assert options["languages"] == [("eng-Latn", 2), ("jpn-Jpan", 1)]
    assert options["domains"] == [("Medical", 1), ("unknown", 2)]
    assert options["size"] == [("<100M", 1), (">1B", 1)]


@pytest.mark.slow  # a real run: the full suite runs it
def test_a_spec_not_found_leaves_languages_and_domains_unknown(tmp_path: Path, data_dir: Path) -> None:
    from specrun.cli import main

    spec = tmp_path / "biosses.yaml"
    spec.write_text((SPECS / "biosses.yaml").read_text() + "# a copy: other bytes, so specs/ holds no match\n")
    assert main([str(spec), "--data-dir", str(data_dir), "-q", "--adapter", "hashing",
                 "--output", str(tmp_path / "out")]) == 0
    spec.unlink()
    run = load_verified(next((tmp_path / "out").rglob("results.json")))
    assert spec_facets(run) == {"languages": [], "domains": [], "task_types": ["STS"]}


@pytest.mark.slow  # a real browser: the full suite runs it
def test_filters_in_a_real_browser(page: tuple[Path, Leaderboard]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    path, board = page
    page_text = path.read_text()
    assert "http://" not in page_text and "https://" not in page_text and "<link" not in page_text
    small = next(m.label for m in board.models if '"a: "' in m.label)
    large = next(m.label for m in board.models if m.label != small)
    driver = chromium_driver()
    try:
        driver.set_window_size(1280, 900)
        driver.get(path.resolve().as_uri())
        assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0

        def sections() -> set[str]:
            return {s.get_attribute("data-spec") for s in driver.find_elements(By.CSS_SELECTOR, "section.spec")
                    if s.is_displayed()}

        def rows(selector: str) -> list[str]:
            return [r.get_attribute("data-model") for r in driver.find_elements(By.CSS_SELECTOR, selector)
                    if r.is_displayed()]

        def benchmarks() -> set[str]:
            return {r.get_attribute("data-spec") for r in driver.find_elements(
                By.CSS_SELECTOR, "#benchmarks-table tbody tr") if r.is_displayed()}

        def choose(facet: str, value: str) -> None:
            Select(driver.find_element(By.ID, f"filter-{facet}")).select_by_value(value)

        def shown_again(condition: Callable[[], bool]) -> None:
            """The form's reset event fires before its fields are reset, so the page filters again in a task of
            its own (setTimeout 0): wait for that task, up to 5 s, instead of reading the page at once."""
            WebDriverWait(driver, 5).until(lambda _: condition())

        def no_sideways_scroll() -> bool:  # the window is 1280 px wide; its scrollbar takes some of it
            return driver.execute_script("var d = document.documentElement; "
                                         "return d.scrollWidth <= d.clientWidth && d.clientWidth <= 1280")

        every = {"biosses", "jsts", "banking77"}
        assert sections() == every and benchmarks() == every
        assert sorted(rows("#overall-table tbody tr")) == sorted([small, large])
        assert no_sideways_scroll()

        choose("languages", "jpn-Jpan")
        assert sections() == benchmarks() == {"jsts"}
        assert set(rows("section.spec[data-spec=jsts] table.board tbody tr")) == {small}
        assert sorted(rows("#overall-table tbody tr")) == sorted([small, large])  # a language hides no model
        assert "Showing 1 of 3 benchmark(s)" in driver.find_element(By.ID, "filter-status").text
        choose("languages", "")
        choose("task_types", "Classification")
        assert sections() == benchmarks() == {"banking77"}
        choose("task_types", "STS")
        assert sections() == {"biosses", "jsts"}
        choose("task_types", "")
        choose("domains", "Medical")
        assert sections() == {"biosses"}
        choose("domains", "unknown")
        assert sections() == {"jsts", "banking77"}
        choose("domains", "")

        choose("size", ">1B")  # model rows hidden; a benchmark with none of them left is hidden too
        assert rows("#overall-table tbody tr") == [large]
        assert sections() == {"biosses", "banking77"}
        assert rows("section.spec[data-spec=biosses] table.board tbody tr") == [large] * len(
            driver.find_elements(By.CSS_SELECTOR, "section.spec[data-spec=biosses] table.board"))
        assert set(rows("section.spec[data-spec=banking77] table.board tbody tr")) == {large}
        driver.find_element(By.ID, "filter-reset").click()
        shown_again(lambda: sections() == every and len(rows("#overall-table tbody tr")) == 2)

        box = driver.find_element(By.ID, "filter-search")
        box.send_keys("jsts")  # a benchmark id: that benchmark, every model
        assert sections() == {"jsts"} and len(rows("#overall-table tbody tr")) == 2
        box.clear()
        box.send_keys("AVERYVERYLONG")  # a model label, any case: its rows only
        assert rows("#overall-table tbody tr") == [large] and sections() == {"biosses", "banking77"}
        box.clear()
        box.send_keys("no such thing")
        assert sections() == set() and rows("#overall-table tbody tr") == []
        assert "ranks are over all of them" in driver.find_element(By.ID, "filter-status").text
        assert "never re-rank" in driver.find_element(By.ID, "filter-note").text
        driver.find_element(By.ID, "filter-reset").click()
        shown_again(lambda: sections() == every)

        table = driver.find_element(By.ID, "overall-table")
        top = driver.execute_script("return arguments[0].getBoundingClientRect().top + window.scrollY", table)
        driver.execute_script("window.scrollTo(0, arguments[0])", top + 25)
        head = table.find_element(By.CSS_SELECTOR, "thead th")
        assert driver.execute_script("return arguments[0].getBoundingClientRect().top", head) == 0
        assert driver.execute_script("return arguments[0].getBoundingClientRect().top", table) < 0
        assert no_sideways_scroll()
    finally:
        driver.quit()
    shutil.rmtree(path.parent, ignore_errors=True)
