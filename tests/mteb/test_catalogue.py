"""The checked-in MTEB catalogue (bench/mteb_catalogue.py made it with mteb 2.26.24): it loads offline, and the
figures the generator printed are what the raw file holds, counted here with plain json and gzip, not through the
catalogue's own models. mteb is not imported."""

from __future__ import annotations

import collections
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from specrun.core.errors import UsageError
from specrun.mteb import catalogue

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "src" / "specrun" / "mteb" / "data" / "mteb-2.26.24.json.gz"
# what bench/mteb_catalogue.py printed for mteb 2.26.24: active text tasks (text only, not superseded, public, not
# an aggregate) by type; the list omits Any2AnyRetrieval's one text-only task (WebQAT2TRetrieval)
ACTIVE_TEXT = {"Retrieval": 456, "Classification": 353, "Clustering": 83, "PairClassification": 52, "STS": 51,
               "Reranking": 50, "BitextMining": 31, "MultilabelClassification": 13, "InstructionRetrieval": 8,
               "InstructionReranking": 5, "Regression": 2, "Summarization": 2, "Any2AnyRetrieval": 1}
MEMBERS = {"MTEB(eng, v2)": 41, "JMTEB(v2)": 28, "MTEB(Multilingual, v2)": 131}


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    return dict(json.loads(gzip.decompress(FILE.read_bytes())))


def test_the_packaged_catalogue_loads_and_is_the_file_checked_in(raw: dict[str, Any]) -> None:
    assert catalogue.versions() == {"2.26.24": FILE.name}
    loaded = catalogue.load()
    assert loaded.provenance.mteb_version == raw["provenance"]["mteb_version"] == "2.26.24"
    assert sorted(loaded.tasks) == sorted(raw["tasks"]) and len(loaded.tasks) == 2087
    assert sorted(loaded.benchmarks) == sorted(raw["benchmarks"]) and len(loaded.benchmarks) == 78
    assert FILE.read_bytes()[4:8] == b"\0\0\0\0"  # gzip's mtime: none, so a rerun writes the same bytes
    assert '"mteb/data/*.json.gz"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # package data


def test_active_text_tasks_by_type_are_what_the_generator_printed(raw: dict[str, Any]) -> None:
    counted = collections.Counter(t["type"] for t in raw["tasks"].values() if t["modalities"] == ["text"]
                                  and t["superseded_by"] is None and t["is_public"] and not t["is_aggregate"])
    assert dict(counted) == ACTIVE_TEXT and sum(counted.values()) == 1107
    through_helpers = collections.Counter(t.type for t in catalogue.active_text_tasks().values())
    assert through_helpers == counted


def test_named_benchmarks_list_their_members_with_subsets_and_splits(raw: dict[str, Any]) -> None:
    for name, count in MEMBERS.items():
        members = raw["benchmarks"][name]["members"]
        assert len(members) == count == len(catalogue.benchmark(name).members)
        for member in members:
            task = raw["tasks"][member["task"]]
            assert set(member["hf_subsets"]) <= set(task["hf_subsets"]) and member["hf_subsets"]
            assert set(member["eval_splits"]) <= set(task["eval_splits"]) and member["eval_splits"]
    assert catalogue.benchmark("MTEB(eng)").name == "MTEB(eng, v2)"  # by alias
    jmteb = {m.task: m for m in catalogue.benchmark("JMTEB(v2)").members}
    assert jmteb["SIB200ClusteringS2S"].hf_subsets == ["jpn_Jpan"]  # a subset of a multilingual task


def test_every_revision_is_a_commit_or_says_why_not(raw: dict[str, Any]) -> None:
    notes = {}
    for name, task in raw["tasks"].items():
        is_commit = re.fullmatch(r"[0-9a-f]{40}", task["dataset"]["revision"]) is not None
        assert is_commit == (task["revision_note"] is None), name
        if not is_commit:
            notes[name] = task["revision_note"]
            assert catalogue.task(name).dataset.is_commit is False
    assert len(notes) == 19 and sum(task["is_aggregate"] for task in raw["tasks"].values()) == 9
    assert notes["PublicHealthQA"].startswith("not a commit") and notes["IFIRAila"] == "short commit hash"


def test_a_task_carries_its_abstask_attributes_hooks_transform_and_statistics() -> None:
    banking = catalogue.task("Banking77Classification.v2")
    assert (banking.abstask, banking.fit_split, banking.main_score) == ("AbsTaskClassification", "train", "accuracy")
    assert banking.attributes["samples_per_label"] == 8 and banking.attributes["n_experiments"] == 10
    assert banking.hooks == {} and banking.transform is None
    assert banking.stats is not None and banking.stats["test"]["num_samples"] == 3076
    assert catalogue.task("ArguAna").attributes["k_values"] == [1, 3, 5, 10, 20, 100, 1000]
    tamil = catalogue.task("TamilNewsClassification").transform
    assert tamil is not None and tamil.kind == "known"
    assert tamil.renames == {"NewsInTamil": "text", "Category": "label"}
    assert tamil.sampling == [{"seed": {"expr": "self.seed"}}]
    medrxiv = catalogue.task("MedrxivClusteringP2P.v2")
    assert medrxiv.transform is not None and medrxiv.transform.explode == ["labels", "sentences"]
    assert set(medrxiv.hooks) == {"dataset_transform"}


def test_unknown_names_are_one_line_with_the_closest() -> None:
    with pytest.raises(UsageError, match=r"did you mean 'Banking77Classification'\?"):
        catalogue.task("Banking77Clasification")
    with pytest.raises(UsageError, match=r"did you mean 'MTEB\(eng, v2\)'\?"):
        catalogue.benchmark("MTEB(eng, v3)")
    with pytest.raises(UsageError, match=r"packaged: 2\.26\.24"):
        catalogue.load("1.0.0")


def test_the_catalogue_is_read_once_however_it_is_asked_for() -> None:
    """load(), load(None), load(version=None) and load(the newest version) are one parse (0.7 s each before:
    functools.cache told the ways of calling apart)."""
    newest = next(reversed(catalogue.versions()))
    first = catalogue.load()
    assert all(found is first for found in (catalogue.load(None), catalogue.load(version=None),
                                            catalogue.load(newest)))
    assert catalogue.task(next(iter(first.tasks)), newest) is first.tasks[next(iter(first.tasks))]
