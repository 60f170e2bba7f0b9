"""`specrun import mteb` (issue 46, items 2-3): MTEB tasks of the checked-in catalogue written as specs that
validate, with the `mteb:` mappings the hand-written specs have; what YAML cannot say refused in one line naming
the task and the piece, nothing written (the real numbers of imported specs: test_import_sts_real.py). mteb is
never imported and the hub is never asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.importer import (
    DUMP_OPTIONS,
    PureSpecDumper,
    SpecDumper,
    build_spec,
    coverage,
    refusals,
    spec_id,
    spec_text,
)
from specrun.spec import load_spec
from tests.conftest import SPECS, assert_one_line_error, run_cli

STS_TASKS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICK-R"]


def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str], *tasks: str) -> dict[str, dict[str, Any]]:
    out_dir = tmp_path / "imported"
    code, out, err = run_cli(["import", "mteb", *tasks, "-o", str(out_dir)], capsys)
    assert code == 0, err
    written = out.split()
    assert written == [str(out_dir / f"{spec_id(task)}.yaml") for task in tasks]
    return {task: load_plain(Path(path).read_text(encoding="utf-8")) for task, path in zip(tasks, written,
                                                                                               strict=True)}


def test_sts_tasks_import_as_specs_that_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    specs = imported(tmp_path, capsys, *STS_TASKS)
    code, out, err = run_cli(["validate", *sorted(str(path) for path in (tmp_path / "imported").iterdir())], capsys)
    assert code == 0, err
    assert (out + err).count(": ok (") == len(STS_TASKS)
    for task_name, spec in specs.items():
        task = catalogue.task(task_name)
        (source,) = spec["sources"].values()
        assert (source["type"], source["path"], source["revision"]) == \
            ("hf_dataset", task.dataset.path, task.dataset.revision)
        assert source["splits"] == task.eval_splits == list(spec["splits"]) == ["test"]
        assert source["columns"] == {"text1": "sentence1", "text2": "sentence2", "gold": "score"}
        assert "fingerprint" not in spec["splits"]["test"]  # the hub at the commit pins it
        assert spec["licence"]["data"] == task.license and spec["licence"]["publication"] == "unconfirmed"
        assert "MTEB 2.26.24" in spec["licence"]["notice"]
        assert spec["metadata"]["languages"] == ["eng-Latn"] and spec["language"] == ["eng"]
        assert spec["citation"] == task.citation.strip()


@pytest.mark.parametrize(("task", "hand_written"), [("STSBenchmark", "stsb.yaml"), ("SICK-R", "sickr.yaml")])
def test_the_mteb_mappings_are_the_hand_written_specs(task: str, hand_written: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    spec = imported(tmp_path, capsys, task)[task]
    ours = load_plain((SPECS / hand_written).read_text(encoding="utf-8"))
    assert {name: m["mteb"] for name, m in spec["metrics"].items()} == \
        {name: m["mteb"] for name, m in ours["metrics"].items()}
    for name, metric in spec["metrics"].items():
        assert {k: metric[k] for k in ("metric", "protocol", "direction", "range")} == \
            {k: ours["metrics"][name][k] for k in ("metric", "protocol", "direction", "range")}
    assert spec["protocols"]["zero_shot"]["kind"] == "sts" and spec["protocols"]["zero_shot"]["similarity"] == "cosine"


def test_renames_and_several_eval_splits_become_columns_and_mapped_metrics(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A dataset_transform of renames alone maps the data's own columns; several eval splits give one metric per
    score, mapped to MTEB's split of each (`splits`), not a copy per split: a report's table then shows each
    metric on each split it was scored on, and nothing else."""
    specs = imported(tmp_path, capsys, "Assin2STS", "ATEC")
    (source,) = specs["Assin2STS"]["sources"].values()
    assert source["columns"] == {"text1": "premise", "text2": "hypothesis", "gold": "relatedness_score"}
    atec = specs["ATEC"]
    assert list(atec["splits"]) == ["validation", "test"]
    refs = {name: metric["mteb"] for name, metric in atec["metrics"].items()}
    assert refs["spearman_zero_shot"] == {"task": "ATEC", "subset": "default", "score": "cosine_spearman",
                                          "splits": {"validation": "validation", "test": "test"}, "main": True,
                                          "languages": ["cmn-Hans"]}
    assert all("spec_split" not in ref and "split" not in ref for ref in refs.values())
    spec = load_spec(tmp_path / "imported" / "atec.yaml").spec
    assert [(split, ref.split) for split, ref in spec.mteb_cells("spearman_zero_shot")] == [
        ("validation", "validation"), ("test", "test")]
    assert spec.mteb_ref("spearman_zero_shot", "test").split == "test"


