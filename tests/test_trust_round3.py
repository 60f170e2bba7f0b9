"""Trust, round three: each case misled a user before (issue 32) and is now one line, exit 2, or the right
behaviour. The closing note names each case by its test."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from specrun.core.errors import DataError
from specrun.core.plain_yaml import load_plain
from specrun.readers.aligned_lines import read_aligned_lines
from specrun.readers.jsonl import read_jsonl
from tests.conftest import SPECS, assert_one_line_error, fewer_items, run_cli

BIOSSES = SPECS / "biosses.yaml"


def edited(tmp_path: Path, old: str, new: str, spec: Path = BIOSSES) -> Path:
    text = spec.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / spec.name
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_a_direction_contradicting_the_registry_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pearson declared lower-is-better would rank the worse model first and pass publish's direction check."""
    path = edited(tmp_path, "    direction: higher", "    direction: lower")
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert_one_line_error(code, err, contains="metrics.pearson_zero_shot.direction: pearson is higher is better "
                                              "(its registry entry); the spec says lower")


def test_a_misspelt_top_level_key_is_named_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = edited(tmp_path, "\nsubset:\n", "\nsubsett:\n")
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert_one_line_error(code, err, contains="subsett: unknown key (did you mean 'subset'?); expected one of:")


def test_a_missing_prompt_set_file_is_named_as_a_prompt_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([str(BIOSSES), "--prompt-set", str(tmp_path / "nope.yaml"), "--adapter", "hashing",
                            "--output", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="nope.yaml: cannot read the prompt set (--prompt-set)")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("option", "value"), [("samples_per_label", True), ("samples_per_label", "4"),
                                               ("n_experiments", "5"), ("max_iter", 2.5)])
