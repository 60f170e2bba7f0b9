"""`specrun import mteb --benchmark NAME`: a named MTEB benchmark as its members' specs and one suite file. What
converts is written; what does not is listed with its reason and left out of the suite (whose description says
so), so the suite never passes for the whole benchmark. The suite takes the benchmark's own split choices and
MTEB's Mean(Task) and Mean(TaskType)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from specrun.core.errors import UsageError
from specrun.mteb.catalogue import Benchmark, Catalogue, Member, Task, load
from specrun.mteb.importer import Imported, build_spec, refusals, spec_id, spec_text


@dataclass(frozen=True)
class BenchmarkImport:
    """The members that convert (their specs), those that do not (task, reasons), and the suite file's text."""

    benchmark: str
    suite_id: str
    specs: list[Imported]
    refused: list[tuple[str, list[str]]]
    suite_text: str


def suite_id(name: str) -> str:
    """`MTEB(eng, v2)` -> `mteb-eng-v2`: a suite id (lowercase letters, digits, '.', '_', '-')."""
    slug = re.sub(r"[^a-z0-9._]+", "-", name.lower()).strip("-._")
    if not slug:
        raise UsageError(f"benchmark {name!r} makes no suite id")
    return slug


def _refused_split(benchmark: Benchmark, task_name: str, splits: list[str], task_splits: list[str]) -> list[str]:
    """A benchmark split the task does not evaluate cannot be scored: said as a reason of its own."""
    missing = [split for split in splits if split not in task_splits]
    return [f"{benchmark.name} takes split(s) {', '.join(missing)} the task does not evaluate"] if missing else []


def _main_metric(spec: dict, split: str) -> str:
    """The spec's metric whose `mteb` counterpart is the main score on `split` (the importer marks one)."""
    for metric_id, metric in spec["metrics"].items():
        ref = metric.get("mteb") or {}
        if ref.get("main") and (ref.get("split") == split or split in (ref.get("splits") or {})):
            return str(metric_id)
    raise UsageError(f"spec {spec['id']}: no metric is MTEB's main score on {split} (a bug in specrun import)")


def _member(spec: dict, task: Task) -> dict:
    """The task as one suite member: MTEB's task score, the mean of its main score over the (subset, split) cells
    the benchmark takes. A task of several subsets (the spec holds exactly those taken) is a member over all of
    them; one of several eval splits, a member over those splits, its metric per split (the spec names the main
    score on each split by its own id)."""
    several = {"subsets": "all"} if len(task.hf_subsets) > 1 else {}
    splits = task.eval_splits
    if len(splits) == 1:
        return {"spec": f"{spec_id(task.name)}.yaml", "metric": _main_metric(spec, splits[0]), "split": splits[0],
                **several}
    metrics = {split: _main_metric(spec, split) for split in splits}
    metric: str | dict[str, str] = metrics if len(set(metrics.values())) > 1 else metrics[splits[0]]
    return {"spec": f"{spec_id(task.name)}.yaml", "metric": metric, "splits": list(splits), **several}


def as_taken(task: Task, member: Member) -> Task:
    """The task as the benchmark takes it: a multilingual task restricted to the subsets it takes, and any task to
    the eval splits it takes, in the task's order (a subset or split the task does not have leaves it as it is,
    for the caller to refuse): a split the benchmark does not score is neither read nor scored."""
    taken, splits = set(member.hf_subsets), set(member.eval_splits)
    if task.is_multilingual and taken and taken <= set(task.hf_subsets):
        task = task.model_copy(update={"hf_subsets": [subset for subset in task.hf_subsets if subset in taken]})
    if splits and splits <= set(task.eval_splits):
        task = task.model_copy(update={"eval_splits": [split for split in task.eval_splits if split in splits]})
    return task


def member_tasks(catalogue: Catalogue, name: str) -> list[Task]:
    """The benchmark's tasks as it takes them (as_taken)."""
    return [as_taken(catalogue.task(member.task), member) for member in catalogue.benchmark(name).members]


def import_benchmark(name: str, catalogue: Catalogue | None = None) -> BenchmarkImport:
    """Every member of the benchmark imported or refused with its reasons; the suite of those imported."""
    catalogue = catalogue or load()
    version = catalogue.provenance.mteb_version
    benchmark = catalogue.benchmark(name)
    specs: list[Imported] = []
    refused: list[tuple[str, list[str]]] = []
    members: list[dict] = []
    for member in benchmark.members:
        task = as_taken(catalogue.task(member.task), member)
        reasons = refusals(task) + _refused_split(benchmark, task.name, member.eval_splits, task.eval_splits)
        if set(member.hf_subsets) - set(task.hf_subsets):
            reasons.append(f"{benchmark.name} takes subset(s) the task does not have")
        if reasons:
            refused.append((task.name, reasons))
            continue
        spec = build_spec(task, version)
        specs.append(Imported(task.name, spec_id(task.name), spec_text(task, version, spec)))
        members.append(_member(spec, task))
    if not specs:
        raise UsageError(f"no member of {benchmark.name} converts: "
                         + "; ".join(f"{task}: {', '.join(reasons)}" for task, reasons in refused))
    identity = suite_id(benchmark.name)
    return BenchmarkImport(benchmark=benchmark.name, suite_id=identity, specs=specs, refused=refused,
                           suite_text=_suite_text(benchmark, identity, version, members, refused))


def _suite_text(benchmark: Benchmark, identity: str, version: str, members: list[dict],
                refused: list[tuple[str, list[str]]]) -> str:
    """The suite file: the members imported, MTEB's Mean(Task) and Mean(TaskType); the description names every
    member left out, so no aggregate reads as the benchmark's whole."""
    left = (f" Left out, as specrun cannot yet express them ({len(refused)} of {len(benchmark.members)} tasks): "
            + "; ".join(f"{task} ({', '.join(reasons)})" for task, reasons in refused) + ".") if refused else ""
    suite = {"id": identity, "title": benchmark.display_name or benchmark.name, "version": f"mteb-{version}",
             "description": (f"MTEB {version}'s benchmark {benchmark.name}, imported by `specrun import mteb "
                             f"--benchmark`: {benchmark.description.strip()}{left}"),
             **({"citation": benchmark.citation} if benchmark.citation else {}),
             "members": members, "aggregates": ["mean_task", "mean_task_type"]}
    subsets, splits = (sum(1 for m in members if key in m) for key in ("subsets", "splits"))
    over = [f"{count} of them the mean over a task's {what}" for count, what in ((subsets, "subsets"),
                                                                               (splits, "eval splits")) if count]
    header = (f"# MTEB {version} benchmark {benchmark.name}, written by `specrun import mteb --benchmark`: "
              f"{len(members)} of {len(benchmark.members)} tasks, one member each"
              f"{''.join(', ' + o for o in over)} (MTEB's task score: the mean over its subsets and splits).\n")
    return header + yaml.safe_dump(suite, sort_keys=False, allow_unicode=True, width=118)


__all__ = ["BenchmarkImport", "import_benchmark", "member_tasks", "suite_id"]
