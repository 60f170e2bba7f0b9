"""The README and docs/ say what runs: every ```yaml block validates (a whole spec against the spec model, a
fragment put into the README's five-minute spec, a prompt set as `--prompt-set` reads it), every shell line
that names a spec in specs/ runs (hashing adapter, offline, in a temporary folder) or is marked why not, the
five-minute walkthrough runs as written, and the README stays a front page. Nothing is written into the checkout.

Markers are HTML comments on the line before a block: `<!-- fragment -->`, `<!-- prompt-set -->`,
`<!-- file: PATH -->` (the walkthrough writes the block to PATH), `<!-- extends: specs/NAME.yaml -->` (a spec
written as changes to that one: validated beside a copy of it), `<!-- card of first.yaml -->` and
`<!-- not run: WHY -->`, `<!-- excerpt: specs/NAME.yaml -->` (keys of that spec as it is: each top-level key's
value as the spec has it, a mapping showing some of its keys); a shell line may also end in `# not run: WHY`."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from tests.conftest import ROOT, data_root, run_cli

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"sh", "shell", "bash"}
MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")
SPEC_PATH = re.compile(r"\b(?:specs|suites)/[\w.-]+\.ya?ml\b")
FIRST_SPEC = "Your first spec in five minutes"
README_MAX_LINES = 250


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str | None  # the HTML comment on the line before the fence
    section: str  # the heading the block lies under

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    found: list[Block] = []
    lines = doc.read_text(encoding="utf-8").splitlines()
    section, index = "", 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#") and not line.startswith("#!"):
            section = line.lstrip("#").strip()
        if line.startswith("```"):
            lang = line[3:].strip()
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            previous = lines[index - 1].strip() if index else ""
            match = MARKER.match(previous)
            found.append(Block(doc, index + 1, lang, "\n".join(lines[index + 1:end]) + "\n",
                               match.group(1) if match else None, section))
            index = end
        index += 1
    return found


ALL_BLOCKS = [block for doc in DOCS for block in blocks(doc)]
YAML_BLOCKS = [block for block in ALL_BLOCKS if block.lang == "yaml"]
SHELL_BLOCKS = [block for block in ALL_BLOCKS if block.lang in SHELLS]
PYTHON_BLOCKS = [block for block in ALL_BLOCKS if block.lang == "python"]


def first_spec_block() -> Block:
    (block,) = [b for b in ALL_BLOCKS if b.doc.name == "README.md" and b.marker == "file: first.yaml"]
    return block


def validate_spec(data: dict, tmp_path: Path, name: str = "spec.yaml") -> None:
    from specrun.spec import load_spec

    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    warnings: list[str] = []
    load_spec(path, require_fingerprints=False, warn=warnings.append)
    assert not warnings, warnings  # a documented spec uses no deprecated form


def wrapped(fragment: dict) -> dict:
    """A fragment's top-level keys put into the five-minute spec in place of its own."""
    return {**load_plain(first_spec_block().text), **fragment}


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the reference belongs in docs/"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[0] == "## The two commands"  # the project's contract, first after the intro
    first = next(b for b in ALL_BLOCKS if b.doc.name == "README.md")
    assert first.section == "The two commands"
    assert [line.split("#")[0].strip() for line in first.text.splitlines()] == ["make biosses", "make test"]


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=lambda b: b.where)
def test_every_yaml_block_validates(block: Block, tmp_path: Path) -> None:
    data = load_plain(block.text)
    assert isinstance(data, dict), f"{block.where}: not a mapping"
    if block.marker == "prompt-set":
        from specrun.prompt_sets import load_prompt_set

        path = tmp_path / "prompts.yaml"
        path.write_text(block.text, encoding="utf-8")
        assert load_prompt_set(str(path)).prompt_set.variants
    elif block.marker == "fragment":
        validate_spec(wrapped(data), tmp_path)
    elif block.marker is not None and block.marker.startswith("extends: "):
        from specrun.spec import load_spec

        parent = ROOT / block.marker.removeprefix("extends: ")
        assert data.get("extends") == parent.name, f"{block.where}: extends {data.get('extends')!r}, not {parent}"
        shutil.copy(parent, tmp_path / parent.name)
        child = tmp_path / "child.yaml"
        child.write_text(block.text, encoding="utf-8")
        assert load_spec(child).extends == (str(tmp_path / parent.name),)
    elif block.marker is not None and block.marker.startswith("excerpt: "):  # part of a shipped spec, as it is
        whole = load_plain((ROOT / block.marker.removeprefix("excerpt: ")).read_text(encoding="utf-8"))
        assert excerpt_of(data, whole), f"{block.where}: not as {block.marker} has it"
    elif block.marker == "suite":  # its members are the checkout's specs, named as from suites/
        from specrun.suites import load_suite

        shutil.copytree(ROOT / "specs", tmp_path / "specs")
        (tmp_path / "suites").mkdir()
        path = tmp_path / "suites" / "suite.yaml"
        path.write_text(block.text, encoding="utf-8")
        assert load_suite(path).members
    elif block.marker is None or block.marker.startswith("file: "):
        validate_spec(data, tmp_path)
    else:
        pytest.fail(f"{block.where}: unknown marker {block.marker!r}")


