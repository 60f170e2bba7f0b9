"""Fault injection, inputs: specs and data that looked valid (or hung, or crashed) and must now end in one line,
exit 2, nothing written. Each row builds its spec and mirror in a temporary folder, runs the CLI with the hashing
adapter (no model is needed to reach these faults) and checks exit code, the single error line and the disk."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SPECS, assert_one_line_error, files_under, plan_of, run_cli, run_subprocess
from tests.fixtures import fixture_spec, make_beir, make_csts

SPEC_TEXT = (SPECS / "biosses.yaml").read_text(encoding="utf-8")


def replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    return edit


def set_cell(column: int, value: str, row: int = 1) -> Callable[[Path], None]:
    """Put `value` into one cell of the mirror's all.tsv (row 1 = first data row)."""

    def apply(mirror: Path) -> None:
        path = mirror / "biosses" / "all.tsv"
        lines = path.read_text(encoding="utf-8").split("\n")
        cells = lines[row].split("\t")
        cells[column] = value
        lines[row] = "\t".join(cells)
        path.write_text("\n".join(lines), encoding="utf-8")

    return apply


GOLD, SENTENCE1 = 9, 7  # columns of all.tsv


def fifo_data(mirror: Path) -> None:
    path = mirror / "biosses" / "all.tsv"
    path.unlink()
    os.mkfifo(path)


def symlink_loop(mirror: Path) -> None:
    path = mirror / "biosses" / "all.tsv"
    path.unlink()
    (mirror / "biosses" / "loop").symlink_to(path)
    path.symlink_to(mirror / "biosses" / "loop")


@dataclass(frozen=True)
class Case:
    name: str
    expected: str  # a piece of the one error line
    spec: Callable[[str], str] | None = None  # edits the BIOSSES spec text
    data: Callable[[Path], None] | None = None  # edits the writable mirror copy
    command: str = "run"  # run | validate
    subprocess: bool = False  # in a fresh process with a timeout (for inputs that could hang)


CASES = [
    # spec values that passed `validate` and then crashed or misbehaved
    Case("every split not evaluated", "no split is evaluated",
         spec=replace("    fingerprint: sha256:cdddd391744f36e5f08d8247e128fae0fbd210b2430201fd6523e89a8cccce36\n",
                      "    evaluate: false\n"), command="validate"),
    Case("negative seed", "subset.seed: Input should be greater than or equal to 0",
         spec=replace("seed: 20261006", "seed: -1"), command="validate"),
    Case("seed beyond 64 bits", "subset.seed: Input should be less than or equal to",
         spec=replace("seed: 20261006", "seed: 18446744073709551616"), command="validate"),
    Case("boolean as a subset count", "subset.splits.test", spec=replace("    test: all", "    test: true"),
         command="validate"),
    Case("boolean as resamples", "uncertainty.resamples: Input should be a valid integer",
         spec=replace("resamples: 1000", "resamples: true"), command="validate"),
    Case("boolean as example count", "card.examples.count: Input should be a valid integer",
         spec=replace("    count: 3", "    count: true"), command="validate"),
    Case("float as a subset count", "subset.splits.test", spec=replace("    test: all", "    test: 5.0"),
         command="validate"),
    Case("count for a split that is never loaded", "split 'train' is not evaluated",
         spec=replace("    test: all\n    train: all", "    test: all\n    train: 3"), command="validate"),
    Case("id longer than a folder name should be", "id: String should have at most 64 characters",
         spec=replace("id: biosses", "id: " + "b" * 300), command="validate"),
    Case("mirror file name the file system refuses", "path component of 300 bytes",
         spec=replace("train: all.tsv", "train: " + "a" * 296 + ".tsv"), command="validate"),
    # data cells that Python reads as numbers but no data file means as one
    Case("gold with underscore digits", "column 'score': expected a number, got '2_2'", data=set_cell(GOLD, "2_2")),
    Case("gold with a decimal comma", "expected a number, got '2,5'", data=set_cell(GOLD, "2,5")),
    Case("gold in Arabic-Indic digits", "expected a number, got '٣'", data=set_cell(GOLD, "٣")),
    Case("gold in hexadecimal", "expected a number, got '0x3'", data=set_cell(GOLD, "0x3")),
    Case("gold that is empty", "expected a number, got ''", data=set_cell(GOLD, "")),
    # texts that are empty to a reader
    Case("text of zero-width spaces", "empty text (only invisible characters)",
         data=set_cell(SENTENCE1, "\u200b\u200b\u2060")),
    Case("text of a BOM and bidi marks", "empty text (only invisible characters)",
         data=set_cell(SENTENCE1, "\ufeff\u200e\u200f")),
    Case("text of ideographic spaces", "column 'sentence1': empty text", data=set_cell(SENTENCE1, "\u3000\u3000")),
    # control characters in data never reach the terminal raw
    Case("escape sequence in a gold cell", "expected a number, got",
         data=set_cell(GOLD, "\x1b[2J\x1b[31mhigh")),
    Case("bidi override in a gold cell", "\\u202e", data=set_cell(GOLD, "\u202e5.0")),
    # files that are not files
    Case("data file is a FIFO", "not a regular file or folder", data=fifo_data, subprocess=True),
    Case("data file is a symlink loop", "cannot be resolved", data=symlink_loop),
    Case("data file is a folder", "is a folder; format tsv reads a file",
         data=lambda m: ((m / "biosses" / "all.tsv").unlink(), (m / "biosses" / "all.tsv").mkdir())),
]


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c.subprocess else c for c in CASES],
                         ids=lambda c: c.name)  # a case in a fresh process is slow
