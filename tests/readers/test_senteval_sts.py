"""The senteval_sts reader: SentEval's STS folder (STS.input.<set>.txt pairs aligned with STS.gs.<set>.txt), each
rule on a fixture written here (empty gold lines, gold without input, input without gold, field counts, quotes,
CRLF), a spec reading it through `mirror:` end to end, and the five real years against their published counts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from specrun.core.contracts import ReadLayout
from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
from specrun.core.registry import READERS
from specrun.readers.senteval_sts import SentEvalStsOptions, read_senteval_sts
from tests.conftest import run_ok
from tests.fixtures import fixture_spec


def year(folder: Path, sets: dict[str, tuple[list[str] | None, list[str] | None]], newline: str = "\n") -> Path:
    """A year's folder: set -> (input lines, gold lines), None for a file that is not there."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (inputs, golds) in sets.items():
        for kind, lines in (("input", inputs), ("gs", golds)):
            if lines is not None:
                (folder / f"STS.{kind}.{name}.txt").write_bytes("".join(line + newline for line in lines).encode())
    return folder


def read(folder: Path, **options: object) -> list[dict[str, str]]:
    return read_senteval_sts(folder, ReadLayout("senteval_sts", options), "test")


SETS: dict[str, tuple[list[str] | None, list[str] | None]] = {
    "b": (["b one\tb two", "b three\tb four"], ["1.5", "4"]),
    "A": (['he said "hi\tshe said \'no\'"', "unscored\tpair", "x y\tz"], ["2.0", "", "0"]),
    "SMT": (None, ["3.0", "1.0"]),  # gold whose input is not distributed: left out
}


def test_sets_sorted_then_lines_blank_gold_skipped_quotes_kept_gold_without_input_left_out(tmp_path: Path) -> None:
    folder = year(tmp_path / "y", SETS)
    (folder / "00-readme.txt").write_text("about\n", encoding="utf-8")
    (folder / "STS.input.b.LICENSE").write_text("terms\n", encoding="utf-8")
    assert read(folder) == [
        {"set": "A", "sentence1": 'he said "hi', "sentence2": "she said 'no'\"", "score": "2.0"},
        {"set": "A", "sentence1": "x y", "sentence2": "z", "score": "0"},
        {"set": "b", "sentence1": "b one", "sentence2": "b two", "score": "1.5"},
        {"set": "b", "sentence1": "b three", "sentence2": "b four", "score": "4"},
    ]


def test_crlf_files_read_as_lf_ones(tmp_path: Path) -> None:
    assert read(year(tmp_path / "crlf", SETS, "\r\n")) == read(year(tmp_path / "lf", SETS))


@pytest.mark.parametrize("line, fields", [("only one field", 1), ("a\tb\tc", 3), ("", 1)])
def test_an_input_line_without_two_fields_is_one_line_naming_file_and_line(line: str, fields: int,
                                                                          tmp_path: Path) -> None:
    folder = year(tmp_path / "y", {"s": (["a\tb", line], ["1", ""])})  # refused even where it has no gold
    with pytest.raises(DataError) as caught:
        read(folder)
    assert caught.value.one_line() == (f"{folder / 'STS.input.s.txt'}:2: {fields} tab-separated fields, expected 2 "
                                       "(sentence1, sentence2)")


def test_an_input_without_gold_is_refused_unless_the_sets_leave_it_out(tmp_path: Path) -> None:
    folder = year(tmp_path / "y", {"s": (["a\tb"], ["1"]), "t": (["c\td"], None)})
    with pytest.raises(DataError, match=r"STS\.input\.t\.txt has no gold file STS\.gs\.t\.txt beside it"):
        read(folder)
    assert [row["set"] for row in read(folder, sets=["s"])] == ["s"]
    with pytest.raises(DataError, match=r"set 't' is named in `sets`, but STS\.gs\.t\.txt is not in the folder"):
        read(folder, sets=["t"])


