"""`specrun new KIND NAME --data FILE...`: a spec that validates and runs at once (sha256 pins, columns found by
name, fingerprints), its unknowns marked TODO; an existing file is never overwritten."""

from __future__ import annotations

import csv
import hashlib
from collections import Counter
from pathlib import Path

import pytest

from specrun.spec import load_spec
from tests.conftest import assert_one_line_error, run_cli

PAIRS = [("A man plays the guitar.", "A man is playing a guitar.", 4.6), ("A dog runs.", "The cat sleeps.", 0.4),
         ("Kids play soccer.", "Children are playing football.", 4.0), ("Rain falls.", "The sun shines.", 1.0),
         ("He cooks pasta.", "A man is cooking noodles.", 3.6), ("A woman reads a book.", "A lady is reading.", 3.9),
         ("The train is late.", "Bananas are yellow.", 0.1), ("Two men fight.", "Two men are fighting.", 4.9),
         ("A bird sings.", "A bird is flying.", 2.2), ("She writes a letter.", "A girl is writing.", 3.0),
         ("The market is busy.", "Many people shop.", 2.8), ("A car drives fast.", "A horse eats hay.", 0.3)]
LABELLED = [(f"refund my payment {i}", "money") for i in range(12)] + \
           [(f"my card was stolen {i}", "security") for i in range(12)]  # above MTEB's 8 a label: draws differ
TESTED = [("refund please", "money"), ("a fee was charged", "money"), ("lock my card", "security"),
          ("someone used my account", "security"), ("where is my money", "money"), ("my card is gone", "security"),
          ("return my payment", "money"), ("stolen wallet and card", "security"), ("refund the fee", "money"),
          ("freeze my account", "security"), ("payment refund", "money"), ("card stolen today", "security")]


def tsv(path: Path, header: list[str], rows: list[tuple[object, ...]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(map(str, row)) + "\n" for row in rows),
                    encoding="utf-8")
    return path


def test_sts_spec_validates_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tsv(tmp_path / "data" / "pairs" / "test.tsv", ["text1", "text2", "gold"], PAIRS)
    target = tmp_path / "specs" / "pairs.yaml"
    code, out, err = run_cli(["new", "sts", "pairs", "--data", str(data), "-o", str(target)], capsys)
    assert code == 0, err
    assert out.strip() == str(target)
    assert "specrun: columns guessed from the header by name: text1, text2, gold" in err
    assert f"run it with --data-dir {tmp_path / 'data'}" in err
    text = target.read_text(encoding="utf-8")
    assert "TODO" in text and hashlib.sha256(data.read_bytes()).hexdigest() in text
    loaded = load_spec(target)
    spec = loaded.spec
    assert spec.card is not None and spec.card.what_is_measured.startswith("TODO:")
    assert spec.sources["pairs"].columns == {"text1": "text1", "text2": "text2", "gold": "gold"}
    code, out, err = run_cli(["fingerprint", str(target), "--data-dir", str(tmp_path / "data")], capsys)
    assert code == 0, err
    assert out.split()[1] == spec.splits["test"].fingerprint  # what `specrun fingerprint` computes
    code, out, err = run_cli([str(target), "--adapter", "hashing", "--data-dir", str(tmp_path / "data"),
                              "--output", str(tmp_path / "out"), "-q"], capsys)
    assert code == 0, err
    assert Path(out.strip().splitlines()[-1]).is_file()


def test_classification_fits_on_the_train_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.results import Results

    folder = tmp_path / "data" / "intents"
    test = tsv(folder / "test.tsv", ["Text", "Label"], TESTED)  # found by name, whatever the case
    train = tsv(folder / "train.tsv", ["Text", "Label"], LABELLED)
    target = tmp_path / "intents.yaml"
    code, _, err = run_cli(["new", "classification", "intents", "--data", str(test), str(train), "-o", str(target)],
                           capsys)
    assert code == 0, err
    spec = load_spec(target).spec
    assert spec.splits["train"].evaluate is False and spec.evaluated_splits == ["test"]
    assert spec.protocols["classification"].options.fit_split == "train"  # type: ignore[attr-defined]
    assert spec.sources["intents"].columns == {"text": "Text", "label": "Label"}
    code, out, err = run_cli([str(target), "--adapter", "hashing", "--data-dir", str(tmp_path / "data"),
                              "--output", str(tmp_path / "out"), "-q"], capsys)
    assert code == 0, err
    results = Results.model_validate_json(Path(out.strip().splitlines()[-1]).read_text())
    stats = results.statistics
    assert stats is not None and set(stats) == {"test", "train"} and not stats["train"].evaluated
    for split, path in (("test", test), ("train", train)):
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        assert stats[split].n == len(rows)
        assert stats[split].fields["label"].labels == dict(sorted(Counter(r["Label"] for r in rows).items()))
        lengths = [len(r["Text"]) for r in rows]
        length = stats[split].fields["text"].length
        assert length is not None and (length.min, length.max) == (min(lengths), max(lengths))
        assert length.mean == pytest.approx(sum(lengths) / len(lengths))


