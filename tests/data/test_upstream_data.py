"""Real upstream shapes from YAML alone: ragged rows, several files pooled into one split, a zip member mirrored as
the archive or extracted, a hub dataset folder with a config, value maps and `where` with lists and `not`.
Each fixture is scored by specrun with the bundled model and compared with an independent computation: the csv
module, a direct sentence-transformers encode, scipy."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from specrun.core.errors import SpecrunError
from specrun.core.plain_yaml import load_plain
from specrun.data import load_split
from tests.conftest import assert_one_line_error, plan_of, reference_model, run_cli, run_ok, run_subprocess

SENTENCES = [
    ("A man is playing a guitar.", "A man plays the guitar.", 4.8),
    ("A woman is slicing an onion.", "A woman is cutting an onion.", 4.4),
    ("A dog runs in the park.", "A cat sleeps on the couch.", 0.6),
    ("Two kids are swimming.", "Children swim in a pool.", 3.9),
    ("The stock market fell today.", "Shares dropped sharply on Monday.", 3.1),
    ("A plane is taking off.", "An aircraft departs from the runway.", 4.2),
    ("He cooks pasta for dinner.", "The orchestra tunes its instruments.", 0.2),
    ("A child reads a book.", "A kid is reading.", 3.6),
    ("The river floods the village.", "Water covers the town's streets.", 3.3),
    ("A man rides a horse.", "A person is on horseback.", 4.0),
    ("Snow falls on the mountains.", "It is sunny at the beach.", 0.8),
    ("She writes a letter.", "A woman is typing an email.", 2.5),
]


def independent_scores(pairs: list[tuple[str, str, float]]) -> tuple[float, float]:
    """Pearson and Spearman of cosine vs gold, computed without specrun."""
    model = reference_model()
    left = model.encode([a for a, _, _ in pairs], convert_to_numpy=True)
    right = model.encode([b for _, b, _ in pairs], convert_to_numpy=True)
    cosine = np.sum(left * right, axis=1) / (np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1))
    gold = [g for _, _, g in pairs]
    return float(stats.pearsonr(cosine, gold)[0]), float(stats.spearmanr(cosine, gold)[0])


def sts_spec(source: dict, splits: dict, seed: int = 7) -> dict:
    return {
        "id": "upstream", "title": "An upstream fixture",
        "licence": {"data": "cc-by-sa-4.0", "publication": "confirmed"},
        "sources": {"up": source}, "splits": splits,
        "subset": {"seed": seed, "splits": {name: "all" for name in splits}},
        "protocols": {"zs": {"kind": "sts", "label": "Zero-shot", "capability": "embed.text.pooled",
                             "description": "cosine of the two sentences"}},
        "metrics": {"pearson": {"metric": "pearson", "protocol": "zs", "label": "Pearson r", "direction": "higher",
                                "range": [-1.0, 1.0]},
                    "spearman": {"metric": "spearman", "protocol": "zs", "label": "Spearman", "direction": "higher",
                                 "range": [-1.0, 1.0]}},
        "uncertainty": {"method": "bootstrap", "interval": "percentile", "resamples": 200, "confidence": 0.95},
        "card": {"what_is_measured": "w", "data": "d", "items": "i", "uncertainty": "u", "caveats": "c",
                 "examples": {"count": 2, "heading": "Examples", "columns": {"id": "item_id", "text1": "s1"}}},
    }


def git_source(fmt: str, files: dict, **extra: object) -> dict:
    return {"type": "git_file", "path": "owner/upstream", "revision": "a" * 40, "licence": "cc-by-sa-4.0",
            "format": fmt, "fetch": False, "files": files,
            "columns": {"text1": "sentence1", "text2": "sentence2", "gold": "score"},
            "ids": {"prefix": "up-", "width": 3}, **extra}


def write_spec(tmp_path: Path, document: dict, data: Path | None = None) -> Path:
    """Write the spec; fill in each evaluated split's fingerprint from the data when not pinned by sha256."""
    path = tmp_path / "upstream.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scores(results: object) -> tuple[float, float]:
    test = results.scores["test"]
    return test["pearson"].value, test["spearman"].value


# --- ragged rows: STS Benchmark's sts-test.csv shape -------------------------------------------------------------