def test_protocol_options_take_no_coerced_values(tmp_path: Path, option: str, value: object,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`samples_per_label: true` ran as 1 and '4' as 4: options are as strict as the rest of the spec."""
    data = load_plain((SPECS / "banking77.yaml").read_text(encoding="utf-8"))
    (protocol,) = data["protocols"].values()
    protocol["options"][option] = value
    path = tmp_path / "banking77.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert_one_line_error(code, err, contains=f".options.{option}:")


def test_the_results_table_prints_names_whole_in_a_log(tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """stderr not a terminal (a log, CI): rich cut `spearman_zero_shot` to `spearman_zero_…` at 80 columns."""
    spec = fewer_items(tmp_path / "specs", "jsick-pairs.yaml", test=300)
    code, _, err = run_cli([str(spec), "--data-dir", str(data_dir), "--adapter", "hashing", "--output",
                            str(tmp_path / "out")], capsys)
    assert code == 0, err
    rows = [line for line in err.splitlines() if "jsick-pairs" in line and "│" in line]
    assert len(rows) == 5 and all("…" not in row for row in rows)
    assert any("[" in row and "centred" in row for row in rows)  # the interval and its method on one row


def test_a_jsonl_object_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n{"a": 1, "b": 2, "a": 3}\n', encoding="utf-8")
    with pytest.raises(DataError) as raised:
        read_jsonl(path, None, "test")
    assert raised.value.one_line() == f"{path}:2: the key 'a' is given twice in one object"


def test_a_jsonl_integer_beyond_the_digit_limit_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n{"a": 1}\n{"a": ' + "9" * 5000 + "}\n", encoding="utf-8")
    with pytest.raises(DataError) as raised:
        read_jsonl(path, None, "test")
    assert raised.value.one_line().startswith(f"{path}:3: invalid JSON: Exceeds the limit (4300 digits)")


def test_aligned_files_with_cr_line_ends_say_so(tmp_path: Path) -> None:
    """CR-only line ends read as one line per file, and the error spoke of the bootstrap interval."""
    (tmp_path / "x.src").write_bytes(b"one\rtwo\rthree\r")
    (tmp_path / "x.tgt").write_bytes(b"eins\rzwei\rdrei\r")
    layout = SimpleNamespace(options={"files": {"source": "x.src", "target": "x.tgt"}})  # what the reader reads
    with pytest.raises(DataError) as raised:
        read_aligned_lines(tmp_path, layout, "x")  # type: ignore[arg-type]
    line = raised.value.one_line()
    assert line.startswith(f"{tmp_path / 'x.src'}:1: holds a carriage return inside a line") and "\\r" in line


def test_labels_that_print_alike_are_told_apart_in_messages() -> None:
    """`"0"` vs `0` and composed vs decomposed `café` were shown as if equal in a label mismatch."""
    import unicodedata

    from specrun.protocols.labels import shown

    composed, decomposed = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    assert shown(["0"]) == "'0'" and shown([0]) == "0 (a number)"
    assert shown([composed]) == f"{composed!r} (U+0063 U+0061 U+0066 U+00E9)"
    assert shown([decomposed]) == f"{decomposed!r} (U+0063 U+0061 U+0066 U+0065 U+0301)"


def test_a_regression_fit_subsample_of_equal_targets_is_named_as_such() -> None:
    """It was reported as an undefined metric; it is a constant fit, refused before anything is encoded."""
    from specrun.core.types import Item
    from specrun.protocols.regression import RegressionOptions, RegressionProtocol

    fit = [Item(id=f"f{i}", fields={"text": f"t{i}", "target": 1.0 if i < 30 else 2.0}) for i in range(32)]
    options = RegressionOptions(fit_split="train", n_samples=2, n_experiments=3, seed=1)
    with pytest.raises(DataError, match=r"experiment \d's 2 fit items all have target 1\.0, so its regression "
                                        r"predicts a constant; raise n_samples"):
        RegressionProtocol().validate_items([], options, "f", {"train": fit})


def test_a_hashing_run_is_never_pushed_and_a_dry_run_says_what_it_is(tmp_path: Path, data_dir: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """publish printed a model-index for the bundled model from hashing numbers."""
    code, out, err = run_cli([str(BIOSSES), "--data-dir", str(data_dir), "--adapter", "hashing", "-q",
                              "--output", str(tmp_path / "runs")], capsys)
    assert code == 0, err
    run = out.strip().splitlines()[-1]
    push = ["publish", run, "--benchmark", "specrun/biosses", "--confirm-licence", "ok", "--repo", "a/b", "--push"]
    code, _, err = run_cli(push, capsys)
    assert_one_line_error(code, err, contains="a run of the hashing adapter (no model")
    assert "a push is refused" in err
    code, out, err = run_cli(["publish", run, "--benchmark", "specrun/biosses", "--confirm-licence", "ok", "-o",
                              str(tmp_path / "files")], capsys)
    assert "a run of the hashing adapter" in out + err and "--push refuses it" in out + err


def test_a_damaged_hash_memo_entry_is_said_once_and_replaced(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import hashlib

    from specrun.core import files

    weights = tmp_path / "model.bin"
    weights.write_bytes(b"w" * (files.MEMO_MIN_BYTES + 10))
    memo = tmp_path / "memo"
    memo.mkdir()
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert files.memo_sha256(weights, memo) == expected  # written
    (entry,) = memo.iterdir()
    entry.write_text("0" * 64 + " forged", encoding="utf-8")
    for _ in range(2):
        assert files.memo_sha256(weights, memo) == expected
    err = capsys.readouterr().err
    assert err.count("a damaged hash memo entry") == 1 and str(weights) in err
    assert files.memo_sha256(weights, memo) == expected and "damaged" not in capsys.readouterr().err  # replaced


def test_a_file_state_hashed_in_this_process_is_not_read_again_and_a_write_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new memo folder (a suite's members, a new --cache-dir) takes the digest this process read of the same
    file state; a damaged entry, any write to the file (a new ctime: a new state) and a file that had just
    changed when it was read (a rewrite within one tick of a coarse clock keeps its state) read it again."""
    import hashlib
    import os

    from specrun.core import files

    weights = tmp_path / "model.bin"
    weights.write_bytes(b"w" * (files.MEMO_MIN_BYTES + 10))
    reads: list[Path] = []
    real = files.sha256_file
    monkeypatch.setattr(files, "sha256_file", lambda path: reads.append(path) or real(path))
    memos = [tmp_path / f"memo{i}" for i in range(5)]
    for memo in memos:
        memo.mkdir()
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert files.memo_sha256(weights, memos[0]) == expected and len(reads) == 1
    assert files.memo_sha256(weights, memos[1]) == expected and len(reads) == 2  # written just now: read again
    monkeypatch.setattr(files, "RACY_NS", -10**18)  # as if the file were old
    assert files.memo_sha256(weights, memos[2]) == expected and len(reads) == 3
    assert files.memo_sha256(weights, memos[3]) == expected and len(reads) == 3  # remembered, and written there
    (entry,) = memos[3].iterdir()
    entry.write_text("0" * 64 + " forged", encoding="utf-8")
    assert files.memo_sha256(weights, memos[3]) == expected and len(reads) == 4  # damaged: read again
    before = weights.stat()
    while weights.stat().st_ctime_ns == before.st_ctime_ns:  # a write in a later tick of the file clock
        weights.write_bytes(b"v" * (files.MEMO_MIN_BYTES + 10))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same size and mtime: only ctime tells
    assert files.memo_sha256(weights, memos[4]) == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert len(reads) == 5


def test_without_a_memo_folder_a_file_state_is_read_once_a_process_and_a_write_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--no-cache writes no memo, but a suite's members (or a test's many runs) read the same weights: the
    process' own memo serves them, and any write (a new state) or a file that had just changed reads it again."""
    import hashlib
    import os

    from specrun.core import files

    weights = tmp_path / "model.bin"
    weights.write_bytes(b"w" * (files.MEMO_MIN_BYTES + 10))
    reads: list[Path] = []
    real = files.sha256_file
    monkeypatch.setattr(files, "sha256_file", lambda path: reads.append(path) or real(path))
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert files.memo_sha256(weights, None) == expected and len(reads) == 1
    assert files.memo_sha256(weights, None) == expected and len(reads) == 2  # written just now: read again
    monkeypatch.setattr(files, "RACY_NS", -10**18)  # as if the file were old
    assert [files.memo_sha256(weights, None) for _ in range(3)] == [expected] * 3 and len(reads) == 3
    before = weights.stat()
    while weights.stat().st_ctime_ns == before.st_ctime_ns:  # a write in a later tick of the file clock
        weights.write_bytes(b"v" * (files.MEMO_MIN_BYTES + 10))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same size and mtime: only ctime tells
    assert files.memo_sha256(weights, None) == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert len(reads) == 4 and not list(tmp_path.glob("*memo*"))


