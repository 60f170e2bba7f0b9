"""Malformed specs and data: each ends in one line naming the file (and line, key), exit code 2, no traceback,
and no output written. Spec cases edit the real BIOSSES spec; data cases edit a copy of the real mirror."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SPECS, run_cli

SPEC_TEXT = (SPECS / "biosses.yaml").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Case:
    name: str
    expected: str  # in the error line
    old: str = ""  # spec text to replace ...
    new: str = ""  # ... with this
    marker: str | None = None  # the error names the first line of the edited spec holding this text
    data: Callable[[Path], None] | None = None  # edits the mirror's all.tsv
    raw: bytes | None = None  # the spec as raw bytes instead of an edit

    def spec_text(self) -> str:
        if not self.old:
            return SPEC_TEXT
        assert self.old in SPEC_TEXT, self.old
        return SPEC_TEXT.replace(self.old, self.new, 1)


def edit_tsv(change: Callable[[list[str]], list[str]]) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        lines = path.read_text(encoding="utf-8").split("\n")
        path.write_text("\n".join(change(lines)), encoding="utf-8")

    return apply


def set_first_score(value: str) -> Callable[[Path], None]:
    return edit_tsv(lambda lines: [lines[0], lines[1].rsplit("\t", 1)[0] + "\t" + value, *lines[2:]])


def symlink_outside(path: Path) -> None:
    outside = path.parent.parent.parent / "outside.tsv"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)


CASES = [
    Case("unknown key", "unknown key; expected one of: id, title, licence", "title: Bio",
         "colour: blue\ntitle: Bio", marker="colour:"),
    Case("duplicate key", "duplicate key (first defined on line", "    licence: gpl-3.0\n",
         "    licence: gpl-3.0\n    licence: cc-by-4.0\n", marker="    licence: cc-by-4.0"),
    Case("wrong type", "uncertainty.resamples: Input should be a valid integer", "resamples: 1000",
         "resamples: many", marker="resamples: many"),
    Case("short revision", "expected a full 40-hex commit hash (lower case), got '2394a2e'",
         "revision: 2394a2eda8dae34a30f68f0770775fd5c2e863bd", "revision: 2394a2e", marker="revision: 2394a2e"),
    Case("missing column", "column 'scores' is not in", "gold: score", "gold: scores", marker="gold: scores"),
    Case("metric names an unknown protocol", "unknown protocol 'few_shot'; expected one of: zero_shot",
         "    protocol: zero_shot\n    label: Pearson", "    protocol: few_shot\n    label: Pearson",
         marker="protocol: few_shot"),
    Case("bad range", "range must be [low, high] with low < high", "range: [-1.0, 1.0]", "range: [1.0, -1.0]",
         marker="range: [1.0, -1.0]"),
    Case("YAML syntax error", "YAML syntax error", "    kind: sts", "    kind: [sts", marker="label: Zero-shot"),
    Case("non-UTF-8 file", "not UTF-8 (byte 0xf1", raw=SPEC_TEXT.encode("utf-8").replace(
        "Spearman ρ".encode(), "Spearman ρ".encode("iso-8859-7")), marker="Spearman"),
    Case("fingerprint mismatch", "data does not match the spec: spec says sha256:cdddd391",
         data=set_first_score("2.3"), marker="fingerprint:"),
    Case("empty split", "split is empty", data=edit_tsv(lambda lines: lines[:1]), marker="  test:"),
    Case("NaN gold", "row 1: column 'score': expected a finite number, got 'nan'", data=set_first_score("nan")),
    Case("infinite gold", "expected a finite number, got 'inf'", data=set_first_score("inf")),
    Case("gold not a number", "row 1: column 'score': expected a number, got 'high'", data=set_first_score("high")),
    Case("path escaping the mirror", "'../../../etc/passwd' must be a relative path inside", "train: all.tsv",
         "train: ../../../etc/passwd", marker="train: ../../../etc/passwd"),
    Case("absolute path", "'/etc/passwd' must be a relative path inside", "train: all.tsv",
         "train: /etc/passwd", marker="train: /etc/passwd"),
    Case("symlink escaping the mirror", "resolves outside the data mirror folder", data=symlink_outside,
         marker="train: all.tsv"),
    Case("unknown metric",
         "unknown metric 'kendall'; expected one of: pearson, spearman (the metrics protocol kind sts feeds)",
         "metric: pearson",
         "metric: kendall", marker="metric: kendall"),
    Case("missing required key", "subset.seed: required key is missing", "  seed: 20261006\n", "",
         marker="subset:"),
    Case("unknown protocol kind", "unknown protocol kind 'topic_model'", "kind: sts", "kind: topic_model",
         marker="kind: topic_model"),
    Case("subset larger than the split", "asks for 500 items but", "    test: all", "    test: 500",
         marker="test: 500"),
    Case("python tag", "is not allowed", "id: biosses", "id: !!python/object/apply:os.system ['true']",
         marker="id: !!python"),
    Case("merge key smuggling keys", "merge keys (<<) are not allowed", "uncertainty:\n  method: bootstrap",
         "defaults: &d\n  resamples: 1000\nuncertainty:\n  <<: *d\n  method: bootstrap", marker="<<: *d"),
    Case("anchor smuggling an unknown key", "unknown key; expected one of", "title: Bio",
         "extra: &e {evaluate: false}\ntitle: Bio", marker="extra: &e"),
    Case("binary tag", "tag tag:yaml.org,2002:binary is not allowed", "id: biosses", "id: !!binary Ymlvcw==",
         marker="id: !!binary"),
    Case("set tag", "tag tag:yaml.org,2002:set is not allowed", "id: biosses", "id: !!set {a, b}",
         marker="id: !!set"),
    Case("custom include tag", "tag !include is not allowed", "id: biosses", "id: !include other.yaml",
         marker="id: !include"),
    Case("a list, not a mapping", "expected a mapping of spec keys", raw=b"- id\n- title\n", marker="- id"),
    Case("empty file", "file is empty", raw=b"", marker=None),
    Case("huge spec file", "a spec is at most", raw=b"# " + b"x" * (1 << 20) + b"\n"),
    Case("NUL byte", "YAML syntax error: unacceptable character #x0000",
         raw=SPEC_TEXT.encode().replace(b"title:", b"ti\x00tle:", 1), marker="\x00"),
    Case("control character below multibyte text (its line counted in characters, not bytes)",
         "YAML syntax error: unacceptable character #x0007",
         raw=SPEC_TEXT.encode().replace(b"title:", "# 生物医学の文の類似度、日本語の注釈\n# 二行目\ntitle:".encode(), 1)
         .replace(b"\nlanguage:", b"\nlang\x07uage:", 1), marker="\x07"),
    Case("null for a required key", "title: Input should be a valid string", "title: Bio",
         "title: null\n# Bio", marker="title: null"),
    Case("list where a mapping is expected", "subset: Input should be a valid dictionary",
         "subset:\n  seed: 20261006\n  splits:\n    test: all\n    train: all\n", "subset: [1, 2]\n",
         marker="subset: [1, 2]"),
    Case("confidence out of range", "confidence: Input should be less than 1", "confidence: 0.95",
         "confidence: 1.5", marker="confidence: 1.5"),
    Case("confidence quoted", "confidence: Input should be a valid number", "confidence: 0.95",
         "confidence: '0.95'", marker="confidence: '0.95'"),  # as resamples: '200' is refused (a bad-input hunt)
    Case("negative resamples", "resamples: Input should be greater than or equal to 100", "resamples: 1000",
         "resamples: -5", marker="resamples: -5"),
    Case("subset of zero items", "subset.splits.test: expected 'all' or Input should be greater than 0 (got 0)",
         "    test: all", "    test: 0",
         marker="    test: 0"),
    Case("fingerprint of another kind", "expected 'sha256:' and 64 hex digits", "fingerprint: sha256:cdddd391",
         "fingerprint: md5:cdddd391", marker="fingerprint: md5"),
    Case("where on an unknown column", "column 'colour' is not in", "    source_split: train  # the hub",
         "    where:\n      colour: red\n    source_split: train  # the hub", marker="      colour: red"),
    Case("unknown protocol option", "unknown option", "    similarity: cosine\n",
         "    similarity: cosine\n    options:\n      template: x\n", marker="      template: x"),
    Case("id not a name", "id: expected a lower-case name", "id: biosses", "id: BIOSSES!", marker="id: BIOSSES!"),
    Case("unquoted tab in a data row", "11 fields, expected 10",
         data=edit_tsv(lambda lines: [lines[0], lines[1].replace(" cells,", " cells,\t", 1), *lines[2:]])),
    Case("unterminated quote in data", "malformed tsv: ' ' expected after '\"'",
         data=edit_tsv(lambda lines: [lines[0], lines[1].replace("\tHere", '\t"Here', 1), *lines[2:]])),
    Case("white space for card prose", "card.uncertainty: must hold text, not only white space",
         "  uncertainty: 95 % bootstrap interval over the 100 pairs, 1,000 resamples.", '  uncertainty: "   "',
         marker='  uncertainty: "   "'),
    Case("a lone quote names quoting: none", "set `quoting: none`",
         data=edit_tsv(lambda lines: [lines[0], lines[1].replace("\tHere", '\t"Here', 1), *lines[2:]])),
    Case("comma-separated read as tsv names csv", "is the file comma-separated (`format: csv`)?",
         data=edit_tsv(lambda lines: [lines[0], lines[1].replace("\t", ",", 3).replace("\t", " "),
                                      *lines[2:]])),
    Case("non-UTF-8 data", "not UTF-8", data=lambda p: p.write_bytes(p.read_bytes().replace(b"GATA2", b"\xff", 1))),
    Case("duplicate item ids", "duplicate item id 'biosses-0'", "      prefix: biosses-\n      width: 3",
         "      prefix: biosses-\n      column: index"),
    Case("empty text in data", "row 1: column 'sentence1': empty text",
         data=edit_tsv(lambda lines: [lines[0], "\t".join(
             [*lines[1].split("\t")[:7], "  ", *lines[1].split("\t")[8:]]), *lines[2:]])),
    Case("missing mirror file", "does not exist in the data mirror", "train: all.tsv", "train: missing.tsv",
         marker="train: missing.tsv"),
    Case("huge data field", "field larger than field limit",
         data=edit_tsv(lambda lines: [lines[0], lines[1].replace("Here,", "Here," + "x" * 200_000, 1), *lines[2:]])),
    Case("alias explosion", "YAML nodes", raw=(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{c}: &{c} [{', '.join([f'*{chr(ord(c) - 1)}'] * 10)}]\n" for c in "bcdefg")).encode()),
]


def expected_line(case: Case, text: str) -> int | None:
    if case.marker is None:
        return None
    for number, line in enumerate(text.splitlines(), start=1):
        if case.marker in line:
            return number
    raise AssertionError(f"marker {case.marker!r} not in the spec")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input_is_one_line_exit_2_nothing_written(case: Case, tmp_path: Path, mirror: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    if case.raw is not None:
        spec.write_bytes(case.raw)
        text = case.raw.decode("utf-8", errors="replace")
    else:
        text = case.spec_text()
        spec.write_text(text, encoding="utf-8")
    if case.data:
        case.data(mirror / "biosses" / "all.tsv")
    out = tmp_path / "out"
    code, stdout, stderr = run_cli([str(spec), "--data-dir", str(mirror), "--output", str(out)], capsys)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert case.expected in lines[0]
    assert "Traceback" not in stderr and stdout == ""
    names_file = str(spec) in lines[0] or str(mirror) in lines[0]
    assert names_file, lines[0]
    line = expected_line(case, text)
    if line is not None:
        assert f"{spec}:{line}: " in lines[0]
    assert not out.exists()


def test_count_of_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.slow  # a fresh process
def test_cli_process_exits_2_without_traceback(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC_TEXT.replace("direction: higher", "direction: up", 1), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "specrun", "validate", str(spec)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "metrics.pearson_zero_shot.direction: expected 'higher' or 'lower', got 'up'" in proc.stderr


def test_missing_data_dir_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "--data-dir", str(tmp_path / "nowhere")], capsys)
    assert code == 2 and "is not a directory (from --data-dir)" in err


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_hub_unreachable_names_the_flag(tmp_path: Path) -> None:
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATH": "/usr/bin:/bin",
           "HF_HOME": str(tmp_path / "hf")}
    proc = subprocess.run([sys.executable, "-m", "specrun", str(SPECS / "biosses.yaml"), "--output",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "pass --data-dir DIR (or set SPECRUN_DATA_DIR)" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_model_not_found_is_one_line(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--model",
                            str(tmp_path / "no-model"), "--output", str(tmp_path / "out")], capsys)
    assert code == 2 and "no such model directory" in err and err.count("\n") == 1
