"""`specrun import mteb` of a task of several hf_subsets (issue 46): one spec whose `subsets:` overlays, merged
onto it, give each subset exactly the spec its one-subset import is (MTEB's subset name kept, its config or `lang`
rows, its own statistics, its `mteb:` counterparts); each subset runs as `<id>.<subset>` in lower case and their
mean is written beside them, as MTEB averages a task's hf_subsets. Names that differ only in case are refused."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.mteb import catalogue
from specrun.mteb.importer import refusals, spec_text
from specrun.spec import load_spec, subset_specs
from tests.conftest import assert_one_line_error, run_cli
from tests.mteb.snapshots import hub_snapshot

VERSION = catalogue.load().provenance.mteb_version
FOLDER = "sentence-transformers__all-MiniLM-L6-v2+adapter-hashing"


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], task: str) -> Path:
    code, out, err = run_cli(["import", "mteb", task, "-o", str(tmp_path / "imported")], capsys)
    assert code == 0, err
    return Path(out.strip())


def _without_identity(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in ("id", "title", "subsets")}


@pytest.mark.parametrize("name", ["STS17", "STS22", "AmazonCounterfactualClassification", "MLQARetrieval"])
def test_each_subset_merged_is_that_subsets_own_import(name: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Independently of the overlays: the one-subset import of the task restricted to each subset (what a
    benchmark taking that subset writes) is, but for id and title, what the merged subset is."""
    task = catalogue.task(name)
    assert len(task.hf_subsets) > 1 and not refusals(task)
    path = _import(tmp_path, capsys, name)
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert code == 0, err  # a retrieval spec too: the commit pins the repo it reads a copy of
    loaded = subset_specs(load_spec(path))
    assert [one.subset for one in loaded] == task.hf_subsets
    for one in loaded:
        alone = task.model_copy(update={"hf_subsets": [one.subset]})
        expected = load_plain(spec_text(alone, VERSION))
        assert _without_identity(one.located.data) == _without_identity(expected), one.subset
        assert one.spec.id == f"{expected['id']}.{one.subset.lower()}"
        refs = {metric.mteb.subset for metric in one.spec.metrics.values()}
        assert refs == {one.subset}


def sts17_snapshot(snapshot: Path, half: bool = True) -> None:
    """A hub-style copy of STS17's one config: parquet rows of every subset (`lang`), 30 or more each."""
    rows: dict[str, list[Any]] = {"sentence1": [], "sentence2": [], "score": [], "lang": []}
    for lang, count in zip(catalogue.task("STS17").hf_subsets, range(30, 60), strict=False):
        for i in range(count):
            rows["sentence1"].append(f"{lang} a cat sat on mat {i} {'x' * (i % 4)}")
            rows["sentence2"].append(f"{lang} a dog sat {'on mat' if i % 2 else 'far away'} {i * 7 % 5}")
            rows["score"].append(float((i * 37) % 11) / (2 if half else 1))
            rows["lang"].append(lang)
    hub_snapshot(snapshot, {"test": rows})


def test_a_fast_loading_task_runs_each_subset_from_its_lang_rows_and_writes_their_mean(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """STS17 loads fast (one config, a `lang` column): every subset is pinned from a hub-style snapshot, two of
    them run, each on its own rows only, and the mean of the two is written beside them."""
    path = _import(tmp_path, capsys, "STS17")
    sts17_snapshot(tmp_path / "data" / "sts17")
    chosen = "es-es,en-en"
    code, _, err = run_cli(["fingerprint", str(path), "--data-dir", str(tmp_path / "data"), "--write"], capsys)
    assert code == 0, err
    code, out, err = run_cli([str(path), "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out"),
                              "--adapter", "hashing", "-q", "--subsets", chosen], capsys)
    assert code == 0, err
    paths = [Path(line) for line in out.split()]
    assert [p.parent.parent.name for p in paths] == ["sts17.en-en", "sts17.es-es"]
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    sizes = dict(zip(catalogue.task("STS17").hf_subsets, range(30, 60), strict=False))
    assert [run["scores"]["test"]["spearman_zero_shot"]["n"] for run in runs] == [sizes["en-en"], sizes["es-es"]]
    means = json.loads((tmp_path / "out" / "sts17" / FOLDER / "subsets.json").read_text(encoding="utf-8"))
    assert means["subsets"] == ["en-en", "es-es"]
    (mean,) = [m for m in means["means"] if m["metric"] == "spearman_zero_shot"]
    assert mean["value"] == math.fsum(run["scores"]["test"]["spearman_zero_shot"]["value"] for run in runs) / 2


