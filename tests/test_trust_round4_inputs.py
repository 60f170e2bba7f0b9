"""Trust, round four: the inputs a run accepts (suite files, specs and their `extends`, flags, model folders). Each
test names the item of the round it answers and failed before the change it tests (the round's reproducers, made
small)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import struct
from pathlib import Path

import pytest

from specrun.core.errors import DataError
from specrun.core.types import Item
from tests.conftest import SPECS, assert_one_line_error, biosses_twin, run_cli

SUITE_HEAD = "id: s\ntitle: t\nversion: '1'\ndescription: d\n"


def _suite(folder: Path, body: str) -> Path:
    """A suite file in folder/suites beside a copy of BIOSSES in folder/specs."""
    (folder / "specs").mkdir(parents=True, exist_ok=True)
    shutil.copy(SPECS / "biosses.yaml", folder / "specs" / "biosses.yaml")
    path = folder / "suites" / "s.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SUITE_HEAD + body, encoding="utf-8")
    return path


def _validate(path: Path, capsys: pytest.CaptureFixture[str], contains: str) -> str:
    code, _, err = run_cli(["validate", str(path)], capsys)
    return assert_one_line_error(code, err, contains=contains)


# --- item 11: suite weights and resamples ---------------------------------------------------------------------

@pytest.mark.parametrize(("weight", "expected"), [
    (".inf", "finite number"), ("1.0e+308", "less than or equal to 1000000"), ("1e308", "valid number"),
    ("1.0e-320", "greater than or equal"), ('"2"', "valid number"), ("true", "valid number"),
    ("0", "greater than or equal"), (".nan", "finite number"),
])
def test_a_suite_weight_is_a_finite_number_in_a_sane_range(tmp_path: Path, weight: str, expected: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Item 11: `.inf` gave a NaN aggregate, `1e308` an OverflowError traceback, `1e-320` a wrong mean, and `"2"`
    and `true` were coerced (YAML reads `1e308`, with no dot, as text). A weight is now a number (no string, no
    boolean) from 1e-6 to 1e6, refused at load."""
    suite = _suite(tmp_path, "aggregates: [weighted_mean]\nmembers:\n"
                             "  - {spec: ../specs/biosses.yaml, metric: spearman_zero_shot}\n"
                             f"  - {{spec: ../specs/biosses.yaml, metric: pearson_zero_shot, weight: {weight}}}\n")
    line = _validate(suite, capsys, "members[1].weight")
    assert expected in line and f"{suite}:" in line
    suite.write_text(suite.read_text(encoding="utf-8").replace(f"weight: {weight}", "weight: 2"), encoding="utf-8")
    code, _, err = run_cli(["validate", str(suite)], capsys)
    assert code == 0, err  # an integer weight is a number