def make_stsb(folder: Path) -> Path:
    """Header-less, tab-separated, quoting none, 7 columns; some lines carry 2 trailing licence/source fields, and a
    sentence holds a double quote that must be read as text."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for index, (a, b, gold) in enumerate(SENTENCES):
        genre = "main-news" if index % 3 else "main-forums"
        row = [genre, "MSRvid", "2012test", f"{index:04d}", f"{gold:.3f}", a, b]
        if genre == "main-forums":
            row += ["CC BY-SA 3.0", "stackexchange"]
        lines.append("\t".join(row))
    lines[1] = lines[1].replace("an onion", 'an "onion')  # quoting none: a lone quote is text
    path = folder / "sts-test.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


STSB_NAMES = ["genre", "filename", "year", "id", "score", "sentence1", "sentence2"]


def stsb_pairs(path: Path) -> list[tuple[str, str, float]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return [(row[5], row[6], float(row[4])) for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)]


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_ragged_rows_with_optional_trailing_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    path = make_stsb(data / "up")
    source = git_source("tsv", {"test": {"path": "sts-test.csv", "sha256": sha(path)}}, quoting="none",
                        names=STSB_NAMES, optional_names=["licence", "origin"])
    spec = write_spec(tmp_path, sts_spec(source, {"test": {"source": "up", "source_split": "test"}}))
    items = load_split(plan_of(spec), "test", data).items
    assert len(items) == len(SENTENCES) and items[1].fields["text2"] == 'A woman is cutting an "onion.'
    results = run_ok([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out")], capsys)
    assert scores(results) == pytest.approx(independent_scores(stsb_pairs(path)), abs=1e-6)


def test_ragged_rows_ignored_extra_fields_give_the_same_items(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = make_stsb(data / "up")
    optional = git_source("tsv", {"test": {"path": "sts-test.csv", "sha256": sha(path)}}, quoting="none",
                          names=STSB_NAMES, optional_names=["licence", "origin"])
    ignore = {**optional, "extra_fields": "ignore"}
    ignore.pop("optional_names")
    split = {"test": {"source": "up", "source_split": "test"}}
    first = load_split(plan_of(write_spec(tmp_path, sts_spec(optional, split))), "test", data)
    second = load_split(plan_of(write_spec(tmp_path, sts_spec(ignore, split))), "test", data)
    assert first.fingerprint == second.fingerprint and len(first.items) == len(SENTENCES)


def test_ragged_rows_without_an_option_name_the_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    path = make_stsb(data / "up")
    source = git_source("tsv", {"test": {"path": "sts-test.csv", "sha256": sha(path)}}, quoting="none",
                        names=STSB_NAMES)
    spec = write_spec(tmp_path, sts_spec(source, {"test": {"source": "up", "source_split": "test"}}))
    code, _, err = run_cli([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--output",
                            str(tmp_path / "out")], capsys)
    line = assert_one_line_error(code, err, contains="9 fields, expected 7")
    assert "sts-test.csv:1:" in line and "`optional_names`" in line and "`extra_fields: ignore`" in line


def test_too_few_fields_stay_an_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = make_stsb(data / "up")
    path.write_text(path.read_text(encoding="utf-8") + "main-news\tMSRvid\t2012test\t9999\t1.0\tonly one\n",
                    encoding="utf-8")
    source = git_source("tsv", {"test": {"path": "sts-test.csv"}}, quoting="none", names=STSB_NAMES,
                        optional_names=["licence", "origin"])
    spec = write_spec(tmp_path, sts_spec(source, {"test": {"source": "up", "source_split": "test",
                                                           "fingerprint": "sha256:" + "0" * 64}}))
    with pytest.raises(SpecrunError, match="6 fields, expected 7 to 9"):
        load_split(plan_of(spec), "test", data, check=False)


# --- several files into one split: SICK-R as MTEB pools it --------------------------------------------------------

SICK_FILES = {"train": SENTENCES[:5], "trial": SENTENCES[5:7], "test_annotated": SENTENCES[7:]}


def make_sick(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, rows in SICK_FILES.items():
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
        writer.writerow(["pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"])
        for index, (a, b, gold) in enumerate(rows):
            writer.writerow([f"{name[:2]}{index}", a, b, gold, "NEUTRAL" if gold < 3 else "ENTAILMENT"])
        paths[name] = folder / f"SICK_{name}.txt"
        paths[name].write_text(buffer.getvalue(), encoding="utf-8")
    return paths


def sick_source(paths: dict[str, Path]) -> dict:
    source = git_source("tsv", {name: {"path": f"SICK_{name}.txt", "sha256": sha(path)} for name, path in
                                paths.items()})
    source["columns"] = {"text1": "sentence_A", "text2": "sentence_B", "gold": "relatedness_score"}
    return source


@pytest.mark.slow  # the real model
def test_three_files_pooled_into_one_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    paths = make_sick(data / "up")
    document = sts_spec(sick_source(paths), {"test": {"source": "up",
                                                      "source_splits": ["train", "trial", "test_annotated"]}})
    spec = write_spec(tmp_path, document)
    split = load_split(plan_of(spec), "test", data)
    assert [item.id for item in split.items] == [f"up-{i:03d}" for i in range(len(SENTENCES))]
    assert all(path.name in split.origin for path in paths.values())
    results = run_ok([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out")], capsys)
    assert scores(results) == pytest.approx(independent_scores(SENTENCES), abs=1e-6)
    assert results.scores["test"]["spearman"].n == len(SENTENCES)
    origin = results.provenance.data["test"].origin
    assert all(f"SICK_{name}.txt" in origin for name in SICK_FILES)


def test_pooled_files_with_per_file_ids_and_a_tampered_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    paths = make_sick(data / "up")
    document = sts_spec(sick_source(paths), {"test": {"source": "up", "source_splits": ["trial", "train"],
                                                      "ids": "per_file"}})
    split = load_split(plan_of(write_spec(tmp_path, document)), "test", data)
    assert [item.id for item in split.items][:3] == ["up-trial-000", "up-trial-001", "up-train-000"]
    paths["train"].write_text(paths["train"].read_text(encoding="utf-8").replace("guitar", "banjo"),
                              encoding="utf-8")
    with pytest.raises(SpecrunError) as raised:
        load_split(plan_of(write_spec(tmp_path, document)), "test", data)
    assert re.search(r"files\.train\.sha256: .*SICK_train\.txt has sha256", raised.value.one_line())


def test_a_list_for_source_split_says_how_to_combine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    paths = make_sick(data / "up")
    document = sts_spec(sick_source(paths), {"test": {"source": "up", "source_split": ["train", "trial"]}})
    code, _, err = run_cli(["validate", str(write_spec(tmp_path, document))], capsys)
    line = assert_one_line_error(code, err, contains="a split reads one source split")
    assert "source_splits: [A, B]" in line and "valid string" not in line


# --- a zip member, mirrored as the archive or extracted ------------------------------------------------------------

def test_member_mirrored_zipped_or_extracted_gives_one_fingerprint(tmp_path: Path) -> None:
    member = "release/data/pairs.csv"
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["sentence1", "sentence2", "score"])
    writer.writerows(SENTENCES)
    content = buffer.getvalue().encode("utf-8")
    zipped, extracted = tmp_path / "zipped", tmp_path / "extracted"
    (zipped / "up").mkdir(parents=True)
    with zipfile.ZipFile(zipped / "up" / "release.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, content)
        archive.writestr("release/README", b"readme")
    (extracted / "up").mkdir(parents=True)
    (extracted / "up" / "pairs.csv").write_bytes(content)
    source = git_source("csv", {"test": {"path": "release.zip", "sha256": sha(zipped / "up" / "release.zip"),
                                         "member": "data/pairs.csv",
                                         "member_sha256": hashlib.sha256(content).hexdigest()}})
    spec = write_spec(tmp_path, sts_spec(source, {"test": {"source": "up", "source_split": "test"}}))
    from_zip = load_split(plan_of(spec), "test", zipped)
    from_member = load_split(plan_of(spec), "test", extracted)
    assert from_zip.fingerprint == from_member.fingerprint and len(from_zip.items) == len(SENTENCES)
    assert from_zip.origin.endswith("release.zip:data/pairs.csv") and from_member.origin.endswith("pairs.csv")
    (extracted / "up" / "pairs.csv").write_bytes(content.replace(b"guitar", b"banjo"))
    with pytest.raises(SpecrunError) as raised:
        load_split(plan_of(spec), "test", extracted)
    assert re.search("member_sha256: .*pairs.csv has sha256", raised.value.one_line())
    unpinned = {**source, "files": {"test": {k: v for k, v in source["files"]["test"].items()
                                             if k != "member_sha256"}}}
    spec = write_spec(tmp_path, sts_spec(unpinned, {"test": {"source": "up", "source_split": "test"}}))
    with pytest.raises(SpecrunError, match="pin it with `member_sha256`"):
        load_split(plan_of(spec), "test", extracted)


# --- a hub dataset folder with a config, read through datasets ------------------------------------------------------

def make_hub_folder(folder: Path) -> None:
    """A dataset repo as the hub holds it: README front matter declaring two configs, CSV files per config."""
    (folder / "pairs").mkdir(parents=True)
    (folder / "other").mkdir()
    readme = {"configs": [
        {"config_name": "pairs", "data_files": [{"split": "test", "path": "pairs/test.csv"}]},
        {"config_name": "other", "data_files": [{"split": "test", "path": "other/test.csv"}]},
    ]}
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(readme, sort_keys=False)}---\n# fixture\n",
                                      encoding="utf-8")
    for name, rows in (("pairs", SENTENCES), ("other", SENTENCES[:4])):
        with (folder / name / "test.csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["sentence1", "sentence2", "score", "split_tag"])
            writer.writerows([(*row, "keep" if index != 3 else "drop") for index, row in enumerate(rows)])


@pytest.mark.slow  # loads the `datasets` library and builds its Arrow cache (seconds)
def test_hub_dataset_folder_with_a_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    make_hub_folder(data / "up")
    source = {"type": "hf_dataset", "path": "owner/upstream", "revision": "b" * 40, "licence": "cc-by-sa-4.0",
              "config": "pairs", "splits": ["test"],
              "columns": {"text1": "sentence1", "text2": "sentence2", "gold": "score"},
              "ids": {"prefix": "up-", "width": 3}}
    spec = write_spec(tmp_path, sts_spec(source, {"test": {"source": "up", "source_split": "test",
                                                           "where": {"split_tag": {"not": "drop"}}}}))
    # what `specrun fingerprint` does (identity only): a local copy of a hub dataset is checked against a
    # fingerprint, which it first has to give
    split = load_split(plan_of(spec, require_fingerprints=False), "test", data, check=False)
    kept = [row for index, row in enumerate(SENTENCES) if index != 3]
    assert len(split.items) == len(kept) and split.items[3].id == "up-004"  # ids keep the row numbers
    document = load_plain(spec.read_text(encoding="utf-8"))
    document["splits"]["test"]["fingerprint"] = split.fingerprint
    spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    results = run_ok([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out")], capsys)
    assert scores(results) == pytest.approx(independent_scores(kept), abs=1e-6)
    assert "(pairs)" in results.provenance.data["test"].origin


# --- value maps and where with several values ---------------------------------------------------------------------

def test_label_strings_mapped_to_numbers_and_where_lists(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "up").mkdir(parents=True)
    labels = ["entailment", "neutral", "contradiction"]
    with (data / "up" / "nli.jsonl").open("w", encoding="utf-8") as handle:
        for index, (a, b, _) in enumerate(SENTENCES):
            handle.write(json.dumps({"sentence1": a, "sentence2": b, "label": labels[index % 3],
                                     "genre": ["news", "fiction", "travel", "slate"][index % 4]}) + "\n")
    source = git_source("jsonl", {"test": {"path": "nli.jsonl", "sha256": sha(data / "up" / "nli.jsonl")}},
                        values={"label": {"entailment": 2, "neutral": 1, "contradiction": 0}})
    source["columns"] = {"text1": "sentence1", "text2": "sentence2", "gold": "label"}
    document = sts_spec(source, {"test": {"source": "up", "source_split": "test",
                                          "where": {"genre": ["news", "fiction", "travel"]}}})
    items = load_split(plan_of(write_spec(tmp_path, document)), "test", data).items
    expected = [(index, 2 - index % 3) for index in range(len(SENTENCES)) if index % 4 != 3]
    assert [(int(item.id[3:]), item.fields["gold"]) for item in items] == expected
    document["splits"]["test"]["where"] = {"genre": {"not": ["news", "slate"]}}
    items = load_split(plan_of(write_spec(tmp_path, document)), "test", data).items
    assert [int(item.id[3:]) for item in items] == [i for i in range(len(SENTENCES)) if i % 4 in (1, 2)]
    source["values"]["label"].pop("neutral")
    with pytest.raises(SpecrunError, match=r"row 2: column 'label': 'neutral' is not in `values.label`"):
        load_split(plan_of(write_spec(tmp_path, sts_spec(source, {"test": {"source": "up",
                                                                             "source_split": "test"}}))),
                   "test", data)


# --- a third-party format from an installed plugin ------------------------------------------------------------------

PLUGIN = '''
"""A specrun reader plugin: pipe-separated pairs, `a | b | score` per line, with its own options."""
from pydantic import BaseModel, ConfigDict

from specrun.core.registry import ReaderEntry


class PipeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    separator: str = "|"


def read(path, layout, split):
    options = PipeOptions.model_validate(layout.options)
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        a, b, score = (part.strip() for part in line.split(options.separator))
        rows.append({"sentence1": a, "sentence2": b, "score": score})
    return rows


ENTRY = ReaderEntry("pipes", read, options=PipeOptions, description="a | b | score per line")
'''


def install_plugin(site: Path) -> None:
    """A distribution as pip leaves it: the package and its .dist-info with an entry point of group specrun.readers
    (importlib.metadata finds it on sys.path exactly as it finds an installed one)."""
    (site / "specrun_pipes").mkdir(parents=True)
    (site / "specrun_pipes" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "specrun_pipes-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: specrun-pipes\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[specrun.readers]\npipes = specrun_pipes:ENTRY\n", encoding="utf-8")


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_reader_plugin_from_an_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site)
    data = tmp_path / "data"
    (data / "up").mkdir(parents=True)
    (data / "up" / "pairs.txt").write_text("".join(f"{a} ; {b} ; {g}\n" for a, b, g in SENTENCES), encoding="utf-8")
    source = git_source("pipes", {"test": {"path": "pairs.txt", "sha256": sha(data / "up" / "pairs.txt")}},
                        options={"separator": ";"})
    spec = write_spec(tmp_path, sts_spec(source, {"test": {"source": "up", "source_split": "test"}}))
    env = {"PYTHONPATH": str(site)}
    listing = run_subprocess(["list", "--formats"], env=env, timeout=120)
    assert listing.returncode == 0 and "pipes" in listing.stdout and "specrun-pipes" in listing.stdout
    done = run_subprocess([str(spec), "--data-dir", str(data), "--output", str(tmp_path / "out"), "-q"], env=env)
    assert done.returncode == 0, done.stderr
    results = json.loads(Path(done.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8"))
    test = results["scores"]["test"]
    expected = independent_scores(SENTENCES)
    assert (test["pearson"]["value"], test["spearman"]["value"]) == pytest.approx(expected, abs=1e-6)
    without = run_subprocess(["validate", str(spec)], timeout=120)  # the plugin is not installed there
    assert_one_line_error(without.returncode, without.stderr, contains="unknown format 'pipes'")
    bad = spec.read_text(encoding="utf-8").replace("separator: ;", "separatr: ;")
    spec.write_text(bad, encoding="utf-8")
    wrong = run_subprocess(["validate", str(spec)], env=env, timeout=120)
    typo_message = "options.separatr: not an option of format pipes; expected one of: separator"
    assert_one_line_error(wrong.returncode, wrong.stderr, contains=typo_message)


def test_fingerprint_write_keeps_comments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    paths = make_sick(data / "up")
    document = sts_spec(sick_source(paths), {"test": {"source": "up", "source_split": "train"}})
    for entry in document["sources"]["up"]["files"].values():
        entry.pop("sha256")
    text = yaml.safe_dump(document, sort_keys=False)
    text = text.replace("\nsplits:\n", "\n# the splits, as MTEB has them\nsplits:\n")
    text = text.replace("    source_split: train\n", "    source_split: train  # 5 pairs\n"
                        "    fingerprint: sha256:" + "0" * 64 + "\n")
    spec = tmp_path / "upstream.yaml"
    spec.write_text(text, encoding="utf-8")
    code, _, err = run_cli(["validate", str(spec)], capsys)
    assert code == 0, err
    code, _, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data), "--write"], capsys)
    assert code == 0 and "updated test" in err
    expected = load_split(plan_of(spec, require_fingerprints=False), "test", data, check=False).fingerprint
    written = spec.read_text(encoding="utf-8")
    assert written == text.replace("sha256:" + "0" * 64, expected)  # only the value changed, comments kept
    load_split(plan_of(spec), "test", data)  # and it now checks
    code, _, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data), "--write"], capsys)
    assert code == 0 and "already up to date" in err
