"""The leaderboard page's filters (language, task type, domain, model size, search), sticky headers and width,
driven in headless Chromium on a board of hashing runs over three specs of different languages and task types;
then a board with published rows (one table, ours marked) and their filters: open weights, release year, flags."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from specrun.board import Leaderboard
from specrun.board.leaderboard.facets import filter_options, size_bucket, spec_facets
from specrun.board.leaderboard.render import render_html
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


# ------------------------------------------------------------------------------------------ published rows

HOSTILE = '<img src=x onerror="document.title=1">'  # a licence string: the page must show it as text
PUBLISHED = {  # folder -> (revision, score, dataset revision, model_meta.json or None); ours score in (-0.8, 0.97)
    "org__small-open": ("r1", 0.999, None, {"n_parameters": 22_713_216, "open_weights": True,
                                            "release_date": "2021-08-30", "license": "apache-2.0"}),
    "org__big-closed": ("r1", 0.99, None, {"n_parameters": 7 * 10**9, "open_weights": False,
                                           "release_date": "2024-01-15", "license": HOSTILE}),
    "org__old-revision": ("r1", 0.98, "0" * 40, {"n_parameters": 3 * 10**8, "release_date": "2022-03-01"}),
    "org__from-elsewhere": ("external", -0.8, None, {"n_parameters": 3 * 10**8, "open_weights": True,
                                                     "release_date": "2019-05-01", "max_tokens": 512.0}),
    "org__no-meta": ("r1", -0.9, None, None),
}


def write_published_tree(root: Path) -> Path:
    """STSBenchmark for five models (mteb 2.x files, tests/mteb/results), each with its model_meta.json but one."""
    import json

    from tests.mteb.results.test_published import task_file_2x, write_published

    for folder, (revision, score, dataset_revision, meta) in PUBLISHED.items():
        document = task_file_2x("STSBenchmark", {"cosine_spearman": score, "cosine_pearson": score})
        if dataset_revision:
            document["dataset_revision"] = dataset_revision
        path = write_published(root, "STSBenchmark", document, model=folder, revision=revision)
        if meta is not None:
            (path.parent / "model_meta.json").write_text(json.dumps({"name": folder.replace("__", "/"), **meta}))
    return root


@pytest.fixture(scope="module")
def published_page(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, Leaderboard]:
    """Two hashing runs of STSBenchmark (two prompts) ranked with the five published models."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("published-runs")
    for name, prompt in (("a", "a: "), ("b", "b: ")):
        assert main([str(SPECS / "stsb.yaml"), "--data-dir", str(data_dir), "-q", "--adapter", "hashing",
                     "--prompt", prompt, "--output", str(out / name)]) == 0
    root = write_published_tree(tmp_path_factory.mktemp("published") / "results")
    board_dir = tmp_path_factory.mktemp("published-page")
    assert main(["leaderboard", str(out), "-o", str(board_dir), "--published", str(root), "--title", "Beside"]) == 0
    return board_dir, Leaderboard.model_validate_json((board_dir / "leaderboard.json").read_text())