def test_suite_resamples_are_capped_as_a_spec_s(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 11: `resamples: 100000000` was accepted (a spec caps them at 100,000)."""
    members = "members:\n  - {spec: ../specs/biosses.yaml, metric: spearman_zero_shot}\n"
    suite = _suite(tmp_path, members + "uncertainty: {resamples: 100000000}\n")
    _validate(suite, capsys, "uncertainty.resamples: Input should be less than or equal to 100000")
    suite.write_text(SUITE_HEAD + members + "uncertainty: {resamples: true}\n", encoding="utf-8")
    _validate(suite, capsys, "uncertainty.resamples")


# --- item 12: an optional member's data missing as a zip member ------------------------------------------------

def test_an_optional_member_whose_zip_is_missing_is_listed_as_missing(tmp_path: Path, data_dir: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Item 12: an optional member whose data is a zip member (neither the archive nor the extracted member in the
    mirror) aborted the suite; it is now missing data, as a missing plain file is: the suite runs without it."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "biosses").symlink_to((data_dir / "biosses").resolve())
    suite = _suite(tmp_path, "members:\n  - {spec: ../specs/biosses.yaml, metric: spearman_zero_shot}\n"
                             "  - {spec: ../specs/csts.yaml, metric: spearman_conditional, optional: true}\n")
    shutil.copy(SPECS / "csts.yaml", tmp_path / "specs" / "csts.yaml")
    code, out, err = run_cli([str(suite), "--data-dir", str(data), "--output", str(tmp_path / "out"),
                              "--adapter", "hashing"], capsys)
    assert code == 0, err
    assert "member 2/2 csts validation spearman_conditional: missing:" in err
    assert "nor its member csts_validation_reannotated.csv is in the data mirror" in err
    results = json.loads(Path(out.strip().splitlines()[-1]).read_text(encoding="utf-8"))
    assert results["members"][1]["status"] == "missing" and results["members"][1]["value"] is None
    assert results["members"][0]["value"] is not None and all(a["partial"] for a in results["aggregates"])


# --- item 13: two spec files of one id --------------------------------------------------------------------------

def test_two_members_from_two_files_of_one_id_are_refused_at_load(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Item 13: two members from two spec files with one id were refused only after one of them had run and
    written its results; the suite is now refused when it is read, naming both files, nothing run."""
    biosses_twin(tmp_path / "other", spec_id="biosses")
    suite = _suite(tmp_path, "members:\n  - {spec: ../specs/biosses.yaml, metric: spearman_zero_shot}\n"
                             "  - {spec: ../other/biosses.yaml, metric: pearson_zero_shot}\n")
    line = _validate(suite, capsys, "members[1].spec: ../other/biosses.yaml has the id 'biosses'")
    assert "member 0's ../specs/biosses.yaml" in line
    code, _, err = run_cli([str(suite), "--adapter", "hashing", "--output", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="has the id 'biosses'")
    assert not (tmp_path / "out").exists()


# --- item 14: `similarity:` and new protocols in an override ---------------------------------------------------

@pytest.mark.parametrize(("spec", "protocol", "similarity"), [("banking77", "probe", "dot"),
                                                              ("masakhanews-s2s", "kmeans", "euclidean")])
def test_validate_refuses_a_similarity_every_run_refuses(tmp_path: Path, spec: str, protocol: str, similarity: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Item 14: `validate` accepted `similarity:` values every run then refused (dot on classification,
    euclidean on clustering); it refuses them as the run does, naming the key."""
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {os.path.relpath(SPECS / f'{spec}.yaml', tmp_path)}\n"
                     f"protocols:\n  {protocol}:\n    similarity: {similarity}\n", encoding="utf-8")
    line = _validate(child, capsys, f"protocols.{protocol}.similarity: protocol kind")
    assert f"{child}:4:" in line and f"only, not {similarity}" in line


def test_a_new_protocol_in_an_override_names_its_missing_kind(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Item 14: an override of a protocol the parent lacks gave pydantic's raw "Unable to extract tag using
    discriminator 'kind'"; it now says the key `kind` is missing, and which kinds there are."""
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {os.path.relpath(SPECS / 'biosses.yaml', tmp_path)}\n"
                     "protocols:\n  other:\n    label: X\n", encoding="utf-8")
    line = _validate(child, capsys, "protocols.other: required key `kind` is missing")
    assert "discriminator" not in line and "sts" in line


# --- item 15: `extends` through a symlink loop, and a chain's size ---------------------------------------------

def test_extends_through_a_symlink_loop_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 15: `extends` naming a symlink loop gave a RuntimeError traceback (pathlib's resolve)."""
    (tmp_path / "loop1.yaml").symlink_to(tmp_path / "loop2.yaml")
    (tmp_path / "loop2.yaml").symlink_to(tmp_path / "loop1.yaml")
    child = tmp_path / "child.yaml"
    child.write_text("id: x\nextends: loop1.yaml\n", encoding="utf-8")
    line = _validate(child, capsys, f"{child}:2: extends: loop1.yaml:")
    assert "cannot be resolved" in line


def test_an_extends_chain_is_held_to_one_spec_s_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 15: a chain escaped the size limits of one spec (31 files of 730 KB merged into a 930,000-key spec:
    73 s and 667 MB to validate). The chain's files together hold at most one spec's bytes, and the merged
    document at most one spec's nodes."""
    filler = "x" * 400_000
    (tmp_path / "c0.yaml").write_text(f"k0: {filler}\n", encoding="utf-8")
    for i in (1, 2):
        (tmp_path / f"c{i}.yaml").write_text(f"extends: c{i - 1}.yaml\nk{i}: {filler}\n", encoding="utf-8")
    line = _validate(tmp_path / "c2.yaml", capsys, "extends: the chain's files hold more than 1048576 bytes")
    assert f"{tmp_path / 'c1.yaml'}:1:" in line
    many = ",".join(["0"] * 60_000)  # 60,000 nodes a file, 120,000 merged: each file within the limit
    (tmp_path / "n0.yaml").write_text(f"a: [{many}]\n", encoding="utf-8")
    (tmp_path / "n1.yaml").write_text(f"extends: n0.yaml\nb: [{many}]\n", encoding="utf-8")
    _validate(tmp_path / "n1.yaml", capsys, "extends: the merged spec holds more than 100000 keys and values")


# --- item 16: mteb2 clustering draws below a level's labels ----------------------------------------------------

def test_mteb2_draws_below_a_level_s_label_count_are_refused_before_encoding() -> None:
    """Item 16: mteb2 clustering with `draws` below a level's label count crashed in k-means after every text
    was encoded; validate_items (which runs before encoding) refuses it in one line."""
    from specrun.protocols.clustering import ClusteringOptions, ClusteringProtocol

    items = [Item(id=str(i), fields={"text": str(i), "label": [f"c{i % 6}", f"f{i % 12}"]}) for i in range(60)]
    options = ClusteringOptions(procedure="mteb2", draws=8)
    with pytest.raises(DataError, match=r"level 2 of the label paths: k = 12 labels, more than the 8 documents"):
        ClusteringProtocol().validate_items(items, options, "f")
    ClusteringProtocol().validate_items(items, options.model_copy(update={"draws": 12}), "f")


# --- item 19: a stray .safetensors with a malformed header -----------------------------------------------------

@pytest.mark.parametrize("tensor", [{"dtype": "F32"}, {"dtype": "F32", "shape": "ab", "data_offsets": [0, 0]},
                                    {"dtype": "F32", "shape": [[2]]}, "text", {"shape": [2]}])
def test_a_malformed_safetensors_header_leaves_the_parameter_count_out(tmp_path: Path, tensor: object) -> None:
    """Item 19: a stray .safetensors whose header is JSON but not a tensor table (no shape, a text shape) killed
    the run after encoding (KeyError, TypeError in the parameter count); the count, which is optional, is left
    out, and the rest of the metadata stays."""
    from specrun.encoders.metadata import count_parameters, files_metadata
    from specrun.encoders.models import ModelRef

    header = json.dumps({"good": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(24))
    assert count_parameters(tmp_path) == 6
    stray = json.dumps({"w": tensor}).encode()
    (tmp_path / "stray.safetensors").write_bytes(struct.pack("<Q", len(stray)) + stray)
    assert count_parameters(tmp_path) is None
    model = ModelRef(name="m", path=str(tmp_path), origin="local", revision=None, weights_sha256="0" * 64,
                     files_state="")
    found = files_metadata(model)
    assert "n_parameters" not in found and found["weights_bytes"] > 0


# --- item 20: flags and messages -------------------------------------------------------------------------------

def test_subsets_on_a_suite_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 20: `--subsets` on a suite gave a message about the members' specs ("declare(s) no subsets"); it now
    says the flag is a spec's, before anything runs."""
    suite = _suite(tmp_path, "members:\n  - {spec: ../specs/biosses.yaml, metric: spearman_zero_shot}\n")
    code, _, err = run_cli([str(suite), "--subsets", "a", "--adapter", "hashing", "--output",
                            str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="--subsets is for a spec's run")
    assert not (tmp_path / "out").exists()


def test_verify_refuses_a_data_dir_with_no_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 20: `verify --data-dir D --no-data` silently skipped the data check the --data-dir asked for."""
    code, _, err = run_cli(["verify", str(tmp_path / "results.json"), "--data-dir", str(tmp_path), "--no-data"],
                           capsys)
    assert_one_line_error(code, err, contains="--data-dir is where --no-data would not look")


def test_new_names_the_spec_it_would_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 20: an error `specrun new` found in the spec it wrote named its temporary file (.new-PID-NAME.yaml),
    deleted by then; it names the spec's own path, and says it was not written."""
    data = tmp_path / "mydata"
    data.mkdir()
    (data / "test.tsv").write_text("sentence1\tsentence2\tscore\nA cat\tA dog\t1\nB\tC\t2\n", encoding="utf-8")
    target = tmp_path / "specs" / "mine.yaml"
    code, _, err = run_cli(["new", "sts", "mine", "--data", str(data / "test.tsv"), "-o", str(target),
                            "--column", "text1=sentence1", "--column", "text2=sentence2", "--column", "gold=nope"],
                           capsys)
    line = assert_one_line_error(code, err, contains=f"{target}:")
    assert ".new-" not in line and "column 'nope' is not in" in line and f"{target} was not written" in line
    assert list(target.parent.iterdir()) == []


def test_a_missing_reranker_hub_id_is_named_as_the_reranker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Item 20: a --reranker that is neither a folder nor in the hub cache was reported as a --model ("pass a
    local model directory with --model DIR"): the replace covered ModelError only, not the hub's OfflineError."""
    from tests.protocols.test_corpus_retrieval import corpus_spec, make_graded_beir

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data, top_k=4)
    capsys.readouterr()  # what fingerprint --write printed
    code, _, err = run_cli([str(spec), "--data-dir", str(data), "--adapter", "hashing", "--no-cache", "--reranker",
                            "nobody-reranker", "--output", str(tmp_path / "out"), "-q"], capsys)
    line = assert_one_line_error(code, err, contains="cannot fetch model nobody-reranker")
    assert "--reranker DIR" in line and "--model" not in line


# --- item 21: absolute member paths; `list` with one bad spec --------------------------------------------------

def test_an_absolute_member_path_is_refused_as_extends_refuses_one(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Item 21: a suite member given by an absolute path was accepted (`extends` refuses one)."""
    suite = _suite(tmp_path, f"members:\n  - {{spec: {SPECS / 'biosses.yaml'}, metric: spearman_zero_shot}}\n")
    _validate(suite, capsys, f"members[0].spec: {SPECS / 'biosses.yaml'}: an absolute path; give the path relative")


def test_list_shows_the_good_specs_and_one_line_per_bad_one(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Item 21: `specrun list DIR` listed nothing when one spec in DIR was invalid; it lists the rest and gives
    one error line for the bad one (exit 2)."""
    for name in ("biosses.yaml", "stsb.yaml"):
        shutil.copy(SPECS / name, tmp_path / name)
    (tmp_path / "bad.yaml").write_text("id: 3\n", encoding="utf-8")
    code, out, err = run_cli(["list", str(tmp_path)], capsys)
    assert_one_line_error(code, err, contains=f"{tmp_path / 'bad.yaml'}:1: id:")
    assert "biosses" in out and "stsb" in out


# --- item 22: --truncate-dim equal to the model's dimension ----------------------------------------------------

def test_a_truncation_to_the_model_s_own_dimension_is_one_line(tmp_path: Path, data_dir: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Item 22: `--truncate-dim` equal to the model's dimension (64 for the hashing adapter) cut nothing yet made
    a new folder and leaderboard row with the same scores; it is refused in one line, nothing written."""
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "--adapter", "hashing", "--data-dir", str(data_dir),
                            "--truncate-dim", "64", "--output", str(tmp_path / "o"), "-q"], capsys)
    assert_one_line_error(code, err, contains="--truncate-dim 64: the model's vectors have 64 dimensions already")
    assert not (tmp_path / "o").exists()


# --- item 29: the walk of a web of folder links ----------------------------------------------------------------

def test_a_folder_walk_lists_each_folder_by_its_real_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 29: `test_a_web_of_folder_links_is_walked_once_per_folder` failed now and then on two loaded workers
    with ELOOP at web/a/a/.../a/b: the walk listed and stat'ed each folder through the path it was reached by, 31
    links in one lookup. Linux's limit is 40 links a lookup, counted across its retries (fs/namei.c sets
    total_link_count once per lookup; an RCU walk that fails under concurrent file activity is retried with the
    count kept), so a loaded machine could reach it: the likely cause, not reproduced here. Each folder is now
    listed by its real path: no lookup crosses more than the entry's own link, whatever the depth."""
    from specrun.core import files as core_files

    levels = [tmp_path / "web" / f"d{i}" for i in range(31)]
    for level in levels:
        level.mkdir(parents=True)
        (level / "f.json").write_text("{}")
    for here, after in itertools.pairwise(levels):
        (here / "a").symlink_to(after, target_is_directory=True)
        (here / "b").symlink_to(after, target_is_directory=True)
    model = tmp_path / "m"
    model.mkdir()
    (model / "web").symlink_to(levels[0], target_is_directory=True)
    listed: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(core_files.os, "scandir", lambda path: listed.append(str(path)) or scandir(path))
    found = core_files.folder_files(model)
    assert "web/" + "a/" * 30 + "f.json" in [f.as_posix() for f in found]  # the paths a loader reads
    assert len(found) == 31 and len(listed) == 32
    assert all(os.path.realpath(path) == path for path in listed), [p for p in listed if "/a/" in p][:1]
