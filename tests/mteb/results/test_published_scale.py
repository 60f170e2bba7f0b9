"""The results repository read at scale, by behaviour (bench/published_scale.py has the seconds and megabytes of
its 104,926 files): indexing opens no file; a board's task opens that task's files, each once, and the
model_meta.json of the revisions taken, nothing else; what stays read is bounded however many files are opened.
A synthetic tree of a few hundred files in both layouts, with `external/` and `no_revision_available/` folders."""

from __future__ import annotations

import builtins
import io
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from specrun.mteb.results import PublishedDir, PublishedIndex
from specrun.mteb.results.lookup import FILES_KEPT
from specrun.mteb.score_ref import MtebRef

TASKS = ("STS12", "STS13", *(f"SynthTask{i}" for i in range(6)))
N_MODELS = 40


def _document(task: str, value: float, older: bool) -> dict[str, Any]:
    """A task file in mteb 1.11's layout, or (older) the layout before it, as the slice holds both."""
    if older:
        return {"dataset_revision": "a0d554a64d88156834ff5ae9920b964011b16384", "mteb_dataset_name": task,
                "mteb_version": "1.2.0", "test": {"cos_sim": {"pearson": value, "spearman": value},
                                                  "evaluation_time": 1.0}}
    entry = {"hf_subset": "default", "languages": ["eng-Latn"], "cosine_spearman": value, "main_score": value}
    return {"dataset_revision": "a0d554a64d88156834ff5ae9920b964011b16384", "task_name": task,
            "mteb_version": "1.12.75", "scores": {"test": [entry]}}


def _revisions(i: int) -> list[str]:
    named = f"{i:040x}"
    return [named, "no_revision_available"] if i % 5 == 0 else ["external"] if i % 7 == 0 else [named]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """N_MODELS model folders, each revision holding model_meta.json and most of TASKS."""
    root = tmp_path_factory.mktemp("published")
    for i in range(N_MODELS):
        for revision in _revisions(i):
            folder = root / f"org__model-{i:02d}" / revision
            folder.mkdir(parents=True)
            (folder / "model_meta.json").write_text(json.dumps({"n_parameters": 1000 + i}), encoding="utf-8")
            for k, task in enumerate(TASKS):
                if (i + k) % 9 != 0:
                    older = task == "STS12" and i % 4 == 0
                    (folder / f"{task}.json").write_text(json.dumps(_document(task, (i + k) / 100, older)),
                                                         encoding="utf-8")
    return root


@contextmanager
def recording(root: Path) -> Iterator[list[Path]]:
    """Every file below root opened (os.open, open, io.open) while inside."""
    seen: list[Path] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        seen.append(Path(path))
        return real_os_open(path, *args, **kwargs)

    def py_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, os.PathLike)):
            seen.append(Path(file))
        return real_open(file, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "open", os_open)
        patch.setattr(builtins, "open", py_open)
        patch.setattr(io, "open", py_open)
        yield seen
    seen[:] = [path for path in seen if path.is_relative_to(root)]


def test_the_index_names_every_file_and_opens_none(tree: Path) -> None:
    with recording(tree) as opened:
        index = PublishedIndex.build(tree)
    files = list(tree.glob("*/*/*.json"))
    assert opened == []
    assert 300 < index.n_files == len(files)
    assert {task: len(found) for task, found in index.tasks.items()} == {
        task: len(list(tree.glob(f"*/*/{task}.json"))) for task in TASKS}
    assert {c.path for found in index.tasks.values() for c in found} == {
        p for p in files if p.name != "model_meta.json"}


def test_a_file_not_plainly_named_is_set_aside_by_its_repository_name(tmp_path: Path) -> None:
    folder = tmp_path / "org__model" / "rev1"
    folder.mkdir(parents=True)
    for name in ("STS12.json", "bad name.json"):
        (folder / name).write_text("{}", encoding="utf-8")
    index = PublishedIndex.build(tmp_path)
    assert index.set_aside == ["org__model/rev1/bad name.json: not a plain file name or not a file; not read"]
    assert list(index.tasks) == ["STS12"] and index.n_files == 2


def test_a_board_opens_only_its_tasks_files_each_once(tree: Path) -> None:
    published = PublishedDir(tree)
    assert published.index.n_files > 0  # indexed before recording: the board's reads alone are counted
    with recording(tree) as opened:
        found = published.every_model(MtebRef(task="STS12", split="test", score="cosine_spearman"))
    task_files = sorted(tree.glob("*/*/STS12.json"))
    metas = sorted(p for p in opened if p.name == "model_meta.json")
    assert sorted(p for p in opened if p.name != "model_meta.json") == task_files  # each once, no other task's
    assert found.n_files == len(task_files) and found.set_aside == []
    assert metas == sorted(v.file.parent / "model_meta.json" for v in found.values)  # the revisions taken only
    assert len(found.values) == len({p.parts[-3] for p in task_files})  # one row per model
    assert any(v.layout != "1.11 and later" for v in found.values) and any(v.revision == "external"
                                                                          for v in found.values)


def test_what_stays_read_is_bounded_however_many_files_are_opened(tree: Path) -> None:
    published = PublishedDir(tree)
    for task in TASKS:  # every board: no task file kept after it
        assert published.every_model(MtebRef(task=task, split="test", score="cosine_spearman")).values
    with recording(tree) as opened:
        published.every_model(MtebRef(task="STS13", split="test", score="cosine_spearman"))
    assert len([p for p in opened if p.name == "STS13.json"]) == len(list(tree.glob("*/*/STS13.json")))
    candidates = [c for task in TASKS for c in published.index.tasks[task] if c.revision != "external"][
        :FILES_KEPT + 5]
    refs = [(c, MtebRef(task=c.task, split="test", score="cosine_spearman")) for c in candidates]
    first, ref = refs[0]
    with recording(tree) as opened:
        published.find(first.model, first.revision, ref)
        published.find(first.model, first.revision, ref)  # several metrics of a run share a file: read once
    assert opened == [first.path]
    for c, r in refs[1:]:
        published.find(c.model, c.revision, r)
    with recording(tree) as opened:
        published.find(first.model, first.revision, ref)  # FILES_KEPT others since: no longer held, read again
    assert opened == [first.path]