def test_a_task_of_another_type_is_refused_naming_it_and_nothing_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "imported"
    code, _out, err = run_cli(["import", "mteb", "STS12", "WebQAT2TRetrieval", "-o", str(out_dir)], capsys)
    line = assert_one_line_error(code, err, contains="WebQAT2TRetrieval: task type Any2AnyRetrieval is not "
                                                     "supported yet (supported: STS, Retrieval, Classification, ")
    assert "nothing was written" in line and "STS12:" not in line
    assert not out_dir.exists()


def test_a_load_data_override_is_refused_naming_the_hook(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    task = catalogue.task("PubChemSMILESPC")
    assert "load_data" in task.hooks  # the catalogue's record of the override
    out_dir = tmp_path / "imported"
    code, _out, err = run_cli(["import", "mteb", "PubChemSMILESPC", "-o", str(out_dir)], capsys)
    line = assert_one_line_error(code, err, contains="PubChemSMILESPC: ")
    assert "overrides load_data" in line and "custom Python" in line
    assert not out_dir.exists()


def test_other_missing_pieces_name_themselves() -> None:
    assert refusals(catalogue.task("KLUE-STS")) == ["a custom dataset_transform (lambda, map)"]
    assert refusals(catalogue.task("SICK-BR-STS")) == ["a dataset_transform with sampling (not expressible in a "
                                                       "spec yet)"]
    assert refusals(catalogue.task("PublicHealthQA"))[0].startswith("dataset revision")  # a Retrieval task


def test_an_existing_file_is_not_overwritten_and_nothing_else_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "imported"
    out_dir.mkdir()
    (out_dir / "sts13.yaml").write_text("mine\n", encoding="utf-8")
    code, _out, err = run_cli(["import", "mteb", "STS12", "STS13", "-o", str(out_dir)], capsys)
    assert_one_line_error(code, err, contains="sts13.yaml already exists; nothing was written")
    assert (out_dir / "sts13.yaml").read_text(encoding="utf-8") == "mine\n"
    assert sorted(path.name for path in out_dir.iterdir()) == ["sts13.yaml"]


def test_an_unknown_task_is_one_line_naming_the_closest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_cli(["import", "mteb", "STS1", "-o", str(tmp_path / "x")], capsys)
    assert_one_line_error(code, err, contains="no MTEB task 'STS1'")
    assert not (tmp_path / "x").exists()
    # a spec's id (lower case) names its task in MTEB's case (a new-user trial got no hint)
    for typed, meant in (("sts16", "STS16"), ("scifact", "SciFact")):
        code, _out, err = run_cli(["import", "mteb", typed, "-o", str(tmp_path / "x")], capsys)
        assert_one_line_error(code, err, contains=f"no MTEB task {typed!r} in the catalogue of mteb 2.26.24 (did you "
                                                  f"mean {meant!r}?)")


def test_coverage_of_the_active_sts_tasks_and_the_list_command(capsys: pytest.CaptureFixture[str]) -> None:
    sts = [task for task in catalogue.active_text_tasks().values() if task.type == "STS"]
    counts = coverage(sts)["STS"]
    assert (counts["tasks"], counts["imports"]) == (51, 46)  # 40 before several hf_subsets per spec
    code, out, err = run_cli(["list", "--mteb", "--type", "sts"], capsys)
    assert code == 0, err
    assert "│ STS  │    51 │     46 │ custom dataset_transform: 3," in err + out
    assert "│ all  │    51 │     46 │" in out  # the total row (a new-user trial found none)
    code, out, err = run_cli(["list", "--mteb", "--type", "sts", "--tasks"], capsys)  # each task by name
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith("│ ") and " STS " in line]
    assert len(rows) == 51 and sum("│ yes " in row for row in rows) == 46
    refused = [task.name for task in sts if refusals(task)]
    assert all(any(row.startswith(f"│ {name} ") and "│ no " in row for row in rows) for name in refused)