def test_published_rows_carry_model_meta(tmp_path: Path) -> None:
    """published_rows copies each model's model_meta.json record; leaderboard.json round-trips it; the page's
    filter values read it (open weights yes/no/unknown, release date, size bucket, flags)."""
    from specrun.board.leaderboard.facets import published_facets
    from specrun.board.leaderboard.model import PublishedRow
    from specrun.board.leaderboard.published import published_rows
    from specrun.mteb.results import PublishedDir
    from specrun.mteb.score_ref import MtebRef

    root = write_published_tree(tmp_path / "results")
    found = PublishedDir(root).every_model(MtebRef(task="STSBenchmark", split="test", score="cosine_spearman"))
    rows = {r.model: r for r in published_rows(found, "STS")}
    assert set(rows) == {folder.replace("__", "/") for folder in PUBLISHED}
    small, big = rows["org/small-open"].meta, rows["org/big-closed"].meta
    assert small is not None and big is not None and rows["org/no-meta"].meta is None
    assert (small.n_parameters, small.open_weights, small.release_date, small.license) == (
        22_713_216, True, "2021-08-30", "apache-2.0")
    assert big.license == HOSTILE and small.file == "org__small-open/r1/model_meta.json"
    assert rows["org/from-elsewhere"].meta.max_tokens == 512  # type: ignore[union-attr]
    for row in rows.values():
        assert PublishedRow.model_validate_json(row.model_dump_json()) == row
    assert {m: published_facets(r) for m, r in rows.items()} == {
        "org/small-open": {"size": "<100M", "open": "yes", "released": "2021-08-30", "flags": ""},
        "org/big-closed": {"size": ">1B", "open": "no", "released": "2024-01-15", "flags": ""},
        "org/old-revision": {"size": "100M–1B", "open": "unknown", "released": "2022-03-01",
                             "flags": "dataset_revision"},
        "org/from-elsewhere": {"size": "100M–1B", "open": "yes", "released": "2019-05-01", "flags": "external"},
        "org/no-meta": {"size": "unknown", "open": "unknown", "released": "", "flags": ""}}


@pytest.mark.slow  # two runs on the real data: the full suite runs it
def test_leaderboard_json_carries_the_published_meta(published_page: tuple[Path, Leaderboard]) -> None:
    from specrun.board.leaderboard.facets import published_options, release_years
    from specrun.board.leaderboard.render import table_rows

    board_dir, board = published_page
    boards = [b for spec in board.specs for b in spec.boards if b.published]
    assert len(boards) == 2  # spearman and pearson: both have an MTEB counterpart
    for b in boards:
        by_model = {p.model: p for p in b.published}
        assert by_model["org/big-closed"].meta.n_parameters == 7 * 10**9  # type: ignore[union-attr]
        assert by_model["org/no-meta"].meta is None
        order = [(kind, row.model) for kind, row in table_rows(b)]  # one table: ours among the published
        assert [m for kind, m in order if kind == "published"][:3] == [
            "org/small-open", "org/big-closed", "org/old-revision"]
        assert [kind for kind, _ in order] == ["published"] * 3 + ["ours"] * 2 + ["published"] * 2
        assert [r.published_rank for r in b.rows] == [4, 5]  # ours by their own rank, between the points
    raw = (board_dir / "leaderboard.json").read_text()
    assert '"release_date": "2021-08-30"' in raw and '"open_weights": false' in raw
    options = published_options(board)
    assert options == {"open_weights": [("yes", 2), ("no", 1), ("unknown", 2)],
                       "flags": [("dataset_revision", 2), ("external", 2)]}  # rows: two boards each
    assert release_years(board) == (2019, 2024)
    assert filter_options(board)["size"] == [("<100M", 1), ("100M–1B", 2), (">1B", 1), ("unknown", 3)]


