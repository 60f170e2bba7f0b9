"""`specrun import mteb --benchmark NAME`: the members that convert as specs, a suite file of them with the
benchmark's own splits and subsets and MTEB's Mean(Task) and Mean(TaskType), every member left out named with its
reason (exit status 1), nothing half-written. Counts from the checked-in catalogue (MTEB 2.26.24)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specrun.core.plain_yaml import load_plain
from specrun.mteb import benchmark, task
from specrun.mteb.importer import refusals
from specrun.suites import Suite
from specrun.suites import model as suite_model
from tests.conftest import assert_one_line_error, run_cli


def _import(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Path], str]:
    code, out, err = run_cli(["import", "mteb", "--benchmark", name, "-o", str(tmp_path / "b")], capsys)
    return code, [Path(line) for line in out.split("\n") if line], err


@pytest.mark.parametrize(("name", "written"), [
    ("MTEB(eng, v2)", 41), ("JMTEB(v2)", 28),
    pytest.param("MTEB(Multilingual, v2)", 119, marks=pytest.mark.slow)])  # 131 members, 30 s
def test_a_benchmark_imports_what_converts_and_names_the_rest(name: str, written: int, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, paths, err = _import(tmp_path, name, capsys)
    members = benchmark(name).members
    assert code == (0 if written == len(members) else 1)  # 1: members left out, the suite is not the benchmark
    specs = [p for p in paths if not p.name.endswith(".suite.yaml")]
    (suite_path,) = [p for p in paths if p.name.endswith(".suite.yaml")]
    assert len(specs) == written and sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(
        p.name for p in paths)
    left = [line for line in err.splitlines() if line.startswith("specrun: note: left out: ")]
    assert len(left) == len(members) - written
    # independently of the importer's own bookkeeping: a member is left out exactly when its task (restricted to
    # the subsets the benchmark takes, for a multilingual task) is refused; one of several subsets is one member
    taken = {}
    for member in members:
        one = task(member.task)
        if one.is_multilingual and member.hf_subsets:
            one = one.model_copy(update={"hf_subsets": [s for s in one.hf_subsets if s in member.hf_subsets]})
        refused = bool(refusals(one))
        assert refused == any(line.startswith(f"specrun: note: left out: {member.task}: ") for line in left), member
        taken[one.name] = one.hf_subsets
    suite = Suite.model_validate(load_plain(suite_path.read_text(encoding="utf-8")))
    assert suite.aggregates == ["mean_task", "mean_task_type"]
    assert {m.spec for m in suite.members} == {p.name for p in specs}
    assert all(reason.split(": ", 1)[0] in suite.description for reason in (line[25:] for line in left))
    several, over_splits = 0, 0
    for member in suite.members:  # each member scores MTEB's main score on each split the benchmark takes
        spec = load_plain((suite_path.parent / member.spec).read_text(encoding="utf-8"))
        splits = member.splits or [member.split]
        metrics = member.metric if isinstance(member.metric, dict) else dict.fromkeys(splits, member.metric)
        assert list(metrics) == splits and (member.split is None) == (member.splits is not None)
        refs = [spec["metrics"][metrics[split]]["mteb"] for split in splits]
        assert all(ref["main"] is True and (ref.get("split") == split or ref.get("splits", {}).get(split) == split)
                   for ref, split in zip(refs, splits, strict=True))
        # one member per task: its splits the benchmark's eval splits (several: a member over them, MTEB's task
        # score their mean); a task of several subsets: one member over all of them, its spec holding exactly the
        # subsets the benchmark takes, each scored by its main score on each split
        (own_member,) = [m for m in members if m.task == refs[0]["task"]]
        assert sorted(splits) == sorted(own_member.eval_splits)
        subsets = taken[refs[0]["task"]]
        assert (member.subsets, list(spec.get("subsets") or subsets)) == ("all" if len(subsets) > 1 else None, subsets)
        for subset, overlay in (spec.get("subsets") or {}).items():
            for split, ref in zip(splits, refs, strict=True):
                own = {**ref, **((overlay or {}).get("metrics", {}).get(metrics[split], {}).get("mteb", {}))}
                own_split = own.get("split") or own.get("splits", {}).get(split)
                assert (own["main"], own_split, own["subset"]) == (True, split, subset)
        several += member.subsets is not None
        over_splits += member.splits is not None
    assert len(suite.members) == written  # one member per task written
    assert (several, over_splits) == {"MTEB(Multilingual, v2)": (28, 17), "JMTEB(v2)": (0, 6)}.get(name, (0, 0))
    header = suite_path.read_text(encoding="utf-8").splitlines()[0]
    assert f": {written} of {len(members)} tasks, one member each" in header
    # the suite loads as specrun reads it, as imported (each member over subsets and splits checked in every
    # cell): one member per task
    loaded = suite_model.load_suite(suite_path)
    assert [len(m.cells) > 1 for m in loaded.members] == [m.subsets is not None or m.splits is not None
                                                          for m in suite.members]

def test_one_subset_of_a_multilingual_task_is_read_as_mteb_reads_it(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """MTEB(eng, v2) takes STS17's en-en only: a fast-loading task, whose subset MTEB takes from the default
    config's rows of that `lang`; the spec says so, and its expected statistics are the subset's own."""
    _import(tmp_path, "MTEB(eng, v2)", capsys)
    spec = load_plain((tmp_path / "b" / "sts17.yaml").read_text(encoding="utf-8"))
    assert task("STS17").attributes["fast_loading"] is True
    split = spec["splits"]["test"]
    assert split["where"] == {"lang": "en-en"} and "config" not in spec["sources"]["sts17"]
    own = task("STS17").stats["test"]["hf_subset_descriptive_stats"]["en-en"]
    assert split["expect"]["n"] == own["num_samples"] == 250
    assert split["expect"]["fields"]["text1"] == {"unique": own["text1_statistics"]["unique_texts"],
                                                  "characters": own["text1_statistics"]["total_text_length"]}


def test_nothing_is_written_when_a_file_is_there_and_tasks_or_benchmark_not_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "sts12.yaml").write_text("mine\n", encoding="utf-8")
    code, _, err = _import(tmp_path, "MTEB(eng, v2)", capsys)
    assert_one_line_error(code, err, contains="sts12.yaml already exists")
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["sts12.yaml"]
    code, _, err = run_cli(["import", "mteb", "STS12", "--benchmark", "MTEB(eng, v2)", "-o", str(tmp_path / "c")],
                           capsys)
    assert_one_line_error(code, err, contains="not both")
    code, _, err = run_cli(["import", "mteb", "--benchmark", "MTEB(eng, v3)", "-o", str(tmp_path / "c")], capsys)
    assert_one_line_error(code, err)
    assert not (tmp_path / "c").exists()


def test_list_mteb_counts_a_benchmarks_members_and_a_language(capsys: pytest.CaptureFixture[str]) -> None:
    """`specrun list --mteb --benchmark NAME` counts the benchmark's tasks as it takes them; `--language` the
    active text tasks in that language (MTEB's codes): each table's totals equal a plain count of the catalogue."""
    from specrun.mteb import load

    code, out, err = run_cli(["list", "--mteb", "--benchmark", "MTEB(eng, v2)"], capsys)
    assert code == 0, err
    rows = [row for line in out.splitlines() if line.startswith("│") and (row := line.split("│"))[1].strip()]
    *rows, total = rows  # the last row: every type's sum
    assert sum(int(row[2]) for row in rows) == int(total[2]) == len(benchmark("MTEB(eng, v2)").members) == 41
    code, out, err = run_cli(["list", "--mteb", "--language", "jpn"], capsys)
    assert code == 0, err
    rows = [row for line in out.splitlines() if line.startswith("│") and (row := line.split("│"))[1].strip()
            and row[1].strip() != "all"]
    japanese = [t for t in load().active_text_tasks().values()
                if any(c.split("-")[0] == "jpn" for codes in t.languages.values() for c in codes)]
    assert sum(int(row[2]) for row in rows) == len(japanese) > 0
    code, _, err = run_cli(["list", "--mteb", "--language", "xx"], capsys)
    assert_one_line_error(code, err, contains="--language xx")


def test_list_mteb_counts_a_domain_and_takes_a_protocol_kind_as_its_type(capsys: pytest.CaptureFixture[str]) -> None:
    """`--domain` counts the tasks MTEB puts in that domain (it was once ignored: the whole catalogue listed);
    `--type corpus_retrieval` (a protocol kind, as `specrun list` takes it for specs) lists MTEB's Retrieval."""
    from specrun.mteb import load

    def counted(*flags: str) -> dict[str, int]:
        code, out, err = run_cli(["list", "--mteb", *flags], capsys)
        assert code == 0, err
        rows = [row for line in out.splitlines() if line.startswith("│") and (row := line.split("│"))[1].strip()]
        return {row[1].strip(): int(row[2]) for row in rows if row[1].strip() != "all"}

    medical = [t for t in load().active_text_tasks().values() if "Medical" in (t.domains or [])]
    shown = counted("--domain", "medical")
    assert sum(shown.values()) == len(medical) > 0
    assert sum(shown.values()) < len(load().active_text_tasks())
    assert counted("--type", "corpus_retrieval") == counted("--type", "retrieval") == {"Retrieval": 456}
    code, _, err = run_cli(["list", "--mteb", "--domain", "nowhere"], capsys)
    assert_one_line_error(code, err, contains="--domain nowhere: no task in that domain")


def test_a_member_without_its_local_copy_is_missing_and_an_optional_one_is_skipped(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --data-dir, an imported spec whose copy is not there said 'has no fingerprint, and a local copy in
    data/arguana is checked only against one' of a folder that does not exist, and an optional suite member so
    failing stopped the suite (a new-user trial): it is missing data now, named as such, and skipped when optional."""
    from tests.mteb.snapshots import hub_snapshot

    words = ["cat", "dog", "sat", "ran", "on", "the", "mat", "a", "red", "blue", "fast", "slow", "tree", "house",
             "river"]
    rng = np.random.default_rng(0)
    rows = {"sentence1": [" ".join(rng.choice(words, 5)) for _ in range(60)],
            "sentence2": [" ".join(rng.choice(words, 5)) for _ in range(60)],
            "score": [float(v) for v in rng.integers(0, 6, 60)]}
    hub_snapshot(tmp_path / "data" / "sts12", {"test": rows})
    code, _out, err = run_cli(["import", "mteb", "STS12", "STS13", "-o", str(tmp_path / "specs"), "--data-dir",
                               str(tmp_path / "data")], capsys)
    assert code == 0, err
    (tmp_path / "elsewhere").mkdir()
    for spec in ("sts13", "sts12"):  # unpinned, and pinned: both miss the same way
        data = tmp_path / ("data" if spec == "sts13" else "elsewhere")
        code, _out, err = run_cli([str(tmp_path / "specs" / f"{spec}.yaml"), "--data-dir", str(data),
                                   "--adapter", "hashing", "-q", "-o", str(tmp_path / "runs")], capsys)
        line = assert_one_line_error(code, err, contains=f"no local copy of the hub dataset mteb/{spec}-sts")
        assert "fingerprint, and" not in line
    suite = tmp_path / "specs" / "two.suite.yaml"
    suite.write_text("id: two\ntitle: Two\nversion: '1'\ndescription: d\nmembers:\n"
                     "  - {spec: sts12.yaml, metric: spearman_zero_shot}\n"
                     "  - {spec: sts13.yaml, metric: spearman_zero_shot, optional: true}\naggregates: [mean_task]\n",
                     encoding="utf-8")
    code, out, err = run_cli([str(suite), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing",
                              "-o", str(tmp_path / "runs"), "--published", str(data_dir / "mteb-results")], capsys)
    assert code == 0, err
    assert "sts13" in err and "missing" in err and "no local copy of the hub dataset mteb/sts13-sts" in err
    report = (Path(out.split()[-1]).parent / "suite.md").read_text(encoding="utf-8")  # its published section says
    assert "Not the reference's data: sts12 test spearman_zero_shot: split test differs from MTEB" in report


def test_list_options_of_mteb_tasks_need_mteb(capsys: pytest.CaptureFixture[str]) -> None:
    """`specrun list --tasks` listed the folder's specs and ignored the flag (a review)."""
    for flags in (["--tasks"], ["--benchmark", "MTEB(eng, v2)"]):
        code, _out, err = run_cli(["list", *flags], capsys)
        assert_one_line_error(code, err, contains="lists MTEB's tasks: add --mteb")