def test_input_fault_is_one_line_exit_2_nothing_written(case: Case, tmp_path: Path, mirror: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(case.spec(SPEC_TEXT) if case.spec else SPEC_TEXT, encoding="utf-8")
    if case.data:
        case.data(mirror)
    out = tmp_path / "out"
    args = [str(spec)] if case.command == "validate" else \
        [str(spec), "--data-dir", str(mirror), "--adapter", "hashing", "--output", str(out)]
    if case.command == "validate":
        args.insert(0, "validate")
    if case.subprocess:
        done = run_subprocess(args, timeout=120)
        code, stderr = done.returncode, done.stderr
    else:
        code, _, stderr = run_cli(args, capsys)
    line = assert_one_line_error(code, stderr, contains=case.expected)
    assert "\x1b" not in stderr and "\u202e" not in stderr
    assert str(spec) in line or str(mirror) in line, line
    assert files_under(out) == []


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "folder"])
def test_spec_that_is_not_a_regular_file(target: str, tmp_path: Path) -> None:
    """A FIFO would block forever, /dev/zero would read until memory runs out: both refused before opening."""
    if target == "fifo":
        path = tmp_path / "spec.yaml"
        os.mkfifo(path)
    elif target == "folder":
        path = tmp_path / "spec.yaml"
        path.mkdir()
    else:
        path = Path(target)
    for command in (["validate"], ["run", "--adapter", "hashing", "--output", str(tmp_path / "out")], ["card"]):
        done = run_subprocess([command[0], str(path), *command[1:]], timeout=60)
        assert_one_line_error(done.returncode, done.stderr, contains="not a regular file")
    assert not (tmp_path / "out").exists()


