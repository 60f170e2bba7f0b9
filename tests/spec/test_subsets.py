"""One spec, many subsets: each subset is the spec with its overrides merged in (as `extends` merges), validated
on its own, run on its own (id `<id>.<subset>`) and averaged with an interval over joint resamples; a run's
results verify against the subset they name; a bad subset is one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.results.verify import verified_with_spec
from specrun.spec import load_spec, subset_specs
from tests.conftest import SPECS, assert_one_line_error, run_cli

FOLDER = "sentence-transformers__all-MiniLM-L6-v2+adapter-hashing"


def test_each_subset_is_the_spec_with_its_overrides() -> None:
    subsets = subset_specs(load_spec(SPECS / "tatoeba.yaml"))
    assert [s.spec.id for s in subsets] == ["tatoeba.jpn-eng", "tatoeba.deu-eng", "tatoeba.fra-eng"]
    assert [s.subset for s in subsets] == ["jpn-eng", "deu-eng", "fra-eng"]
    deu = subsets[1].spec
    assert deu.title == "Bitext mining against English (Tatoeba) (deu-eng)" and deu.language == ["de", "en"]
    source = deu.sources["tatoeba"]
    assert list(source.files) == ["deu-eng"]  # jpn-eng: null removed the inherited file
    assert source.options["files"] == {"source": "tatoeba.{split}.deu", "target": "tatoeba.{split}.eng"}
    assert (source.ids.prefix, source.ids.width) == ("deu-eng-", 4)  # a mapping merged by key: width kept
    assert deu.splits["test"].source_split == "deu-eng" and deu.splits["test"].source == "tatoeba"
    assert list(deu.metrics) == list(subsets[0].spec.metrics) and all(s.sha256 == subsets[0].sha256 for s in subsets)
    assert deu.metrics["f1"].mteb.subset == "deu-eng" and deu.metrics["f1"].metric == "f1_weighted"
    assert subset_specs(load_spec(SPECS / "biosses.yaml"))[0].subset is None


def spec_with(tmp_path: Path, subsets: dict) -> Path:
    data = load_plain((SPECS / "tatoeba.yaml").read_text(encoding="utf-8"))
    data["subsets"] = subsets
    path = tmp_path / "tatoeba.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(("subsets", "expected"), [
    ({"a": {"id": "x"}}, "subsets.a.id: a subset cannot set it"),
    ({"a": {"subsets": {}}}, "subsets.a.subsets: a subset cannot set it"),
    ({"a": {"splits": {"test": {"source": "nowhere"}}}}, "subset a:"),
    ({"a": {"uncertainty": {"resamples": "many"}}}, "uncertainty.resamples: subset a: Input should be a valid integer"),
    ({"A B": {}}, "subsets"),
])
def test_a_bad_subset_is_one_line_naming_where_it_was_written(tmp_path: Path, subsets: dict, expected: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = spec_with(tmp_path, subsets)
    code, _, err = run_cli(["validate", str(path)], capsys)
    line = assert_one_line_error(code, err, contains=expected)
    assert f"{path}:" in line


def test_an_error_in_a_subset_points_at_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec_with(tmp_path, {"a": {"uncertainty": {"resamples": "many"}}})
    line_no = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "resamples: many" in line)
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert_one_line_error(code, err, contains=f"{path}:{line_no}: uncertainty.resamples: subset a:")


def run_tatoeba(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[Path]:
    code, out, err = run_cli([str(SPECS / "tatoeba.yaml"), "--data-dir", str(data_dir), "--output",
                              str(tmp_path / "out"), "--adapter", "hashing", "-q", *extra], capsys)
    assert code == 0, err
    return [Path(line) for line in out.split()]


def test_subsets_run_on_their_own_and_their_mean_is_exact(tmp_path: Path, data_dir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    paths = run_tatoeba(tmp_path, data_dir, capsys)
    assert [p.parent.parent.name for p in paths] == ["tatoeba.jpn-eng", "tatoeba.deu-eng", "tatoeba.fra-eng"]
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    assert [r["provenance"]["subset"] for r in runs] == ["jpn-eng", "deu-eng", "fra-eng"]
    assert {r["predictions"]["rows"] for r in runs} == {1000}
    means = json.loads((tmp_path / "out" / "tatoeba" / FOLDER / "subsets.json").read_text(encoding="utf-8"))
    assert means["subsets"] == ["jpn-eng", "deu-eng", "fra-eng"]
    for mean in means["means"]:
        values = [r["scores"][mean["split"]][mean["metric"]]["value"] for r in runs]
        assert mean["value"] == math.fsum(values) / 3
        assert mean["ci_low"] <= mean["value"] <= mean["ci_high"]
        assert mean["interval"] == runs[0]["scores"][mean["split"]][mean["metric"]]["interval"]
    for path in paths:  # each verifies against its own subset of the spec file
        verified, loaded = verified_with_spec(path, str(SPECS / "tatoeba.yaml"))
        assert loaded.subset == verified.results.provenance.subset
    markdown = (tmp_path / "out" / "tatoeba" / FOLDER / "subsets.md").read_text(encoding="utf-8")
    assert "| test | f1 | **mean of 3** |" in markdown


def test_subsets_chosen_at_run_time(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = run_tatoeba(tmp_path, data_dir, capsys, "--subsets", "fra-eng,deu-eng")
    assert [p.parent.parent.name for p in paths] == ["tatoeba.deu-eng", "tatoeba.fra-eng"]  # the spec's order
    assert (tmp_path / "out" / "tatoeba" / FOLDER / "subsets.json").exists()
    run_tatoeba(tmp_path / "one", data_dir, capsys, "--subsets", "deu-eng")
    assert not (tmp_path / "one" / "out" / "tatoeba").exists()  # a mean of one is no mean
    code, _, err = run_cli([str(SPECS / "tatoeba.yaml"), "--subsets", "deu-en", "--adapter", "hashing"], capsys)
    assert_one_line_error(code, err, contains="no subset 'deu-en' (did you mean 'deu-eng'?)")
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "--subsets", "a", "--adapter", "hashing"], capsys)
    assert_one_line_error(code, err, contains="declare(s) no subsets")
