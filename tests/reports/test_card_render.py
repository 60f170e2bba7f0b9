"""The card and the report are real Markdown: rendered (markdown-it-py, CommonMark + GFM tables) and copied as
text the way a browser copies a page, the BIOSSES card is the seed card line for line, and no spec's card or
report collapses lists or tables into paragraphs. `card --html` is checked in headless Chromium."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from specrun.core.markdown import md_cell, md_text
from specrun.core.registry import METRICS, PROTOCOLS
from specrun.core.types import Item
from specrun.reports import markdown_to_html, metric_lines, render_card, source_lines, subset_lines
from specrun.results import Results
from specrun.spec import Spec, load_spec
from tests.conftest import SEEDS, SPECS, plan_of, run_cli

SEED_CARD = SEEDS / "001_927b26562a42dfc8.txt"
ALL_SPECS = sorted(SPECS.glob("*.yaml"))


class BrowserText(HTMLParser):
    """HTML to the text a browser copies: each heading, paragraph, code block, whole list and whole table a block,
    blocks apart by a blank line; a list item is `• item`, a table row its cells joined by tabs, `<br>` a line
    break, a code block's lines as they are."""

    BLOCKS = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, list[str]]] = []  # (kind, lines)
        self.text: list[str] | None = None
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.group: list[str] | None = None
        self.group_kind = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre":  # a code block: its lines as they are
            self.text = []
        elif tag in ("ul", "ol", "table"):
            self.group, self.group_kind = [], "list" if tag != "table" else "table"
        elif tag == "li":
            self.text = []
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag in self.BLOCKS and self.text is None:
            self.text = []
        elif tag == "br":
            target = self.cell if self.cell is not None else self.text
            if target is not None:
                target.append("\n")
        elif tag == "img" and self.text is not None:
            self.text.append(dict(attrs).get("alt") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self.text is not None:
            self.blocks.append(("pre", "".join(self.text).rstrip("\n").split("\n")))
            self.text = None
        elif tag in ("ul", "ol", "table") and self.group is not None:
            self.blocks.append((self.group_kind, self.group))
            self.group = None
        elif tag == "li" and self.group is not None and self.text is not None:
            self.group.append("• " + _fold("".join(self.text)))
            self.text = None
        elif tag in ("td", "th") and self.row is not None and self.cell is not None:
            self.row.append("".join(self.cell))
            self.cell = None
        elif tag == "tr" and self.group is not None and self.row is not None:
            self.group.append("\t".join(self.row))
            self.row = None
        elif tag in self.BLOCKS and self.text is not None and self.group is None:
            self.blocks.append((tag, [_fold("".join(self.text))]))
            self.text = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        elif self.text is not None:
            self.text.append(data)


def _fold(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.split("\n"))


def rendered_blocks(markdown: str) -> list[tuple[str, list[str]]]:
    parser = BrowserText()
    parser.feed(markdown_to_html(markdown))
    parser.close()
    return parser.blocks


def rendered_text(markdown: str) -> str:
    """The Markdown rendered, then copied as text (what a reader sees on GitHub or the hub)."""
    return "\n\n".join("\n".join(lines) for _, lines in rendered_blocks(markdown)) + "\n"


def seed_text() -> str:
    if not SEED_CARD.is_file():
        pytest.fail(f"seed card missing: {SEED_CARD}")
    return SEED_CARD.read_text(encoding="utf-8").rstrip("\n") + "\n"


def without_citation(tmp_path: Path) -> Path:
    """BIOSSES without its `citation` (the last key of the spec): the seed card is the card of such a spec."""
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8")
    assert text.count("\ncitation: ") == 1
    path = tmp_path / "biosses.yaml"
    path.write_text(text.split("\ncitation: ")[0] + "\n", encoding="utf-8")
    return path


def test_rendered_card_is_the_seed_card_line_for_line(tmp_path: Path, data_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["card", str(without_citation(tmp_path)), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    got, want = rendered_text(out).splitlines(), seed_text().splitlines()
    for number, (line, expected) in enumerate(zip(got, want, strict=False), start=1):
        assert line == expected, f"line {number}"
    assert len(got) == len(want)
    # and it is Markdown, not the text: headings, bold lead-ins, a list, a pipe table, a block quote
    assert out.startswith("# Biomedical sentence similarity (BIOSSES)\n\n> Licence to confirm")
    assert "\n## Data\n" in out and "\n**What is measured.** " in out and "\n**Data.** " in out
    assert "\n- seed 20261006\n" in out and "\n| item_id | sentence 1 | sentence 2 | gold |\n| --- |" in out


def test_the_card_keeps_the_seed_format_and_can_end_in_the_citation(tmp_path: Path, data_dir: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """BIOSSES as it is (it has a citation): its card is the seed card line for line (the seed has no citation
    section); asked for one, the card ends in a Citation section, the citation in a fenced block (`text`: a plain
    reference, not BibTeX), and nothing else moves."""
    spec = load_spec(SPECS / "biosses.yaml").spec
    assert spec.citation and not spec.citation.startswith("@")
    code, plain, err = run_cli(["card", str(without_citation(tmp_path)), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    code, out, err = run_cli(["card", str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    assert out == plain
    asked = render_card(spec, _example_items(SPECS / "biosses.yaml", data_dir), citation=True)
    assert asked == plain.rstrip("\n") + f"\n\n## Citation\n\n```text\n{spec.citation}\n```\n"
    assert rendered_text(asked).splitlines() == [*seed_text().splitlines(), "", "Citation", "", spec.citation]


def _fake_results(spec: Spec, base: Results) -> Results:
    """A results.json shape for any spec (scores made up): rendering needs only the shape."""
    document: dict[str, Any] = base.model_dump()
    document.update(spec_id=spec.id, title=spec.title, licence=spec.licence.data,
                    publication=spec.licence.publication)
    document["metrics"] = {name: {"metric": m.metric, "protocol": m.protocol,
                                  "protocol_kind": spec.protocols[m.protocol].kind, "label": m.label,
                                  "direction": m.direction} for name, m in spec.metrics.items()}
    runs = {name: {"runs": 5, "run_sd": 0.01} if METRICS[m.metric].per_run else {}
            for name, m in spec.metrics.items()}
    document["scores"] = {split: {name: {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 20, **runs[name]}
                                  for name in spec.metrics} for split in spec.evaluated_splits}
    provenance = document["provenance"]
    provenance["uncertainty"]["unit"] = {name: PROTOCOLS[p.kind].info.unit for name, p in spec.protocols.items()}
    template = provenance["data"]["test"]
    provenance["data"] = {split: {**template, "source": spec.splits[split].source,
                                  "path": spec.sources[spec.splits[split].source].path}
                          for split in spec.evaluated_splits}
    document["plots"] = {f"{split}/{p}": f"scatter-{split}-{p}.png" for split in spec.evaluated_splits
                         for p in spec.protocols}
    return Results.model_validate(document)


@pytest.fixture(scope="module")
def hashing_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from specrun.cli import main

    out = tmp_path_factory.mktemp("render-run")
    spec = (SPECS / "biosses.yaml").resolve()  # an absolute spec path must not reach the report
    assert main([str(spec), "--data-dir", str(data_dir), "--adapter", "hashing", "--output", str(out), "-q"]) == 0
    return next(out.rglob("results.json"))


def _example_items(spec_path: Path, data_dir: Path) -> list[Item]:
    from specrun.data import example_items

    return example_items(plan_of(spec_path), data_dir)


@pytest.mark.parametrize("spec_path", ALL_SPECS, ids=[p.stem for p in ALL_SPECS])
def test_every_card_and_report_renders_without_collapsed_paragraphs(spec_path: Path, hashing_run: Path,
                                                                   data_dir: Path) -> None:
    loaded = load_spec(spec_path)
    spec = loaded.spec
    try:
        items = _example_items(spec_path, data_dir)
    except Exception as exc:  # data of this spec not here (e.g. an optional reader): the card needs the rows
        if spec.card.examples.count and not os.environ.get("CI"):
            pytest.skip(f"example rows of {spec.id} not loadable here: {exc}")
        raise
    base = Results.model_validate_json(hashing_run.read_text())
    for results in (None, _fake_results(spec, base)):
        markdown = render_card(spec, items, results)
        blocks = rendered_blocks(markdown)
        paragraphs = [lines[0] for kind, lines in blocks if kind == "p"]
        for text in paragraphs:
            assert "• " not in text and "\t" not in text and "| ---" not in text and "| " not in text, text
        bullets = [line for kind, lines in blocks if kind == "list" for line in lines]
        expected = len(source_lines(spec)) + len(subset_lines(spec)) + len(metric_lines(spec))
        if results is not None:
            expected += 3 + len(results.provenance.data) + 2  # spec, predictions, data..., seed, packages, run
            expected += bool(results.provenance.similarity) + bool(results.provenance.model_meta)  # when recorded
        assert len(bullets) == expected
        assert all(line.count("• ") == 1 for line in bullets)
        tables = [lines for kind, lines in blocks if kind == "table"]
        example_rows = min(spec.card.examples.count, len(items))
        assert [len(t) for t in tables] == ([1 + example_rows] if example_rows else []) + (
            [1 + sum(len(s) for s in results.scores.values())] if results else [])
        headings = [lines[0] for kind, lines in blocks if kind.startswith("h")]
        assert headings[0] == spec.title and len(set(headings)) == len(headings)  # no two sections share a name
        wanted = ["Data", "Subset", "Metrics"] + (["Results", "Provenance"] if results else [])
        assert [h for h in headings[1:] if h != "Citation"] == wanted
        if not spec.card.examples.count:  # the heading is shown, and a line says why no rows follow
            assert " ".join(spec.card.examples.heading.split()) in paragraphs
            assert "No example rows are shown: the spec sets examples.count to 0." in paragraphs


def test_report_names_files_inside_their_source_and_no_local_path(hashing_run: Path, data_dir: Path) -> None:
    report = (hashing_run.parent / "report.md").read_text(encoding="utf-8")
    text = rendered_text(report)
    for local in (str(data_dir), str(data_dir.resolve()), str(SPECS.resolve()), str(Path.home()), "/tmp/"):
        assert local not in report
    read = hashlib.sha256((data_dir / "biosses" / "all.tsv").read_bytes()).hexdigest()
    assert f"file all.tsv (sha256 {read} as read; not pinned by the spec)" in text  # the bytes the run read
    assert "• spec biosses.yaml sha256 " in text
    assert "test\tspearman_zero_shot\t" in text and "\t100 pairs\n" in text  # n says its unit
    assert "split\tmetric\tvalue\t95% CI\tinterval\tn" in text
    card = render_card(load_spec(SPECS / "biosses.yaml").spec, _example_items(SPECS / "biosses.yaml", data_dir),
                       citation=False)
    assert report.startswith(card.rstrip("\n") + "\n\n## Results\n")  # the report is the card plus results
    assert report.endswith("\n\n## Citation\n\n```text\n" + str(load_spec(SPECS / "biosses.yaml").spec.citation)
                           + "\n```\n")  # and then the citation


def test_git_files_show_their_pinned_sha256() -> None:
    from specrun.reports import file_lines

    spec = load_spec(SPECS / "jsts.yaml").spec
    pinned = "7c0bdcb381179f01096c635d058853d96da1e1248d23fe3f5c2beed5dc2d9b1a"
    assert file_lines(spec, "valid") == [f"file datasets/jsts-v1.3/valid-v1.3.json (sha256 {pinned})"]


def test_subset_lines_say_the_count(tmp_path: Path) -> None:
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8").replace("    test: all", "    test: 60")
    (tmp_path / "biosses.yaml").write_text(text, encoding="utf-8")
    spec = load_spec(tmp_path / "biosses.yaml").spec
    assert subset_lines(spec) == ["seed 20261006", "test: 60 item(s), drawn with seed 20261006",
                                  "train: all item(s)"]


@pytest.mark.parametrize("value", ["a | b", "two\nlines", "  leading and trailing  ", "*not emphasis* _x_ `c`",
                                   "<b>no html</b> &amp; [link](x)", "tab\tinside", "back\\slash |", "1. no list",
                                   "# no heading", "- no item", "~~no strike~~", "snake_case_id",
                                   # runs of `_`: inside a word left as they are (a path stays copyable from a
                                   # terminal), at an edge escaped
                                   "r/sentence-transformers__all-MiniLM-L6-v2/x.json", "__init__", "a __b__ c",
                                   "x___y", "__a__b__", "_a_ __b__", "a__ b __c"])
def test_cells_and_text_render_exactly_as_the_data(value: str) -> None:
    row = "| " + md_cell(value) + " | x |"
    blocks = rendered_blocks(f"| a | b |\n| --- | --- |\n{row}\n")
    assert blocks == [("table", ["a\tb", f"{value}\tx"])]
    folded = " ".join(value.split())
    assert rendered_blocks(md_text(value) + "\n") == [("p", [folded])]
    assert rendered_blocks("- " + md_text(value) + "\n") == [("list", ["• " + folded])]


@pytest.mark.slow  # a browser
def test_card_html_in_headless_chromium(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium not installed (apt-get install -y chromium)")
        pytest.skip("chromium not installed")
    page = tmp_path / "card.html"
    code, _, err = run_cli(["card", str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--html", "-o",
                            str(page)], capsys)
    assert code == 0, err
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>")
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                           page.resolve().as_uri()], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = BrowserText()
    dom.feed(done.stdout)  # the DOM Chromium built, serialised
    blocks = dom.blocks
    headings = [lines[0] for kind, lines in blocks if kind.startswith("h")]
    assert headings == ["Biomedical sentence similarity (BIOSSES)", "Data", "Subset", "Metrics"]
    assert [lines for kind, lines in blocks if kind == "pre"] == []
    bullets = [line for kind, lines in blocks if kind == "list" for line in lines]
    seed = seed_text().splitlines()
    assert bullets == [line for line in seed if line.startswith("• ")]
    tables = [lines for kind, lines in blocks if kind == "table"]
    assert tables == [seed[seed.index("item_id\tsentence 1\tsentence 2\tgold"):]]


def test_plot_names_from_results_json_can_only_be_link_targets(hashing_run: Path, data_dir: Path) -> None:
    """A results.json whose plot file name holds Markdown ("a) [x](y.png") renders it percent-encoded: one image
    whose target is that one file, no second link."""
    base = Results.model_validate_json(hashing_run.read_text())
    edited = base.model_copy(update={"plots": {"test/zero_shot": "a) [x](y.png"}})
    spec = load_spec(SPECS / "biosses.yaml").spec
    markdown = render_card(spec, _example_items(SPECS / "biosses.yaml", data_dir), edited)
    assert "(a%29%20%5Bx%5D%28y.png)" in markdown and "[x](y.png" not in markdown