def excerpt_of(shown: object, whole: object) -> bool:
    """Every key shown is the spec's, with the spec's value (a mapping may show some of its keys; lists and
    scalars are shown whole)."""
    if isinstance(shown, dict):
        return isinstance(whole, dict) and all(key in whole and excerpt_of(value, whole[key])
                                               for key, value in shown.items())
    return shown == whole


def test_the_messy_upstream_fragment_reads_the_real_file(tmp_path: Path, data_dir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """docs/spec.md's STS Benchmark source, put into the five-minute spec, reads the mirror's sts-test.csv."""
    (block,) = [b for b in YAML_BLOCKS if b.doc.name == "spec.md" and b.marker == "fragment" and "sources:" in b.text]
    spec = wrapped(load_plain(block.text))
    spec["id"] = "stsb-docs"
    path = tmp_path / "stsb.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    code, out, err = run_cli([str(path), "--data-dir", str(data_dir), "--adapter", "hashing", "-q",
                              "--output", str(tmp_path / "results")], capsys)
    assert code == 0, err
    results = json.loads(Path(out.strip().splitlines()[-1]).read_text())
    assert results["scores"]["test"]["spearman"]["n"] == 1379  # every line, the 284 with two more fields too


def spec_lines() -> list[tuple[Block, str]]:
    """Shell lines that name a spec in specs/ (placeholders such as specs/NAME.yaml name none)."""
    return [(block, line) for block in SHELL_BLOCKS for line in block.text.splitlines()
            if any((ROOT / path).is_file() for path in SPEC_PATH.findall(line))]


def reason_not_run(block: Block, line: str) -> str | None:
    if block.marker and block.marker.startswith("not run:"):
        return block.marker.removeprefix("not run:").strip()
    if "# not run:" in line:
        return line.split("# not run:", 1)[1].strip()
    return None


def command(line: str, output: Path) -> list[str]:
    """A documented command line as the test runs it: offline on the data mirror, into a temporary folder, and a
    run on the hashing adapter (its numbers mean nothing, but every stage runs)."""
    words = shlex.split(line, comments=True)
    assert words and words[0] == "specrun", f"not a specrun command: {line!r} (mark it `# not run: why`)"
    args = [str((ROOT / data_root()).resolve()) if word == "../shared/data" else word for word in words[1:]]
    subcommands = {"run", "validate", "verify", "show", "card", "fingerprint", "list", "compare", "leaderboard",
                   "publish", "publish-benchmark"}
    run = args[0] not in subcommands or args[0] == "run"
    if run:
        assert "--model" not in args and "--adapter" not in args, f"{line!r} needs a real model: mark it"
        args += ["--adapter", "hashing", "--output", str(output), "-q"]
    if (run or args[0] in {"card", "fingerprint", "publish-benchmark"}) and "--data-dir" not in args:
        args += ["--data-dir", str((ROOT / data_root()).resolve())]
    return args


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda block: block.where)
def test_a_python_block_registering_a_kind_runs_in_the_grid(block: Block) -> None:
    """A ```python block that registers a protocol kind is the whole kind: run as written, its kind runs its
    example through the per-kind grid (protocol, announced texts, metrics)."""
    from specrun.core.registry import PROTOCOLS
    from tests.protocols.test_kind_grid import run_example

    before = set(PROTOCOLS)
    exec(compile(block.text, block.where, "exec"), {"__name__": "docs_block"})
    added = sorted(set(PROTOCOLS) - before)
    try:
        assert added, f"{block.where}: the block registers no protocol kind"
        for kind in added:
            outputs, scores = run_example(kind)
            assert outputs.ids and scores
    finally:
        for kind in added:
            PROTOCOLS.unregister(kind)


def test_every_spec_named_in_a_shell_block_is_run_or_marked() -> None:
    """Run below; here: the list is not empty and every mark says why."""
    found = spec_lines()
    assert found
    for block, line in found:
        reason = reason_not_run(block, line)
        assert reason is None or reason, f"{block.where}: `not run:` needs a reason"


@pytest.mark.parametrize(("block", "line"), spec_lines(),
                         ids=[f"{block.where}:{line.split()[1]}" for block, line in spec_lines()])