def test_a_local_copy_of_a_hub_dataset_needs_a_fingerprint(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The hub at the commit pins itself; a copy under --data-dir is refused until the split has a fingerprint."""
    imported(tmp_path, capsys, "STS12")
    (tmp_path / "data" / "sts12").mkdir(parents=True)
    code, _out, err = run_cli([str(tmp_path / "imported" / "sts12.yaml"), "--data-dir", str(tmp_path / "data"),
                               "--adapter", "hashing", "-q", "--output", str(tmp_path / "results")], capsys)
    assert_one_line_error(code, err, contains="splits.test: has no fingerprint, and a local copy of the hub dataset")


def test_the_counts_the_docs_and_readme_give_are_the_catalogues() -> None:
    """docs/mteb.md's table (active text tasks and imports per type) and the README's sentence are what the
    importer gives on the packaged catalogue, so neither drifts when a piece lands."""
    import re

    from tests.conftest import ROOT

    found = coverage(catalogue.active_text_tasks().values())
    table = {}
    said = {"`load_data` of the task's own": "overrides load_data", "a custom `dataset_transform`":
            "custom dataset_transform", "a main score not of retrieval's measures": "main score",
            "mFollowIR's own `load_data`": "overrides load_data"}
    for line in (ROOT / "docs" / "mteb.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 4 and cells[1].isdigit() and cells[2].isdigit():
            for name in cells[0].split(", "):
                table[name] = (int(cells[1]), int(cells[2]))
            names = cells[0].split(", ")  # the reasons' counts, as `specrun list --mteb` gives them
            for reason, count in re.findall(r"([^,;]+?) \((\d+)\)", cells[3]):
                key = said[reason.strip()]
                assert sum(found[name].get(key, 0) for name in names) == int(count), (cells[0], reason)
    pooled = {"InstructionRetrieval", "InstructionReranking"}  # one row for the two
    expected = {name: (counts["tasks"], counts["imports"]) for name, counts in found.items() if name not in pooled}
    assert {name: value for name, value in table.items() if name not in pooled} == expected
    both = [found[name] for name in pooled]
    assert table["InstructionRetrieval"] == (sum(c["tasks"] for c in both), sum(c["imports"] for c in both))
    total, imports = sum(c["tasks"] for c in found.values()), sum(c["imports"] for c in found.values())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"\b{imports} of MTEB's {total:,} active text tasks convert", readme)


@pytest.mark.slow  # every accepted task converted and validated: about 15 s
def test_every_task_the_importer_accepts_is_written_as_a_valid_spec(tmp_path: Path) -> None:
    """`refusals` empty means the spec is written and validates (a programming language among MTEB's languages,
    `python-Code`, once made 20 accepted tasks fail at the last step)."""
    from specrun.mteb.importer import import_tasks
    from specrun.spec import load_spec

    names = [name for name, task in catalogue.active_text_tasks().items() if not refusals(task)]
    assert len(names) == sum(c["imports"] for c in coverage(catalogue.active_text_tasks().values()).values())
    for entry in import_tasks(names):
        path = tmp_path / f"{entry.spec_id}.yaml"
        path.write_text(entry.text, encoding="utf-8")
        load_spec(path)  # raises, naming the spec, where one does not validate


def test_libyaml_writes_every_imported_spec_as_the_pure_python_emitter_does() -> None:
    """The importer writes with libyaml's emitter (four times as fast); for every eighth task that converts (all
    of them: checked once, 1,096 of 1,096 equal) the text is the pure-Python emitter's to the byte, citations in
    literal blocks and texts in many scripts included. A spec with a character beyond U+FFFF is written by the
    pure-Python emitter, which keeps its literal block (libyaml escapes the character in a quoted line)."""
    assert SpecDumper.__mro__[1] is getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    assert PureSpecDumper.yaml_representers == SpecDumper.yaml_representers
    version = catalogue.load().provenance.mteb_version
    tasks = [task for task in catalogue.active_text_tasks().values() if not refusals(task)][::8]
    assert len(tasks) > 100
    for task in tasks:
        spec = build_spec(task, version)
        pure = yaml.dump(spec, Dumper=PureSpecDumper, **DUMP_OPTIONS)
        assert yaml.dump(spec, Dumper=SpecDumper, **DUMP_OPTIONS) == pure
        assert spec_text(task, version, spec).endswith(pure)
    spec = build_spec(tasks[0], version)
    spec["citation"] = "@article{smile,\n  title = {Faces \U0001F600 of text},\n}"
    text = spec_text(tasks[0], version, spec)
    assert text.endswith(yaml.dump(spec, Dumper=PureSpecDumper, **DUMP_OPTIONS))
    assert "citation: |" in text and "\U0001F600" in text
    assert load_plain(text)["citation"] == spec["citation"]
    spec["citation"] += "\x85"  # NEL: the pure emitter writes it raw (read back as a break), libyaml escapes it
    assert load_plain(spec_text(tasks[0], version, spec))["citation"] == spec["citation"]