@pytest.mark.slow  # a real browser: the full suite runs it
def test_published_filters_in_a_real_browser(published_page: tuple[Path, Leaderboard]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from specrun.results import confidence_percent

    board_dir, board = published_page
    path = board_dir / "leaderboard.html"
    text = path.read_text()
    assert HOSTILE not in text and "&lt;img src=x onerror=&#34;document.title=1&#34;&gt;" in text
    ours = sorted(m.label for m in board.models)
    spearman = next(b for b in board.specs[0].boards if b.metric == "spearman_zero_shot")
    driver = chromium_driver()
    try:
        driver.set_window_size(1280, 900)
        driver.get(path.resolve().as_uri())
        assert driver.title == "Beside" and driver.find_elements(By.TAG_NAME, "img") == []  # inert
        assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
        table = 'table.board[data-metric="spearman_zero_shot"]'

        def shown() -> list[tuple[str, str]]:
            """(kind, model) of the visible rows of the spearman board, top to bottom."""
            return [(r.get_attribute("data-kind"), r.get_attribute("data-model").split(" (published")[0])
                    for r in driver.find_elements(By.CSS_SELECTOR, f"{table} tbody tr") if r.is_displayed()]

        def published() -> list[str]:
            return [m for kind, m in shown() if kind == "published"]

        def ours_shown() -> list[str]:
            return sorted(m for kind, m in shown() if kind == "ours")

        def choose(element: str, value: str) -> None:
            Select(driver.find_element(By.ID, element)).select_by_value(value)

        def year(element: str, value: str) -> None:
            box = driver.find_element(By.ID, element)
            box.clear()
            if value:
                box.send_keys(value)

        everything = ["org/small-open", "org/big-closed", "org/old-revision", "org/from-elsewhere", "org/no-meta"]
        rows = driver.find_elements(By.CSS_SELECTOR, f"{table} tbody tr")
        assert [kind for kind, _ in shown()] == ["published"] * 3 + ["ours"] * 2 + ["published"] * 2
        assert published() == everything and ours_shown() == ours
        first = rows[0].find_elements(By.TAG_NAME, "td")
        assert first[0].text == "1 (a point: no interval)" and "a point: no interval" in first[2].text
        assert first[1].text.startswith("published org/small-open") and first[6].text == "yes"
        mine = rows[3].find_elements(By.TAG_NAME, "td")
        assert mine[1].text.startswith("ours ") and "among ours" in mine[0].text
        assert mine[8].text == f"ours: a {confidence_percent(board.specs[0].confidence)} interval"
        assert "ours" in rows[3].get_attribute("class").split()
        status = driver.find_element(By.ID, "filter-status")
        assert "10 of 10 published row(s)" in status.text

        choose("filter-open_weights", "yes")  # published metadata: ours stay
        assert published() == ["org/small-open", "org/from-elsewhere"] and ours_shown() == ours
        choose("filter-open_weights", "no")
        assert published() == ["org/big-closed"] and ours_shown() == ours
        driver.find_element(By.ID, "filter-ours-too").click()  # ... unless asked: ours record no open weights
        assert published() == ["org/big-closed"] and ours_shown() == []
        choose("filter-open_weights", "unknown")
        assert published() == ["org/old-revision", "org/no-meta"] and ours_shown() == ours
        driver.find_element(By.ID, "filter-ours-too").click()
        choose("filter-open_weights", "")

        year("filter-released-from", "2021")
        year("filter-released-to", "2022")
        assert published() == ["org/small-open", "org/old-revision"] and ours_shown() == ours
        year("filter-released-to", "")
        assert published() == ["org/small-open", "org/big-closed", "org/old-revision"]
        year("filter-released-from", "")
        year("filter-released-to", "2020")  # no date: hidden by a bound
        assert published() == ["org/from-elsewhere"] and ours_shown() == ours
        year("filter-released-to", "")
        assert published() == everything

        driver.find_element(By.ID, "filter-flag-external").click()  # flagged rows hidden, ours never
        assert published() == ["org/small-open", "org/big-closed", "org/old-revision", "org/no-meta"]
        driver.find_element(By.ID, "filter-flag-dataset_revision").click()
        assert published() == ["org/small-open", "org/big-closed", "org/no-meta"] and ours_shown() == ours
        assert "6 of 10 published row(s)" in status.text

        choose("filter-size", ">1B")  # today's size filter reads published rows' parameters; ours record none
        assert published() == ["org/big-closed"] and ours_shown() == []
        driver.find_element(By.ID, "filter-reset").click()
        WebDriverWait(driver, 5).until(lambda _: published() == everything and ours_shown() == ours)
        assert driver.find_element(By.ID, "filter-flag-external").is_selected()

        box = driver.find_element(By.ID, "filter-search")
        box.send_keys("closed")  # the search box reads the published labels too
        assert published() == ["org/big-closed"] and ours_shown() == []
        assert len(spearman.published) == 5
    finally:
        driver.quit()