def test_shell_lines_on_specs_run(block: Block, line: str, tmp_path: Path, data_dir: Path,
                                  monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    if (reason := reason_not_run(block, line)) is not None:
        pytest.skip(f"{block.where}: not run: {reason}")
    # the checkout's specs and prompt sets, copied: `fingerprint --write` and the outputs land in tmp_path
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    shutil.copytree(ROOT / "suites", tmp_path / "suites")
    shutil.copytree(ROOT / "docs" / "prompt-sets", tmp_path / "docs" / "prompt-sets")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(command(line, tmp_path / "results"), capsys)
    assert code == 0, f"{block.where}: {line}\n{err}"


def walkthrough_blocks() -> tuple[list[Block], Block, Block]:
    section = [b for b in ALL_BLOCKS if b.doc.name == "README.md" and b.section == FIRST_SPEC]
    files = [b for b in section if b.marker and b.marker.startswith("file: ")]
    (shell,) = [b for b in section if b.lang in SHELLS]
    (card,) = [b for b in section if b.marker == "card of first.yaml"]
    return files, shell, card


def walk(tmp_path: Path, capsys: pytest.CaptureFixture[str], *, adapter: str | None) -> dict[str, str]:
    """The five-minute walkthrough as the README writes it, in tmp_path: its files, then each command in order.
    A command whose comment quotes a text prints that text (an error's with exit code 2)."""
    files, shell, _ = walkthrough_blocks()
    for block in files:
        target = tmp_path / block.marker.removeprefix("file: ")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text, encoding="utf-8")
    outputs: dict[str, str] = {}
    for line in shell.text.splitlines():
        words = shlex.split(line, comments=True)
        args = words[1:]
        if args[0] not in {"validate", "fingerprint", "card"} and adapter:
            args += ["--adapter", adapter]
        code, out, err = run_cli(args, capsys)
        expected = re.findall(r'#.*?"(.*?)(?:\.\.\.)?"', line)
        for text in expected:
            assert text in out + err, f"{line}: {text!r} not in\n{out}{err}"
        assert code == 0 or (code == 2 and expected and expected[0] in err), f"{line}\n{err}"
        outputs[line] = out
    return outputs


def test_the_five_minute_walkthrough_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    outputs = walk(tmp_path, capsys, adapter="hashing")
    _, shell, card = walkthrough_blocks()
    card_line = next(line for line in shell.text.splitlines() if line.startswith("specrun card"))
    assert outputs[card_line].startswith(card.text), outputs[card_line]
    spec = load_plain((tmp_path / "first.yaml").read_text(encoding="utf-8"))
    fingerprint = spec["splits"]["test"]["fingerprint"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"`fingerprint: (sha256:[0-9a-f]+)\.\.\.`", readme)
    assert shown and fingerprint.startswith(shown.group(1))
    assert (tmp_path / "first.yaml").read_text(encoding="utf-8").count("#") >= 5  # comments kept
    results = json.loads(next((tmp_path / "results" / "first-sts").glob("*/results.json")).read_text())
    assert results["scores"]["test"]["spearman"]["n"] == 12


@pytest.mark.slow
def test_the_five_minute_walkthrough_numbers_are_the_default_models(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    walk(tmp_path, capsys, adapter=None)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    path = "results/first-sts/sentence-transformers__all-MiniLM-L6-v2/results.json"
    assert f"`{path}`" in readme
    score = json.loads((tmp_path / path).read_text())["scores"]["test"]["spearman"]
    shown = f"test spearman {score['value']:.4f} [{score['ci_low']:.4f}, {score['ci_high']:.4f}], n {score['n']}"
    assert shown in readme


# README figures that tests/golden_numbers.json holds (tests/test_golden_numbers.py recomputes those on the real
# model and data): spec, split, metric and the row's text in the README's benchmark table
GOLDEN_ROWS = [("biosses", "test", "spearman_zero_shot", "test ρ"), ("jsts", "valid", "spearman_zero_shot", "valid ρ"),
               ("jsick", "test", "spearman_zero_shot", "test ρ"), ("jacsts", "test", "spearman_zero_shot", "test ρ")]


def shown(score: dict) -> str:
    return f"{score['value']:.4f} [{score['ci_low']:.4f}, {score['ci_high']:.4f}]"


def test_the_readme_numbers_are_the_golden_numbers() -> None:
    golden = json.loads((ROOT / "tests" / "golden_numbers.json").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for spec, split, metric, lead in GOLDEN_ROWS:
        score = golden[f"{spec}+default-model"]["scores"][split][metric]
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{spec}` |"))
        assert f"{lead} {shown(score)}" in row, (spec, shown(score), row)
    for metric, score in golden["biosses+default-model"]["scores"]["test"].items():  # "What a run gives"
        cells = shown(score).replace(" [", " | [")
        assert f"| test | {metric} | {cells} | {score['interval']} | {score['n']} |" in readme


def test_relative_links_resolve() -> None:
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" not in target:
                assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)}: link to {target}"