def test_zip_bomb_member_is_refused_before_extraction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 64 MiB member that compresses 1000x is refused from its header; nothing is extracted."""
    data = tmp_path / "data"
    make_csts(data)
    spec = fixture_spec("csts", tmp_path, data)
    archive = data / "csts" / "dataset.zip"
    archive.unlink()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bomb:
        header = b"sentence1,sentence2,condition,label\n"
        bomb.writestr("dataset/csts_validation_reannotated.csv", header + b" " * (64 << 20))
    assert archive.stat().st_size < 1 << 20
    code, _, err = run_cli([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output",
                            str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="a zip bomb?")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a fresh process
def test_beir_file_that_is_a_fifo(tmp_path: Path) -> None:
    """Folder formats check each file they open: a FIFO corpus ends in one line instead of a hang."""
    data = tmp_path / "data"
    folder = make_beir(data)
    spec = tmp_path / "beir.yaml"
    spec.write_text(BEIR_SPEC, encoding="utf-8")
    (folder / "corpus.jsonl").unlink()
    os.mkfifo(folder / "corpus.jsonl")
    done = run_subprocess([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output",
                           str(tmp_path / "out")], timeout=60)
    assert_one_line_error(done.returncode, done.stderr, contains="not a regular file or folder")


@pytest.mark.parametrize("args, expected", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["run"], "the following arguments are required: SPEC"),
    (["run", "x.yaml", "--batch-size", "0"], "--batch-size: expected a positive integer, got '0'"),
    (["run", "x.yaml", "--adapter", "nope"], "--adapter: invalid choice: 'nope'"),
    (["compare", "a.json"], "the following arguments are required: B"),
    (["publish", "r.json"], "the following arguments are required: --benchmark"),
    (["run", "x.yaml", "--max-length", "many"], "--max-length: expected a positive integer"),
])
def test_bad_flags_are_one_line(args: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(args, capsys)
    assert_one_line_error(code, err, contains=expected)
    assert "usage:" not in err and out == ""


def test_valid_numbers_still_read(tmp_path: Path, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The stricter number reading keeps every plain form: '+2', '2.', '.5', '1e0' give the values float() gives."""
    path = mirror / "biosses" / "all.tsv"
    lines = path.read_text(encoding="utf-8").split("\n")
    forms = ["+2", "2.", ".5", "1e0", " 3 "]
    for row, form in enumerate(forms, start=1):
        cells = lines[row].split("\t")
        cells[GOLD] = form
        lines[row] = "\t".join(cells)
    path.write_text("\n".join(lines), encoding="utf-8")
    from specrun.data import load_split

    items = load_split(plan_of(SPECS / "biosses.yaml"), "test", mirror, check=False).items
    assert [item.fields["gold"] for item in items[:5]] == [float(form) for form in forms]


BEIR_SPEC = """\
id: beirset
title: A BEIR-layout fixture
licence: {data: cc-by-4.0, publication: confirmed}
sources:
  beirset:
    type: git_file
    path: owner/beirset
    revision: 0123456789abcdef0123456789abcdef01234567
    licence: cc-by-4.0
    format: beir
    fetch: false
    files:
      test: {path: data}
    columns: {query: query, candidates: candidates, relevance: relevance}
    ids: {prefix: q-, column: query_id}
splits:
  test:
    source: beirset
    source_split: test
    fingerprint: sha256:0000000000000000000000000000000000000000000000000000000000000000
subset: {seed: 1, splits: {test: all}}
protocols:
  ranking:
    kind: retrieval
    label: Ranking
    capability: embed.text.pooled
    description: Rank the corpus by cosine.
metrics:
  map:
    metric: map
    protocol: ranking
    label: MAP
    direction: higher
    range: [0.0, 1.0]
uncertainty: {method: bootstrap, interval: percentile, resamples: 100, confidence: 0.95}
card:
  what_is_measured: w
  data: d
  items: i
  uncertainty: u
  caveats: c
  examples: {count: 0, heading: Examples, columns: {id: id}}
"""


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_hub_unreachable_is_one_quick_line_without_retries(tmp_path: Path) -> None:
    """No mirror and a hub that does not answer: one line naming --data-dir, not huggingface_hub's retry log."""
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "SPECRUN_DATA_DIR": "", "HF_HOME": str(tmp_path / "hf")}
    for args in (["card", str(SPECS / "biosses.yaml")],
                 [str(SPECS / "biosses.yaml"), "--adapter", "hashing", "--output", str(tmp_path / "out")]):
        done = run_subprocess(args, env=env, timeout=60)
        line = assert_one_line_error(done.returncode, done.stderr, contains="pass --data-dir DIR")
        assert "127.0.0.1:9" in line and "Retrying" not in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # a fresh pytest process
def test_the_callers_offline_and_token_variables_do_not_reach_the_tests(tmp_path: Path) -> None:
    """`make test` on an offline cluster (HF_HUB_OFFLINE=1, a token set): the hub test still passes."""
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_TOKEN": "hf_caller_secret"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                           str(tmp_path / "t"), f"{__file__}::test_hub_unreachable_is_one_quick_line_without_retries"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent.parent)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:]


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_hub_model_unreachable_is_one_quick_line(tmp_path: Path, data_dir: Path) -> None:
    """A hub model id while the hub does not answer: the local hub cache only, then one line naming --model DIR."""
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf")}
    done = run_subprocess([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--model", "someone/model",
                           "--output", str(tmp_path / "out")], env=env, timeout=60)
    line = assert_one_line_error(done.returncode, done.stderr, contains="pass a local model directory with --model")
    assert "not in the local hub cache" in line and "Retrying" not in done.stderr
    assert not (tmp_path / "out").exists()
