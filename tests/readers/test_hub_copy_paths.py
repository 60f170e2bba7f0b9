"""A local copy of a hub dataset repo reads only its own files, as `datasets` resolves them: a link out of the copy
(a data file or the card), a folder linked inside it, a hidden file a pattern asks for, each is one line before a
byte is read; hidden files a glob would match are left out as `datasets` leaves them, and the files of a glob
come in `datasets`' order. Both readers of a copy are attacked: `datasets` itself (an hf_dataset without
`mirror`) and the `mteb_retrieval` folder format."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from datasets.data_files import resolve_pattern

from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
from specrun.readers.hub_snapshot import read_snapshot, records
from tests.conftest import assert_one_line_error, run_cli
from tests.mteb.snapshots import hub_snapshot
from tests.readers.test_mteb_retrieval_run import make_mteb_repo, mteb_spec


def _sts_copy(data: Path, splits: tuple[str, ...] = ("test",)) -> Path:
    rows = {"sentence1": [f"a cat sat {i}" for i in range(30)], "sentence2": [f"a dog ran {i}" for i in range(30)],
            "score": [float(i % 5) for i in range(30)]}
    return hub_snapshot(data / "sts12", dict.fromkeys(splits, rows))


def _import(tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _out, err = run_cli(["import", "mteb", "STS12", "-o", str(tmp_path / "imported"), "--data-dir", str(data)],
                              capsys)
    return code, err


def test_a_data_file_linked_out_of_the_copy_is_never_read_by_datasets(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    folder = _sts_copy(data)
    code, err = _import(tmp_path, data, capsys)
    assert code == 0, err
    spec = tmp_path / "imported" / "sts12.yaml"
    (part,) = (folder / "data").glob("*.parquet")
    outside = tmp_path / "outside.parquet"
    shutil.move(part, outside)
    part.symlink_to(outside)  # the same bytes, from outside the data folder
    for args in (["fingerprint", str(spec), "--data-dir", str(data)],
                 [str(spec), "--data-dir", str(data), "--adapter", "hashing", "-q", "--output", str(tmp_path / "o")]):
        code, _out, err = run_cli(args, capsys)
        assert_one_line_error(code, err, contains="outside the copy of the dataset repo")
    assert not (tmp_path / "o").exists()
    shutil.rmtree(tmp_path / "imported")
    code, err = _import(tmp_path, data, capsys)  # nor pinned from it
    assert_one_line_error(code, err, contains="outside the copy of the dataset repo")
    assert not (tmp_path / "imported").exists()


def test_a_card_linked_out_of_the_copy_is_refused_by_both_readers(tmp_path: Path) -> None:
    outside = tmp_path / "card.md"
    for repo in (make_mteb_repo(tmp_path / "a"), _sts_copy(tmp_path / "b")):
        shutil.copy(repo / "README.md", outside)
        (repo / "README.md").unlink()
        (repo / "README.md").symlink_to(outside)
    with pytest.raises(DataError, match=r"is a link to .*card\.md, outside the dataset folder"):
        read_snapshot(tmp_path / "a" / "corpusset")
    from specrun.data.hub_files import read_files
    from specrun.spec import HubDataset

    source = HubDataset.model_validate({"type": "hf_dataset", "path": "o/sts12", "revision": "a" * 40,
                                        "licence": "cc0-1.0", "splits": ["test"],
                                        "columns": {"text_a": "sentence1", "text_b": "sentence2",
                                                    "score": "score"}})
    with pytest.raises(DataError, match=r"is a link to .*card\.md, outside the copy of the dataset repo"):
        read_files(source, tmp_path / "b" / "sts12")


def _with_corpus_glob(repo: Path) -> None:
    card = (repo / "README.md").read_text(encoding="utf-8")
    (repo / "README.md").write_text(card.replace("path: corpus/test.parquet", "path: corpus/*.parquet"),
                                    encoding="utf-8")


def test_a_hidden_file_a_glob_matches_is_left_out_as_datasets_leaves_it(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    repo = make_mteb_repo(data)
    _with_corpus_glob(repo)
    spec = mteb_spec(tmp_path, data)  # pinned before the hidden file is there
    pq.write_table(pa.table({"_id": ["x1"], "title": [""], "text": ["hidden"]}), repo / "corpus" / ".extra.parquet")
    assert [Path(p).name for p in resolve_pattern("corpus/*.parquet", str(repo))] == ["test.parquet"]
    assert [p.name for p in read_snapshot(repo).files("corpus", "test")] == ["test.parquet"]
    code, _out, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache"], capsys)
    assert code == 0 and "does not match" not in err, err  # the same items as before it came
    card = (repo / "README.md").read_text(encoding="utf-8")
    (repo / "README.md").write_text(card.replace("corpus/*.parquet", "corpus/.extra.parquet"), encoding="utf-8")
    with pytest.raises(DataError, match=r"reads corpus/\.extra\.parquet, below a dot-name"):
        read_snapshot(repo).files("corpus", "test")  # asked for by name: read by datasets, never pinned here


def test_a_folder_linked_inside_the_copy_is_refused_not_read_unpinned(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    repo = make_mteb_repo(data)
    spec = mteb_spec(tmp_path, data)
    capsys.readouterr()
    (repo / "corpus").rename(repo / ".store")  # below a dot-name: left out of the pins
    (repo / "corpus").symlink_to(repo / ".store")  # inside the copy, yet a walk of its folders does not follow it
    code, _out, err = run_cli([str(spec), "--data-dir", str(data), "--adapter", "hashing", "-q", "--output",
                               str(tmp_path / "o")], capsys)
    assert_one_line_error(code, err, contains="corpus/test.parquet")  # pinned: the pins miss the linked file
    assert not (tmp_path / "o").exists()
    document = load_plain(spec.read_text(encoding="utf-8"))
    del document["sources"]["corpusset"]["files"], document["splits"]["test"]["fingerprint"]
    spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    code, _out, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data), "--no-cache", "--write"], capsys)
    assert_one_line_error(code, err, contains="reads corpus/test.parquet through a linked folder")
    assert "files" not in load_plain(spec.read_text(encoding="utf-8"))["sources"]["corpusset"]


@pytest.mark.parametrize(("pattern", "message"), [
    ("../outside/*.parquet", "is not a path inside the dataset repo"),
    ("/etc/*.parquet", "is not a path inside the dataset repo"),
    ("zip://*::ZIP", "is not a path inside the dataset repo"),  # fsspec opened it first (a FIFO there: a hang)
    ("hf://datasets/mteb/scifact/*.jsonl", "is not a path inside the dataset repo"),  # or go online
    ("file:///etc/passwd", "is not a path inside the dataset repo"),
    ("corpus/none-*.parquet", "no file matches it"),
])
def test_a_pattern_outside_the_copy_or_matching_nothing_is_one_line_naming_the_config(
        pattern: str, message: str, tmp_path: Path) -> None:
    repo = make_mteb_repo(tmp_path)
    with zipfile.ZipFile(tmp_path / "outside.zip", "w") as archive:
        archive.writestr("x.parquet", (repo / "corpus" / "test.parquet").read_bytes())
    card = (repo / "README.md").read_text(encoding="utf-8")
    (repo / "README.md").write_text(card.replace("path: corpus/test.parquet", f"path: '{pattern}'")
                                    .replace("ZIP", str(tmp_path / "outside.zip")), encoding="utf-8")
    with pytest.raises(DataError, match=f"config 'corpus': .*{message}"):
        read_snapshot(repo).files("corpus", "test")


def test_a_copy_in_a_folder_named_with_glob_characters_reads_its_own_files(tmp_path: Path) -> None:
    """`[1]` in the copy's own path is no pattern: its files are read, not a sibling's `x1`'s."""
    repo = make_mteb_repo(tmp_path / "x[1]")
    sibling = make_mteb_repo(tmp_path / "x1")
    card = (repo / "README.md").read_text(encoding="utf-8")
    (repo / "README.md").write_text(card.replace("path: corpus/test.parquet", "path: corpus/*.parquet"),
                                    encoding="utf-8")
    assert read_snapshot(repo).files("corpus", "test") == [repo / "corpus" / "test.parquet"]
    assert sibling.is_dir()


