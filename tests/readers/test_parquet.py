"""The parquet reader: rows as pyarrow wrote them, batch by batch; a file that is not parquet is one line naming
it; a spec whose `mirror:` names a parquet file runs end to end and scores as the same pairs in a TSV do."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from specrun.core.contracts import ReadLayout
from specrun.core.errors import DataError
from specrun.core.registry import READERS
from specrun.readers import parquet as parquet_reader
from specrun.readers.parquet import read_parquet
from specrun.spec import load_spec
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.fixtures import fixture_spec

PAIRS = [("A man plays the guitar.", "A man is playing a guitar.", 4.6), ("A dog runs.", "The cat sleeps.", 0.4),
         ("Kids play soccer.", "Children are playing football.", 4.0), ("Rain falls.", "The sun shines.", 1.0),
         ("He cooks pasta.", "A man is cooking noodles.", 3.6), ("A woman reads a book.", "A lady is reading.", 3.9),
         ("The train is late.", "Bananas are yellow.", 0.1), ("Two men fight.", "Two men are fighting.", 4.9),
         ('He said "hi.', "A bird is flying.", 2.2), ("She writes a letter.", "A girl is writing.", 3.0),
         ("The market is busy.", "Many people shop.", 2.8), ("A car drives fast.", "A horse eats hay.", 0.3)]


def _table() -> pa.Table:
    return pa.table({"sentence1": [a for a, _, _ in PAIRS], "sentence2": [b for _, b, _ in PAIRS],
                     "score": [g for _, _, g in PAIRS]})


def test_rows_round_trip_with_their_types_across_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = pa.table({"text": ["a", "b\tc", None, "d\ne", "\"q"], "n": [1, 2, 3, None, 5],
                      "x": [0.5, 1.0, float("nan"), 2.5, -1.0], "flag": [True, False, None, True, False],
                      "labels": [["x"], [], ["y", "z"], None, ["w"]]})
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path, row_group_size=2)
    monkeypatch.setattr(parquet_reader, "BATCH_ROWS", 2)  # five rows in three batches: the joins are checked
    rows = list(read_parquet(path, ReadLayout("parquet"), "test"))
    expected = table.to_pylist()
    assert len(rows) == 5 and [row["text"] for row in rows] == [row["text"] for row in expected]
    assert rows[2]["x"] != rows[2]["x"]  # NaN as the file holds it, converted (and refused) in the data stage
    for row, want in zip(rows, expected, strict=True):
        assert {k: v for k, v in row.items() if k != "x"} == {k: v for k, v in want.items() if k != "x"}
    assert [type(rows[0][k]) for k in ("text", "n", "x", "flag", "labels")] == [str, int, float, bool, list]


@pytest.mark.parametrize("content, expected", [
    (b"sentence1\tsentence2\tscore\na\tb\t1\n", "not a parquet file (it does not begin with the bytes PAR1)"),
    (b"", "not a parquet file"),
    (None, "not a whole parquet file"),
])
def test_a_file_that_is_not_parquet_is_one_line_naming_it(content: bytes | None, expected: str,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "pairs.parquet"
    if content is None:  # a download cut short
        pq.write_table(_table(), path)
        content = path.read_bytes()[:-10]
    path.write_bytes(content)
    with pytest.raises(DataError) as caught:
        read_parquet(path, ReadLayout("parquet"), "test")
    line = caught.value.one_line()
    assert line.startswith(f"{path}: ") and expected in line


def test_two_columns_of_one_name_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "twice.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["text", "text"]), path)
    with pytest.raises(DataError, match="two columns named 'text'"):
        read_parquet(path, ReadLayout("parquet"), "test")


def _mirror_spec(tmp_path: Path, data: Path, fmt: str, file: str) -> Path:
    """BIOSSES' spec with its `mirror:` pointing at a file of the twelve pairs, its fingerprints recomputed."""
    folder = tmp_path / fmt
    folder.mkdir()
    return fixture_spec("biosses", folder, data, {"sources.biosses.mirror": {"format": fmt, "files": {"train": file}}})


def test_a_mirror_parquet_file_runs_end_to_end_as_its_tsv_twin(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    (data / "biosses").mkdir(parents=True)
    pq.write_table(_table(), data / "biosses" / "pairs.parquet")
    (data / "biosses" / "pairs.tsv").write_text("sentence1\tsentence2\tscore\n" + "".join(
        f"{a}\t{b}\t{g}\n" for a, b, g in PAIRS), encoding="utf-8")
    spec = _mirror_spec(tmp_path, data, "parquet", "pairs.parquet")
    twin = _mirror_spec(tmp_path, data, "tsv", "pairs.tsv")
    assert load_spec(spec).spec.sources["biosses"].layout.format == "parquet"
    assert load_spec(spec).spec.splits["test"].fingerprint == load_spec(twin).spec.splits["test"].fingerprint
    common = ["--data-dir", str(data), "--adapter", "hashing", "-q"]
    results = run_ok([str(spec), *common, "--output", str(tmp_path / "o1")], capsys)
    reference = run_ok([str(twin), *common, "--output", str(tmp_path / "o2")], capsys)
    for metric, score in results.scores["test"].items():
        assert score.n == len(PAIRS)
        assert (score.value, score.ci_low, score.ci_high) == (
            reference.scores["test"][metric].value, reference.scores["test"][metric].ci_low,
            reference.scores["test"][metric].ci_high)


def test_new_takes_a_parquet_file_by_its_extension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "data" / "pairs"
    folder.mkdir(parents=True)
    pq.write_table(_table().rename_columns(["text1", "text2", "gold"]), folder / "test.parquet")
    code, _, err = run_cli(["new", "sts", "pairs", "--data", str(folder / "test.parquet"), "-o",
                            str(tmp_path / "p.yaml")], capsys)
    assert code == 0, err
    assert load_spec(tmp_path / "p.yaml").spec.sources["pairs"].layout.format == "parquet"
    (folder / "fake.parquet").write_text("text1,text2,gold\n", encoding="utf-8")
    code, _, err = run_cli(["new", "sts", "fake", "--data", str(folder / "fake.parquet"), "-o",
                            str(tmp_path / "f.yaml")], capsys)
    assert_one_line_error(code, err, contains=f"{folder / 'fake.parquet'}: not a parquet file")


def test_parquet_is_registered_as_a_file_format() -> None:
    entry = READERS["parquet"]
    assert not entry.folder and entry.options is None and entry.read is read_parquet