def test_a_copy_of_some_subsets_pins_those_with_fingerprint_subsets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy holding some subsets' rows could not be pinned: fingerprint read every subset and stopped at the
    first with no rows, and the run's error named that very command (a new-user trial on Tatoeba). `fingerprint
    --subsets` pins those named; the run's error names it; the others stay unpinned."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = _import(tmp_path, capsys, "STS17")
    sts17_snapshot(tmp_path / "data" / "sts17")
    part = tmp_path / "data" / "sts17" / "data" / "test.parquet"
    table = pq.read_table(part)
    pq.write_table(table.filter(pc.is_in(table["lang"], value_set=pa.array(["en-en", "es-es"]))), part)
    data = ["--data-dir", str(tmp_path / "data")]
    code, _, err = run_cli(["fingerprint", str(path), *data, "--write"], capsys)
    assert_one_line_error(code, err, contains="matches no row")
    code, _, err = run_cli([str(path), *data, "--adapter", "hashing", "-q", "--subsets", "en-en"], capsys)
    assert_one_line_error(code, err, contains="`specrun fingerprint SPEC --subsets en-en --write`")
    code, _, err = run_cli(["fingerprint", str(path), *data, "--subsets", "en-en,es-es", "--write"], capsys)
    assert code == 0, err
    pinned = load_plain(path.read_text(encoding="utf-8"))["subsets"]
    assert {name for name, patch in pinned.items() if "fingerprint" in str(patch)} == {"en-en", "es-es"}
    code, _out, err = run_cli([str(path), *data, "--adapter", "hashing", "-q", "-o", str(tmp_path / "out"),
                               "--subsets", "es-es,en-en"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["fingerprint", str(path), *data, "--subsets", "xx-yy"], capsys)
    assert_one_line_error(code, err, contains="no subset 'xx-yy'")


def test_subset_names_keep_their_case_and_may_not_differ_by_case_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _import(tmp_path, capsys, "STS17")
    data = load_plain(path.read_text(encoding="utf-8"))
    data["subsets"] = {("En-en" if name == "en-en" else name): patch for name, patch in data["subsets"].items()}
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    loaded = subset_specs(load_spec(path), ["En-en"])
    assert (loaded[0].subset, loaded[0].spec.id) == ("En-en", "sts17.en-en")
    data["subsets"]["EN-EN"] = {}
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert_one_line_error(code, err, contains="subsets 'En-en' and 'EN-EN' differ only in case")


def test_what_several_subsets_still_cannot_say_is_refused_by_name() -> None:
    assert refusals(catalogue.task("FloresBitextMining"))[0] == \
        "41,412 hf_subsets (more than the 600 one imported spec holds)"
    assert refusals(catalogue.task("CodeEditSearchRetrieval"))[0] == \
        "hf_subset name 'c++' is not a valid subset name (letters, digits, '_', '.', '-')"


def test_two_local_copies_of_one_dataset_are_each_read_as_they_are(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`datasets` caches a local folder by its name, not its content: a second copy named alike (another
    --data-dir) was read as the first. Each is read afresh, so their fingerprints differ as their rows do."""
    path = _import(tmp_path, capsys, "STS17")
    found = []
    for name, half in (("one", True), ("two", False)):
        sts17_snapshot(tmp_path / name / "sts17", half=half)
        code, out, err = run_cli(["fingerprint", str(path), "--data-dir", str(tmp_path / name)], capsys)
        assert code == 0, err
        found.append(out)
    assert found[0] != found[1] and "sha256:" in found[0]


def test_import_with_a_data_dir_writes_each_spec_pinned_from_its_copy(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`import --data-dir D`: a spec whose copy is in D is written with every subset's fingerprints (as
    `fingerprint --write` writes them: the run needs nothing more); one without a copy is written unpinned and
    named; a copy that cannot be read is one line and nothing is written."""
    data = tmp_path / "data"
    sts17_snapshot(data / "sts17")
    out = tmp_path / "imported"
    code, _, err = run_cli(["import", "mteb", "STS17", "STS12", "-o", str(out), "--data-dir", str(data)], capsys)
    assert code == 0, err
    assert "not pinned, no local copy in --data-dir: sts12.yaml" in err
    by_hand = _import(tmp_path / "by-hand", capsys, "STS17")
    code, _, err = run_cli(["fingerprint", str(by_hand), "--data-dir", str(data), "--write"], capsys)
    assert code == 0, err
    assert (out / "sts17.yaml").read_text(encoding="utf-8") == by_hand.read_text(encoding="utf-8")
    assert "fingerprint: sha256" not in (out / "sts12.yaml").read_text(encoding="utf-8")
    code, _, err = run_cli([str(out / "sts17.yaml"), "--data-dir", str(data), "--adapter", "hashing", "-q",
                                 "--subsets", "en-en", "--output", str(tmp_path / "runs")], capsys)
    assert code == 0, err
    (data / "sts12").mkdir()  # a copy with nothing in it
    code, _, err = run_cli(["import", "mteb", "STS12", "-o", str(tmp_path / "other"), "--data-dir", str(data)],
                           capsys)
    assert_one_line_error(code, err, contains="sts12.yaml: cannot pin it from")
    assert not (tmp_path / "other").exists()
    code, _, err = run_cli(["import", "mteb", "STS12", "-o", str(tmp_path / "other"), "--data-dir",
                            str(tmp_path / "no-such-folder")], capsys)  # a mistyped folder: not every spec unpinned
    assert_one_line_error(code, err, contains="no-such-folder: not a directory; nothing was written")
    assert not (tmp_path / "other").exists()