def test_any_split_of_the_config_or_its_infos_linking_out_is_refused(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`datasets` prepares every split of a config, and reads dataset_infos.json: a link out of the copy in a
    split the spec does not read, or the infos file, is refused too (a review found both read)."""
    data = tmp_path / "data"
    folder = _sts_copy(data, ("test", "train"))
    code, err = _import(tmp_path, data, capsys)
    assert code == 0, err
    spec = tmp_path / "imported" / "sts12.yaml"
    train = folder / "data" / "train.parquet"
    shutil.move(train, tmp_path / "train.parquet")
    train.symlink_to(tmp_path / "train.parquet")  # the train split, which the spec never reads
    code, _out, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data)], capsys)
    assert_one_line_error(code, err, contains="split train reads")
    train.unlink()
    shutil.move(tmp_path / "train.parquet", train)
    (tmp_path / "infos.json").write_text("{}", encoding="utf-8")
    (folder / "dataset_infos.json").symlink_to(tmp_path / "infos.json")
    code, _out, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data)], capsys)
    assert_one_line_error(code, err, contains="dataset_infos.json: is a link to")


def test_the_files_of_a_glob_come_in_datasets_order(tmp_path: Path) -> None:
    """`en-US` before `en` ('-' sorts before '/' as text), where a sort of paths part by part puts `en` first."""
    repo = make_mteb_repo(tmp_path)
    table = pq.read_table(repo / "corpus" / "test.parquet")
    for part, rows in (("en", slice(0, 3)), ("en-US", slice(3, None))):
        (repo / "corpus" / part).mkdir()
        pq.write_table(table.slice(rows.start, (rows.stop or len(table)) - rows.start),
                       repo / "corpus" / part / "part.parquet")
    (repo / "corpus" / "test.parquet").unlink()
    card = (repo / "README.md").read_text(encoding="utf-8")
    (repo / "README.md").write_text(card.replace("path: corpus/test.parquet", "path: corpus/**/*.parquet"),
                                    encoding="utf-8")
    ours = [p.relative_to(repo).as_posix() for p in read_snapshot(repo).files("corpus", "test")]
    theirs = [Path(p).relative_to(repo).as_posix() for p in resolve_pattern("corpus/**/*.parquet", str(repo))]
    assert ours == theirs == ["corpus/en-US/part.parquet", "corpus/en/part.parquet"]


def test_bytes_that_are_not_utf8_are_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    """The card, and a queries file at its third line (text-mode reading used to lose the line)."""
    repo = make_mteb_repo(tmp_path)
    lines = (repo / "queries" / "test.jsonl").read_bytes().splitlines(keepends=True)
    bad = b'{"_id": "x", "text": "\xff"}\n'
    (repo / "queries" / "test.jsonl").write_bytes(b"".join([*lines[:2], bad, *lines[2:]]))
    with pytest.raises(DataError, match="not UTF-8") as raised:
        list(records(read_snapshot(repo).files("queries", "test")))
    assert raised.value.file.endswith("queries/test.jsonl") and raised.value.line == 3
    card = b"\xef\xbb\xbf" + (repo / "README.md").read_bytes()  # a BOM first: the byte counts from the file's start
    (repo / "README.md").write_bytes(card + b"\xff\n")
    with pytest.raises(DataError, match=rf"not UTF-8 \(byte {len(card)}\)") as raised:
        read_snapshot(repo)
    assert raised.value.file.endswith("README.md")


def test_a_judged_query_without_text_is_named_at_its_line(tmp_path: Path) -> None:
    """Named in the queries file at its line (it was the item's row under the folder's name); a query without
    qrels is dropped as MTEB drops it, empty or not."""
    from specrun.readers.mteb_retrieval import read_mteb_retrieval

    repo = make_mteb_repo(tmp_path)
    queries = repo / "queries" / "test.jsonl"
    lines = queries.read_text(encoding="utf-8").splitlines()
    judged = json.loads(lines[1])["_id"]
    lines[1] = json.dumps({"_id": judged, "text": "  "})
    lines[-1] = json.dumps({"_id": "c9", "text": ""})  # no qrels: dropped, never refused
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=f"query '{judged}' has qrels and an empty text") as raised:
        read_mteb_retrieval(repo, None, "test")  # type: ignore[arg-type]
    assert (raised.value.file, raised.value.line) == (str(queries), 2)
    lines[1] = json.dumps({"_id": judged, "text": "a query again"})
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert all(row["query_id"] != "c9" for row in read_mteb_retrieval(repo, None, "test"))  # type: ignore[arg-type]


@pytest.mark.parametrize("pattern", ["zip://test.parquet::FIFO", "hf://datasets/mteb/sts12/data/*.parquet",
                                     "../outside.parquet"])
def test_a_card_pattern_outside_the_copy_is_refused_before_datasets_resolves_it(
        pattern: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The `datasets` reader too (a review found the check in the folder format only): fsspec opened an archive
    hop over a FIFO (a hang) and an hf:// pattern went online before any check."""
    import os

    data = tmp_path / "data"
    folder = _sts_copy(data)
    code, err = _import(tmp_path, data, capsys)
    assert code == 0, err
    os.mkfifo(tmp_path / "fifo")
    card = (folder / "README.md").read_text(encoding="utf-8")
    (folder / "README.md").write_text(card.replace("path: data/test.parquet", "path: '" + pattern.replace(
        "FIFO", str(tmp_path / "fifo")) + "'"), encoding="utf-8")
    code, _out, err = run_cli(["fingerprint", str(tmp_path / "imported" / "sts12.yaml"), "--data-dir", str(data)],
                              capsys)
    assert_one_line_error(code, err, contains="is not a path inside the dataset repo")


def test_a_huggingface_yaml_beside_the_card_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`datasets` merges .huggingface.yaml's `configs:` over the card's: rows from a file the pins never named,
    linked from outside the data folder, were read and recorded as the pinned file (a review)."""
    data = tmp_path / "data"
    folder = _sts_copy(data)
    code, err = _import(tmp_path, data, capsys)
    assert code == 0, err
    (folder / "other").mkdir()
    shutil.copy(folder / "data" / "test.parquet", tmp_path / "outside.parquet")
    (folder / "other" / "test.parquet").symlink_to(tmp_path / "outside.parquet")
    (folder / ".huggingface.yaml").write_text("configs:\n- config_name: default\n  data_files:\n  - split: test\n"
                                              "    path: other/test.parquet\n", encoding="utf-8")
    spec = str(tmp_path / "imported" / "sts12.yaml")
    for args in (["fingerprint", spec, "--data-dir", str(data)],
                 [spec, "--data-dir", str(data), "--adapter", "hashing", "-q", "--output", str(tmp_path / "o")]):
        code, _out, err = run_cli(args, capsys)
        assert_one_line_error(code, err, contains=".huggingface.yaml: `datasets` takes this file's `configs:`")
    assert not (tmp_path / "o").exists()