def test_pair_best_measures_with_every_similarity_tied_are_undefined_not_zero() -> None:
    """They read 0.0, below the trivial classifier and the same run's at-threshold figures."""
    import numpy as np

    import specrun.metrics  # noqa: F401  (registers the metrics)
    from specrun.core.errors import MetricError
    from specrun.metrics import estimate

    tied = {"cosine_score": np.full(10, 0.5), "pair_label": np.array([0, 1] * 5)}
    for name in ("pair_best_accuracy", "pair_best_f1"):
        with pytest.raises(MetricError, match=f"{name}: undefined on these 10 unit"):
            estimate(name, tied, resamples=100, confidence=0.95, seed=1)
    scores = {f"{f}_score": np.linspace(0, 1, 10) for f in ("cosine", "dot", "euclidean")}
    scores["manhattan_score"] = np.full(10, 0.5)  # one function all tied: left out of the maximum
    best = estimate("pair_max_accuracy", {**scores, "pair_label": np.array([0] * 5 + [1] * 5)}, resamples=100,
                    confidence=0.95, seed=1)
    assert best.value == 1.0


def test_samples_per_label_above_every_class_is_refused_as_all_is() -> None:
    """With take_what_there_is and several experiments every fit was the whole split (spread 0), while the
    equivalent `samples_per_label: all` is refused."""
    from specrun.core.types import Item
    from specrun.protocols.classification import ClassificationOptions, ClassificationProtocol

    fit = [Item(id=f"f{i}", fields={"text": f"t{i}", "label": "ab"[i % 2]}) for i in range(10)]
    test = [Item(id=f"t{i}", fields={"text": f"u{i}", "label": "ab"[i % 2]}) for i in range(4)]
    options = ClassificationOptions(fit_split="train", samples_per_label=5, short_classes="take_what_there_is")
    with pytest.raises(DataError, match="every experiment fits on the whole split"):
        ClassificationProtocol().validate_items(test, options, "f", {"train": fit})
    options = ClassificationOptions(fit_split="train", samples_per_label=4, short_classes="take_what_there_is")
    ClassificationProtocol().validate_items(test, options, "f", {"train": fit})  # below one class's count: draws
    assert list(ClassificationProtocol().texts(test, options, {"train": fit}))