@pytest.mark.parametrize("sets, expected", [
    ({"s": (["a\tb", "c\td"], ["1"])}, "2 lines, but its gold file STS.gs.s.txt has 1"),
    ({}, "holds no STS.input.<set>.txt with its STS.gs.<set>.txt"),
    ({"s": (["a\tb\rc\td"], ["1"])}, "carriage return inside a line"),
])
def test_a_folder_out_of_layout_is_one_line(sets: dict, expected: str, tmp_path: Path) -> None:
    with pytest.raises(DataError) as caught:
        read(year(tmp_path / "y", sets))
    assert expected in caught.value.one_line()


def test_the_options_name_sets_once_and_the_files_they_read() -> None:
    with pytest.raises(ValidationError, match="named twice"):
        SentEvalStsOptions.model_validate({"sets": ["a", "a"]})
    entry = READERS["senteval_sts"]
    assert entry.folder and entry.files_read is not None
    assert entry.files_read({"sets": ["b", "a"]}, "test") == ["STS.input.b.txt", "STS.gs.b.txt", "STS.input.a.txt",
                                                              "STS.gs.a.txt"]


def test_a_mirror_senteval_folder_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    pairs = [(f"a sentence number {i}", f"another one {i % 4}", f"{i % 5}.0") for i in range(10)]
    year(data / "biosses" / "2012", {"x": ([f"{a}\t{b}" for a, b, _ in pairs[:6]], [g for *_, g in pairs[:6]]),
                                     "w": ([f"{a}\t{b}" for a, b, _ in pairs[6:]], ["", *[g for *_, g in pairs[7:]]])})
    spec = fixture_spec("biosses", tmp_path, data,
                        {"sources.biosses.mirror": {"format": "senteval_sts", "files": {"train": "2012"}}})
    results = run_ok([str(spec), "--data-dir", str(data), "--adapter", "hashing", "-q", "--output",
                      str(tmp_path / "o")], capsys)
    assert {score.n for score in results.scores["test"].values()} == {9}  # one pair has no gold


EXPECTED = {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186}


def _unique_texts_by_hand(folder: Path) -> int:
    """The distinct sentences of the scored pairs, read with nothing but str methods."""
    texts = set()
    for gold in folder.glob("STS.gs.*.txt"):
        source = folder / gold.name.replace("STS.gs.", "STS.input.")
        if source.exists():
            scores = gold.read_text(encoding="utf-8").split("\n")
            for number, line in enumerate(source.read_text(encoding="utf-8").splitlines()):
                if scores[number] != "":
                    texts.update(line.split("\t"))
    return len(texts)


def test_the_five_real_years_hold_the_published_pair_counts(data_dir: Path) -> None:
    root = data_dir / "senteval-sts"
    if not root.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{root} not found")
        pytest.skip(f"{root} not found")
    rows = {name: read(root / f"{name}-en-test") for name in EXPECTED}
    assert {name: len(found) for name, found in rows.items()} == EXPECTED
    by_set = {}
    for row in rows["STS13"]:
        by_set[row["set"]] = by_set.get(row["set"], 0) + 1
    assert by_set == {"FNWN": 189, "OnWN": 561, "headlines": 750}  # SMT: gold without input, left out
    unique = {text for row in rows["STS12"] for text in (row["sentence1"], row["sentence2"])}
    assert len(unique) == _unique_texts_by_hand(root / "STS12-en-test") == 4946


def test_the_docs_fragment_reads_the_real_mirror(tmp_path: Path, data_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """docs/readers.md's STS year, put into the five-minute spec, scores every pair of the mirror's folder."""
    import yaml

    from tests.test_docs_blocks import YAML_BLOCKS, wrapped

    if not (data_dir / "senteval-sts").is_dir():
        pytest.skip("senteval-sts not in the data mirror")
    (block,) = [b for b in YAML_BLOCKS if b.doc.name == "readers.md" and "senteval_sts" in b.text]
    spec = wrapped(load_plain(block.text))
    path = tmp_path / "year.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    results = run_ok([str(path), "--data-dir", str(data_dir), "--adapter", "hashing", "-q", "--output",
                      str(tmp_path / "o")], capsys)
    assert results.scores["test"]["spearman"].n == EXPECTED["STS12"]
    assert results.texts.unique == 4946