def test_unfound_columns_are_marked_and_given_ones_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tsv(tmp_path / "data" / "pairs" / "test.tsv", ["sentence1", "sentence2", "score"], PAIRS)
    target = tmp_path / "a.yaml"
    code, _, err = run_cli(["new", "sts", "pairs", "--data", str(data), "-o", str(target)], capsys)
    assert code == 0, err
    assert "fields not found in the header: text1, text2, gold" in err
    spec = load_spec(target, require_fingerprints=False).spec
    assert spec.sources["pairs"].columns == {"text1": "TODO-text1", "text2": "TODO-text2", "gold": "TODO-gold"}
    assert spec.splits["test"].fingerprint is None  # nothing to fingerprint yet; the sha256 pin stands
    code, _, err = run_cli(["validate", str(target)], capsys)
    assert code == 0, err
    target = tmp_path / "b.yaml"
    code, _, err = run_cli(["new", "sts", "pairs", "--data", str(data), "-o", str(target), "--column",
                            "text1=sentence1", "--column", "text2=sentence2", "--column", "gold=score"], capsys)
    assert code == 0, err
    assert load_spec(target).spec.splits["test"].fingerprint is not None


def test_an_existing_file_is_never_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tsv(tmp_path / "data" / "pairs" / "test.tsv", ["text1", "text2", "gold"], PAIRS)
    target = tmp_path / "pairs.yaml"
    target.write_text("mine\n", encoding="utf-8")
    code, _, err = run_cli(["new", "sts", "pairs", "--data", str(data), "-o", str(target)], capsys)
    assert_one_line_error(code, err, contains="exists; `new` never overwrites a spec")
    assert target.read_text(encoding="utf-8") == "mine\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "data", "pairs.yaml"]


@pytest.mark.parametrize("args, expected", [
    (["new", "stss", "x", "--data", "{data}"], "unknown protocol kind 'stss'"),
    (["new", "sts", "Bad Name", "--data", "{data}"], "NAME 'Bad Name'"),
    (["new", "classification", "x", "--data", "{data}"], "fits on a split (fit_split): give two files"),
    (["new", "sts", "x", "--data", "{folder}/missing.tsv"], "no such file"),
    (["new", "sts", "x", "--data", "{data}", "--column", "text1"], "expected FIELD=COLUMN"),
    (["new", "sts", "x", "--data", "{data}", "--column", "gld=gold"], "kind sts has no field 'gld'; its fields:"),
    (["new", "corpus_retrieval", "x", "--data", "{data}"], "lists or corpora"),
    (["new", "conditional_sts", "x", "--data", "{data}"], "needs options template, subtract_condition"),
])
def test_what_new_cannot_do_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                        expected: str) -> None:
    data = tsv(tmp_path / "data" / "pairs" / "test.tsv", ["text1", "text2", "gold"], PAIRS)
    args = [a.format(data=data, folder=data.parent) for a in args]
    code, _, err = run_cli([*args, "-o", str(tmp_path / "x.yaml")], capsys)
    assert_one_line_error(code, err, contains=expected)
    assert not (tmp_path / "x.yaml").exists()


def test_other_formats_by_extension(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    folder = tmp_path / "data" / "pairs"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text("".join(json.dumps({"text1": a, "text2": b, "gold": g}) + "\n"
                                               for a, b, g in PAIRS), encoding="utf-8")
    code, _, err = run_cli(["new", "sts", "pairs", "--data", str(folder / "test.jsonl"), "-o",
                            str(tmp_path / "j.yaml")], capsys)
    assert code == 0, err
    assert load_spec(tmp_path / "j.yaml").spec.sources["pairs"].format == "jsonl"  # type: ignore[union-attr]
    (folder / "test.txt").write_text("x\n", encoding="utf-8")
    code, _, err = run_cli(["new", "sts", "pairs", "--data", str(folder / "test.txt"), "-o",
                            str(tmp_path / "t.yaml")], capsys)
    assert_one_line_error(code, err, contains="expected files of one format, by extension .csv, .json, .jsonl, "
                                              ".parquet, .tsv")


def test_the_format_is_the_one_a_reader_declares_for_the_extension(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`new` knows no extension itself: a plugin reader that declares one is chosen by it, and two readers that
    declare the same one are named rather than one picked."""
    from specrun.core.contracts import ReaderEntry
    from specrun.core.errors import RegistryError
    from specrun.core.registry import READERS, register_reader
    from specrun.readers.delimited import read_tsv

    data = tsv(tmp_path / "data" / "pairs" / "test.pairs", ["text1", "text2", "gold"], PAIRS)
    register_reader(ReaderEntry("toy_pairs", read_tsv, extensions=(".pairs",), provider="toy-plugin"))
    try:
        code, _, err = run_cli(["new", "sts", "pairs", "--data", str(data), "-o", str(tmp_path / "p.yaml")], capsys)
        assert code == 0, err
        assert load_spec(tmp_path / "p.yaml").spec.sources["pairs"].format == "toy_pairs"  # type: ignore[union-attr]
        register_reader(ReaderEntry("toy_pairs_too", read_tsv, extensions=(".pairs",), provider="toy-plugin"))
        code, _, err = run_cli(["new", "sts", "pairs", "--data", str(data), "-o", str(tmp_path / "q.yaml")], capsys)
        assert_one_line_error(code, err, contains=".pairs is read by formats toy_pairs, toy_pairs_too")
        assert not (tmp_path / "q.yaml").exists()
    finally:
        READERS.unregister("toy_pairs")
        READERS.unregister("toy_pairs_too")
    with pytest.raises(RegistryError, match="extensions must be a tuple of lower-case"):
        register_reader(ReaderEntry("toy_bad", read_tsv, extensions=("TSV",)))
    with pytest.raises(RegistryError, match="a folder format reads no file by extension"):
        register_reader(ReaderEntry("toy_folder", read_tsv, folder=True, extensions=(".tsv",)))
    assert "toy_bad" not in READERS and "toy_folder" not in READERS
