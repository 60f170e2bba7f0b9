"""`extends: other.yaml`: the merge rules, the chain, every bad `extends` in one line naming file and line, errors
in inherited keys naming the parent, the chain's sha256, `specrun show`, and a run that is the same as its
written-out twin's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specrun.core.plain_yaml import load_plain
from specrun.spec import load_spec
from specrun.spec.extends import read_spec_yaml
from tests.conftest import SPECS, assert_one_line_error, run_cli

BIOSSES = SPECS / "biosses.yaml"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def merged(path: Path) -> object:
    return read_spec_yaml(path, str(path))[0].data


def test_mappings_merge_by_key_lists_and_scalars_replace_null_removes(tmp_path: Path) -> None:
    write(tmp_path / "base.yaml", "a: {x: 1, y: [1, 2, 3], z: {deep: 1, keep: 2}}\nb: text\nc: [4]\nd: gone\n"
                                  "e: {m: 1}\n")
    child = write(tmp_path / "child.yaml", "extends: base.yaml\na: {y: [9], z: {deep: 5}, new: 7}\nb: other\n"
                                           "c: {now: mapping}\nd: null\ne: scalar\nf: added\nnothing: null\n")
    assert merged(child) == {"a": {"x": 1, "y": [9], "z": {"deep": 5, "keep": 2}, "new": 7}, "b": "other",
                             "c": {"now": "mapping"}, "e": "scalar", "f": "added"}
    assert list(merged(child)) == ["a", "b", "c", "e", "f"]  # the parent's order, then the child's new keys


def test_a_chain_of_three_merges_nearest_last(tmp_path: Path) -> None:
    write(tmp_path / "one" / "a.yaml", "k: {a: 1, b: 1, c: 1}\nlist: [1]\n")
    write(tmp_path / "one" / "two" / "b.yaml", "extends: ../a.yaml\nk: {b: 2, c: 2}\n")
    c = write(tmp_path / "c.yaml", "extends: one/two/b.yaml\nk: {c: 3}\nlist: []\n")
    located, chain = read_spec_yaml(c, str(c))
    assert located.data == {"k": {"a": 1, "b": 2, "c": 3}, "list": []}
    assert chain == (str(tmp_path / "one" / "two" / "b.yaml"), str(tmp_path / "one" / "a.yaml"))
    assert located.file_of(("k", "a")) == str(tmp_path / "one" / "a.yaml")
    assert located.file_of(("k", "b")) == str(tmp_path / "one" / "two" / "b.yaml")
    assert (located.file_of(("k", "c")), located.line_of(("k", "c"))) == (str(c), 2)


@pytest.mark.parametrize(("files", "line", "contains"), [
    ({"a.yaml": "extends: a.yaml\nid: x\n"}, 1, "extends: a cycle ("),
    ({"a.yaml": "id: x\nextends: b.yaml\n", "b.yaml": "extends: a.yaml\n"}, 1, "b.yaml -> "),  # b closes it
    ({"a.yaml": "id: x\n\nextends: missing.yaml\n"}, 3, "extends: missing.yaml: no such file (looked for "),
    ({"a.yaml": "extends: list.yaml\n", "list.yaml": "- 1\n- 2\n"}, 1, "holds a list, not a mapping of spec keys"),
    ({"a.yaml": "extends: [b.yaml]\n"}, 1, "extends: expected the path of a .yaml or .yml file"),
    ({"a.yaml": "extends: 3\n"}, 1, "(got 3)"),
    ({"a.yaml": "extends: ''\n"}, 1, "extends: expected the path"),
    ({"a.yaml": "extends: /etc/base.yaml\n"}, 1, "an absolute path; give the path relative to this file's folder"),
    ({"a.yaml": "extends: base.json\n"}, 1, "extends: base.json: expected a .yaml or .yml file"),
    ({"a.yaml": "extends: sub.yaml\n", "sub.yaml/x": ""}, 1, "is not a regular file"),
])
def test_every_bad_extends_is_one_line_naming_file_and_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], line: int, contains: str) -> None:
    for name, text in files.items():
        write(tmp_path / name, text)
    code, _, err = run_cli(["validate", str(tmp_path / "a.yaml")], capsys)
    error = assert_one_line_error(code, err, contains=contains)
    where = "b.yaml" if "b.yaml -> " in contains else "a.yaml"
    assert error.startswith(f"specrun: error: {tmp_path / where}:{line}: extends: "), error


def test_a_cycle_further_up_the_chain_names_where_it_closes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) \
        -> None:
    write(tmp_path / "a.yaml", "extends: b.yaml\n")
    write(tmp_path / "b.yaml", "extends: c.yaml\n")
    write(tmp_path / "c.yaml", "x: 1\nextends: b.yaml\n")
    code, _, err = run_cli(["validate", str(tmp_path / "a.yaml")], capsys)
    assert_one_line_error(code, err, contains=f"{tmp_path / 'c.yaml'}:2: extends: a cycle ({tmp_path / 'b.yaml'} -> "
                                              f"{tmp_path / 'c.yaml'} -> {tmp_path / 'b.yaml'})")


def test_a_yaml_error_in_the_parent_names_the_parent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "base.yaml", "id: x\nid: y\n")
    write(tmp_path / "a.yaml", "extends: base.yaml\n")
    code, _, err = run_cli(["validate", str(tmp_path / "a.yaml")], capsys)
    assert_one_line_error(code, err, contains=f"{tmp_path / 'base.yaml'}:2: id: duplicate key")


def test_an_error_in_an_inherited_key_names_the_parent_and_an_override_the_child(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = BIOSSES.read_text(encoding="utf-8")
    base = write(tmp_path / "specs" / "base.yaml", text.replace("direction: higher", "direction: upward", 1))
    line = text.splitlines().index("    direction: higher") + 1
    child = write(tmp_path / "child.yaml", "extends: specs/base.yaml\nid: child\n")
    code, _, err = run_cli(["validate", str(child)], capsys)
    assert_one_line_error(code, err, contains=f"{base}:{line}: metrics.pearson_zero_shot.direction: expected "
                                              "'higher' or 'lower', got 'upward'")
    write(tmp_path / "child.yaml", "extends: specs/base.yaml\nid: child\nmetrics:\n  pearson_zero_shot:\n"
                                   "    direction: lower\n  spearman_zero_shot:\n    range: [1, 2, 3]\n")
    code, _, err = run_cli(["validate", str(child)], capsys)
    assert_one_line_error(code, err, contains=f"{child}:7: metrics.spearman_zero_shot.range")
    write(tmp_path / "child.yaml", "extends: specs/base.yaml\nid: child\nuncertainty: null\nmetrics:\n"
                                   "  pearson_zero_shot: {direction: lower}\n")  # a required key removed
    code, _, err = run_cli(["validate", str(child)], capsys)
    assert_one_line_error(code, err, contains=f"{child}:3: uncertainty: required key is missing")


def test_a_deprecation_warning_of_an_inherited_key_names_the_parent(tmp_path: Path) -> None:
    text = BIOSSES.read_text(encoding="utf-8")
    base = write(tmp_path / "base.yaml",
                 text.replace("      format: tsv\n", "      format: tsv\n      quoting: none\n"))
    line = base.read_text(encoding="utf-8").splitlines().index("      quoting: none") + 1
    child = write(tmp_path / "child.yaml", "extends: base.yaml\n")
    warned: list[str] = []
    load_spec(child, warn=warned.append)
    assert len(warned) == 1 and warned[0].startswith(f"{base}:{line}: sources.biosses.mirror.quoting: deprecated")


def test_the_merged_spec_is_the_spec_and_its_sha256_covers_the_chain(tmp_path: Path) -> None:
    base = shutil.copy(BIOSSES, tmp_path / "base.yaml")
    child = write(tmp_path / "child.yaml", "extends: base.yaml\n")
    plain, extended = load_spec(base), load_spec(child)
    assert extended.spec == plain.spec
    assert extended.extends == (str(base),) and plain.extends == ()
    assert plain.sha256 == plain.located.sha256  # a plain spec's is its bytes', as before
    before = extended.sha256
    assert before != plain.sha256
    Path(base).write_text("# a comment more\n" + BIOSSES.read_text(encoding="utf-8"), encoding="utf-8")
    assert load_spec(child).sha256 != before  # editing the parent changes the child's provenance
    assert load_spec(child).spec == plain.spec


def test_show_prints_the_merged_spec_in_written_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(BIOSSES, tmp_path / "base.yaml")
    child = write(tmp_path / "child.yaml", "extends: base.yaml\ntitle: Another title\ncitation: null\n"
                                           "subset:\n  splits:\n    test: 40\n")
    code, out, err = run_cli(["show", str(child)], capsys)
    assert code == 0, err
    shown = load_plain(out)
    assert shown == read_spec_yaml(child, str(child))[0].data
    assert "extends" not in shown and "citation" not in shown and shown["title"] == "Another title"
    assert shown["subset"] == {"seed": 20261006, "splits": {"test": 40, "train": "all"}}
    assert list(shown) == [key for key in load_plain(BIOSSES.read_text(encoding="utf-8")) if key != "citation"]
    write(tmp_path / "bad.yaml", "extends: nowhere.yaml\n")
    code, out, err = run_cli(["show", str(tmp_path / "bad.yaml")], capsys)
    assert_one_line_error(code, err, contains="bad.yaml:1: extends: nowhere.yaml: no such file")
    assert out == ""


def test_fingerprint_write_is_refused_on_an_extends_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         data_dir: Path) -> None:
    base = shutil.copy(BIOSSES, tmp_path / "base.yaml")
    child = write(tmp_path / "child.yaml", "extends: base.yaml\n")
    before = (Path(base).read_bytes(), child.read_bytes())
    code, out, err = run_cli(["fingerprint", str(child), "--write", "--data-dir", str(data_dir)], capsys)
    assert_one_line_error(code, err, contains=f"{child}: extends: fingerprint --write edits one file")
    assert (Path(base).read_bytes(), child.read_bytes()) == before and out == ""
    code, out, err = run_cli(["fingerprint", str(child), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    assert out.startswith("test: sha256:")


def _run(spec: Path, data_dir: Path, output: Path) -> Path:
    from specrun.cli import main

    assert main([str(spec), "--data-dir", str(data_dir), "--adapter", "hashing", "--output", str(output), "-q",
                 "--no-cache"]) == 0  # each run encodes its texts: the count of texts encoded is the same
    [folder] = (output / "child").iterdir()
    return folder


# What differs between two runs of the same spec (when) and between two files (which file, which bytes).
RUN_FIELDS = ("created", "timings_s")
FILE_FIELDS = ("spec_path", "spec_sha256")


def test_an_extends_spec_runs_as_its_written_out_twin(tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Predictions byte for byte; results.json byte for byte but for when it ran and which spec file it names."""
    text = BIOSSES.read_text(encoding="utf-8")
    write(tmp_path / "shared" / "base.yaml", text)
    child = write(tmp_path / "child.yaml", "extends: shared/base.yaml\nid: child\nsubset:\n  splits:\n    test: 60\n"
                                           "uncertainty:\n  resamples: 300\nmetrics:\n  spearman_zero_shot: null\n")
    spearman = text.split("  spearman_zero_shot:\n")[1].split("uncertainty:")[0]
    twin_text = (text.replace("id: biosses\n", "id: child\n", 1).replace("    test: all\n", "    test: 60\n", 1)
                 .replace("resamples: 1000", "resamples: 300", 1)
                 .replace("  spearman_zero_shot:\n" + spearman, ""))
    twin = write(tmp_path / "twin" / "twin.yaml", twin_text)
    assert load_spec(twin).spec == load_spec(child).spec
    code, out, _ = run_cli(["show", str(child)], capsys)
    assert code == 0 and load_plain(out) == load_plain(twin_text)
    a, b = _run(child, data_dir, tmp_path / "out-a"), _run(twin, data_dir, tmp_path / "out-b")
    assert (a / "predictions.jsonl").read_bytes() == (b / "predictions.jsonl").read_bytes()
    ra, rb = (json.loads((folder / "results.json").read_text(encoding="utf-8")) for folder in (a, b))
    assert {k for k in ra["provenance"] if ra["provenance"][k] != rb["provenance"][k]} <= {*RUN_FIELDS,
                                                                                            *FILE_FIELDS}
    assert ra["provenance"]["spec_sha256"] == load_spec(child).sha256
    for results in (ra, rb):
        for key in (*RUN_FIELDS, *FILE_FIELDS):
            results["provenance"][key] = None
    assert json.dumps(ra) == json.dumps(rb)  # every other byte, in the same order
    assert list(ra["scores"]["test"]) == ["pearson_zero_shot"]
    # read back against its spec: found by the chain's sha256; a parent edited since is another version
    code, out, err = run_cli(["card", str(child), "--results", str(a / "results.json"), "--data-dir",
                              str(data_dir)], capsys)
    assert code == 0, err
    from specrun.results.verify import find_spec, load_verified

    verified = load_verified(a / "results.json")  # publish finds the spec by the path and sha256 recorded
    assert find_spec(verified.results, verified.path).display == str(child)
    base = tmp_path / "shared" / "base.yaml"
    base.write_text("# edited\n" + text, encoding="utf-8")
    code, _, err = run_cli(["card", str(child), "--results", str(a / "results.json"), "--data-dir",
                            str(data_dir)], capsys)
    assert_one_line_error(code, err, contains="results were made from another version of")