def test_publish_benchmark_uploads_and_names_the_split_a_protocol_fits_on(tmp_path: Path, data_dir: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Only the evaluated split went up, so the benchmark could not be re-run from its own repo."""
    _, _, err = run_cli(["publish-benchmark", str(SPECS / "banking77.yaml"), "--data-dir", str(data_dir),
                         "-o", str(tmp_path / "repo")], capsys)
    assert "Traceback" not in err
    assert (tmp_path / "repo" / "data" / "train.parquet").is_file()
    card = (tmp_path / "repo" / "README.md").read_text(encoding="utf-8")
    front = load_plain(card.split("---\n")[1])
    (config,) = front["configs"]
    assert {entry["split"] for entry in config["data_files"]} == {"test", "train"}


@pytest.mark.parametrize(("flags", "expected"), [
    (["--query-prompt", "q: "], "--query-prompt reaches no text: biosses embed(s) no queries"),
    (["--document-prompt", "d: "], "--document-prompt reaches no text: biosses embed(s) no documents"),
    (["--instruction-template", "I: {instruction} "], "--instruction-template reaches no text"),
])
def test_a_prompt_flag_that_reaches_no_text_is_refused(flags: list[str], expected: str, tmp_path: Path,
                                                       data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It named a new folder and leaderboard row with the very same scores."""
    code, _, err = run_cli([str(BIOSSES), "--adapter", "hashing", "--data-dir", str(data_dir), "--output",
                            str(tmp_path / "out"), *flags], capsys)
    assert_one_line_error(code, err, contains=expected)
    assert not (tmp_path / "out").exists()


def test_card_from_a_run_needs_no_data(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """results.json keeps the rows its card quotes: `card --results` renders the run's report with no data
    mirror and no hub (both gone here), line for line what the run wrote."""
    code, _, err = run_cli([str(BIOSSES), "-q", "--adapter", "hashing", "--data-dir", str(data_dir),
                            "--output", str(tmp_path / "o"), "--no-cache"], capsys)
    assert code == 0, err
    results = next((tmp_path / "o").rglob("results.json"))
    monkeypatch.delenv("SPECRUN_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, err = run_cli(["card", str(BIOSSES), "--results", str(results)], capsys)
    assert code == 0, err
    assert out == (results.parent / "report.md").read_text(encoding="utf-8")
    quoted = json.loads(results.read_text(encoding="utf-8"))["card_examples"]
    assert len(quoted) == 3 and all(row["fields"]["text1"][:40] in out for row in quoted)


@pytest.mark.parametrize("written", ["0000000", "1234567", "12.5", "true"])
def test_an_unquoted_revision_read_as_a_number_says_to_quote_it(written: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`revision: 0000000` is the integer 0 to YAML: the error says why the value changed, not just its type."""
    path = edited(tmp_path, "revision: 2394a2eda8dae34a30f68f0770775fd5c2e863bd", f"revision: {written}")
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert_one_line_error(code, err, contains="sources.biosses.revision: Input should be a valid string (got ")
    assert "YAML read the unquoted value as a number or boolean: quote it" in err
