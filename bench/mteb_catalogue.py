"""MTEB's catalogue, generated: every task and named benchmark of one mteb version, written as the file
`src/specrun/mteb/data/mteb-<version>.json.gz` that specrun reads offline (`specrun.mteb.catalogue`).

MTEB is never a dependency of specrun: this runs in a side environment that has it, outside the repository
(torch first and pinned, the CPU build; do not add `optimum`, its resolver backtracks for many minutes):

    python3 -m venv /work/mteb-venv
    /work/mteb-venv/bin/pip install torch==2.13.0 && /work/mteb-venv/bin/pip install mteb==2.26.24
    /work/mteb-venv/bin/python bench/mteb_catalogue.py [--out DIR]

and is rerun for a new mteb version (a new file beside the old). Nothing is fetched: the metadata is the task
classes', the descriptive statistics are the JSON files mteb ships in its package. The output is deterministic
(sorted keys, lists in MTEB's order, sets sorted, gzip with mtime 0, no timestamps): a rerun of the same version
writes the same bytes, which the sha256 printed last lets you confirm. Per task: MTEB's TaskMetadata, the flags that
say which tasks are active text tasks (modalities, superseded_by, is_public, is_aggregate), the abstask and its
class attributes, the hooks the task class overrides (function objects compared through the MRO), a static reading
of dataset_transform (renames, stratified sampling, class encoding, rows of lists exploded, or custom) and the
statistics per split and subset. Per benchmark: its members with the subsets and splits each takes."""

from __future__ import annotations

import argparse
import ast
import collections
import gzip
import hashlib
import inspect
import json
import logging
import platform
import re
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

from mteb_catalogue_patterns import hook_calls, read_patterns

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "specrun" / "mteb" / "data"
FORMAT = 1
COMPRESS_ABOVE = 4_000_000  # bytes of JSON past which the file is written gzipped (.json.gz)
COMMIT = re.compile(r"^[0-9a-f]{40}$")
# TaskMetadata's fields, copied as they are (the dataset dict and eval_langs are reshaped below)
METADATA_FIELDS = ("name", "description", "prompt", "type", "modalities", "category", "reference", "eval_splits",
                   "main_score", "date", "domains", "task_subtypes", "license", "annotations_creators", "dialect",
                   "sample_creation", "bibtex_citation", "adapted_from", "is_public", "contributed_by",
                   "superseded_by", "is_beta")
RESHAPED = {"dataset", "eval_langs", "tasks"}  # tasks: an aggregate's members, written as aggregate_of
SORTED_FOR_AGGREGATES = ("modalities", "domains", "task_subtypes", "dialect")  # filled from sets by mteb
# dataset_transform, read statically: the calls whose meaning is known and the calls that only move data around
KNOWN_CALLS = {"rename_column", "rename_columns", "stratified_subsampling", "class_encode_column", "select_columns",
               "remove_columns", "from_iterable", "_check_label_distribution"}
PLUMBING_CALLS = {"list", "dict", "tuple", "set", "sorted", "len", "range", "zip", "items", "keys", "values", "str",
                  "DatasetDict", "Dataset", "from_dict"}
CONTROL = (ast.If, ast.While, ast.Try, ast.Lambda, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp)
SAMPLING_PARAMS = ("dataset_dict", "seed", "splits", "label", "n_samples")  # AbsTask.stratified_subsampling


def plain(value: Any) -> Any:
    """A class attribute or metadata value as JSON: classes by dotted name, other objects by their repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if hasattr(value, "get_params"):  # a scikit-learn estimator: every parameter (its repr names changed ones only)
        return {"class": plain(type(value)), "params": plain(dict(sorted(value.get_params(deep=False).items())))}
    text = repr(value)
    return type(value).__qualname__ if " at 0x" in text else text


def abstask_of(cls: type) -> type:
    """The first class of mteb.abstasks in the task class's MRO: what the task is a kind of."""
    return next(c for c in cls.__mro__ if c.__module__.startswith("mteb.abstasks"))


def own_classes(cls: type) -> list[type]:
    """The task class and every class between it and its abstask: where the task's own code lives."""
    mro = cls.__mro__
    return list(mro[: mro.index(abstask_of(cls))])


def is_routine(value: Any) -> bool:
    return inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod, property))


def hooks(cls: type) -> dict[str, str]:
    """Methods the task's own classes define that are not the abstask's (function objects compared, not source):
    name -> the class that defines it."""
    base, found = abstask_of(cls), {}
    for owner in own_classes(cls):
        for name, value in vars(owner).items():
            if is_routine(value) and name not in found and inspect.getattr_static(base, name, None) is not value:
                found[name] = f"{owner.__module__}.{owner.__qualname__}"
    return dict(sorted(found.items()))


def class_attributes(cls: type) -> tuple[dict[str, Any], list[str]]:
    """The public data attributes of the abstask chain (AbsTask's own excluded) as the task class resolves them,
    and the names the task's own classes set."""
    from mteb.abstasks import AbsTask

    names: set[str] = set()
    for owner in cls.__mro__[: cls.__mro__.index(AbsTask)]:
        names |= {n for n, v in vars(owner).items()
                  if not n.startswith("_") and n != "metadata" and not is_routine(v) and not callable(v)}
        names |= {n for n, v in vars(owner).items() if isinstance(v, type) and not n.startswith("_")}
    values = {name: plain(getattr(cls, name)) for name in sorted(names)}
    own = sorted({n for owner in own_classes(cls) for n in vars(owner) if n in names})
    return values, own


def literal(node: ast.AST, scope: dict[str, Any]) -> Any:
    """A call argument's value when it is a literal or a module-level constant, else {"expr": its source}."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Name) and isinstance(scope.get(node.id), (int, float, str, list, tuple)):
        return plain(scope[node.id])
    return {"expr": ast.unparse(node)}


def call_args(call: ast.Call, params: tuple[str, ...], scope: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments by parameter name (positional ones named by `params`)."""
    named = {param: literal(arg, scope) for param, arg in zip(params, call.args, strict=False)}
    named.update({kw.arg: literal(kw.value, scope) for kw in call.keywords if kw.arg})
    return named


def call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "?"


def transform_call(call: ast.Call, scope: dict[str, Any], found: dict[str, Any]) -> None:
    """One call of dataset_transform into `found`: a known step with literal arguments, or an unknown name."""
    name, args = call_name(call), [literal(arg, scope) for arg in call.args]
    if name in PLUMBING_CALLS or name == "_check_label_distribution":
        return
    if name == "rename_column" and len(args) == 2 and all(isinstance(a, str) for a in args):
        found["renames"][args[0]] = args[1]
    elif name == "rename_columns" and args and isinstance(args[0], dict):
        found["renames"].update(args[0])
    elif name == "stratified_subsampling":
        found["sampling"].append({k: v for k, v in call_args(call, SAMPLING_PARAMS, scope).items()
                                  if k != "dataset_dict"})
    elif name == "class_encode_column" and args and isinstance(args[0], str):
        found["class_encode"].add(args[0])
    elif name in ("select_columns", "remove_columns") and args and isinstance(args[0], (str, list, tuple)):
        found[name].update([args[0]] if isinstance(args[0], str) else args[0])
    elif name == "from_iterable" and call.args:
        columns = [n.slice.value for n in ast.walk(call.args[0]) if isinstance(n, ast.Subscript)
                   and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)]
        if columns:
            found["explode"].update(columns)
        else:
            found["other"].add("from_iterable(computed)")
    else:
        found["other"].add(f"{name}(computed)" if name in KNOWN_CALLS else name)


def read_transform(func: Any) -> dict[str, Any]:
    """dataset_transform's source read statically: what it does where that is a known pattern (column renames,
    stratified subsampling, class encoding, columns selected or removed, rows of lists exploded, attributes set,
    splits joined, solo labels dropped, label texts split, a train_test_split draw), and the calls and constructs
    that are not (any of them makes the kind "custom": read the code)."""
    found: dict[str, Any] = {"renames": {}, "sampling": [], "class_encode": set(), "select_columns": set(),
                             "remove_columns": set(), "explode": set(), "other": set(), "sets": {},
                             "joined_splits": [], "solo_dropped": set(), "split_text": {}, "train_test_split": []}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        found["other"].add("no source")
        tree = ast.parse("")
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else tree.body
    scope = func.__globals__ if hasattr(func, "__globals__") else {}
    skipped = read_patterns(body, scope, found)
    for statement in body:
        for node in ast.walk(statement):
            if id(node) in skipped:
                continue
            if isinstance(node, CONTROL):
                found["other"].add(type(node).__name__.lower())
            elif isinstance(node, ast.Call):
                transform_call(node, scope, found)
    found = {key: sorted(value) if isinstance(value, set) else value for key, value in found.items()}
    return {"kind": "custom" if found["other"] else "known", **found}


def revision_note(revision: str, aggregate: bool) -> str | None:
    """Why a dataset revision is not a 40-hex commit (None when it is)."""
    if COMMIT.match(revision):
        return None
    if aggregate:
        return "aggregate: its members' revisions apply"
    if re.fullmatch(r"[0-9a-f]{7,39}", revision):
        return "short commit hash"
    if re.fullmatch(r"[0-9a-f]{41,}", revision):
        return f"{len(revision)} hex digits: not a commit"
    return "not a commit (a branch, tag or placeholder)"


def metadata_of(task: Any, aggregate: bool) -> dict[str, Any]:
    """TaskMetadata's fields, the dataset dict split into path/revision/the rest, subsets with their languages."""
    meta = task.metadata
    record = {name: plain(getattr(meta, name)) for name in METADATA_FIELDS}
    languages = {subset: plain(langs) for subset, langs in meta.hf_subsets_to_langscripts.items()}
    if aggregate:  # mteb fills these from sets: their order changes from run to run
        record.update({name: sorted(record[name]) for name in SORTED_FOR_AGGREGATES if record[name] is not None})
        languages = {subset: sorted(langs) for subset, langs in languages.items()}
    dataset = dict(meta.dataset)
    record["dataset"] = {"path": dataset.pop("path"), "revision": dataset.pop("revision"), "options": plain(dataset)}
    record["hf_subsets"] = list(meta.hf_subsets)
    record["languages"] = languages
    record["is_multilingual"] = meta.is_multilingual
    record["citation"] = record.pop("bibtex_citation")
    return record


def task_record(cls: type) -> dict[str, Any]:
    """Everything the catalogue holds of one task class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task = cls()
    aggregate = bool(task.is_aggregate)
    record = metadata_of(task, aggregate)
    attributes, overridden = class_attributes(cls)
    found_hooks = hooks(cls)
    transform = cls.dataset_transform if "dataset_transform" in found_hooks else None
    record.update({
        "is_aggregate": aggregate,
        "aggregate_of": [t.metadata.name for t in task.metadata.tasks] if aggregate else [],
        "revision_note": revision_note(record["dataset"]["revision"], aggregate),
        "abstask": abstask_of(cls).__name__,
        "task_class": f"{cls.__module__}.{cls.__qualname__}",
        "own_classes": [f"{c.__module__}.{c.__qualname__}" for c in own_classes(cls)],
        "attributes": attributes,
        "overridden_attributes": overridden,
        "fit_split": attributes.get("train_split"),
        "hooks": found_hooks,
        "hook_calls": hook_calls(cls, list(found_hooks)),
        "transform": read_transform(transform) if transform is not None else None,
        "stats": task.metadata.descriptive_stats,
    })
    return record


def benchmark_record(benchmark: Any) -> dict[str, Any]:
    """A named benchmark: what it says of itself and its members, each with the subsets and splits it takes."""
    members = [{"task": t.metadata.name, "hf_subsets": list(t.hf_subsets), "eval_splits": list(t.eval_splits)}
               for t in benchmark.tasks]
    return {"name": benchmark.name, "aliases": plain(list(benchmark.aliases or [])),
            "display_name": benchmark.display_name, "description": benchmark.description,
            "reference": plain(benchmark.reference), "citation": benchmark.citation,
            "contacts": plain(list(benchmark.contacts or [])), "superseded_by": benchmark.superseded_by,
            "language_view": plain(benchmark.language_view), "members": members}


def uncovered_metadata_fields() -> list[str]:
    """TaskMetadata fields this script does not write: a new mteb version may add some (the reader refuses
    unknown keys, so they are named here, not written silently)."""
    from mteb.abstasks.task_metadata import TaskMetadata

    return sorted(set(TaskMetadata.model_fields) - set(METADATA_FIELDS) - RESHAPED)


def catalogue() -> dict[str, Any]:
    """Every registered task and named benchmark of the installed mteb."""
    import mteb
    import sklearn
    from mteb.get_tasks import _TASKS_REGISTRY

    tasks = {name: task_record(cls) for name, cls in sorted(_TASKS_REGISTRY.items())}
    benchmarks = {b.name: benchmark_record(b) for b in sorted(mteb.get_benchmarks(), key=lambda b: b.name)}
    provenance = {"mteb_version": mteb.__version__, "python_version": platform.python_version(),
                  "sklearn_version": sklearn.__version__, "generator": "bench/mteb_catalogue.py"}
    return {"format": FORMAT, "provenance": provenance, "tasks": tasks, "benchmarks": benchmarks}


def active_text_counts(data: dict[str, Any]) -> collections.Counter[str]:
    """Active text tasks by type: text only, not superseded, public, not an aggregate."""
    return collections.Counter(t["type"] for t in data["tasks"].values() if t["modalities"] == ["text"]
                               and t["superseded_by"] is None and t["is_public"] and not t["is_aggregate"])


def write(data: dict[str, Any], out: Path) -> Path:
    """The catalogue as canonical JSON (gzip with mtime 0 past COMPRESS_ABOVE): the same data, the same bytes."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    raw = text.encode("utf-8")
    name = f"mteb-{data['provenance']['mteb_version']}.json"
    out.mkdir(parents=True, exist_ok=True)
    if len(raw) > COMPRESS_ABOVE:
        path, payload = out / f"{name}.gz", gzip.compress(raw, compresslevel=9, mtime=0)
    else:
        path, payload = out / name, raw
    path.write_bytes(payload)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the folder written into (default {OUT})")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    logging.getLogger("mteb").setLevel(logging.ERROR)  # one "is in beta" line per beta task otherwise
    if missing := uncovered_metadata_fields():
        print(f"TaskMetadata fields not written (extend METADATA_FIELDS and the reader): {missing}", file=sys.stderr)
        return 1
    data = catalogue()
    path = write(data, args.out)
    counts = active_text_counts(data)
    print(f"{len(data['tasks'])} tasks, {len(data['benchmarks'])} benchmarks; active text tasks: "
          f"{sum(counts.values())}")
    for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {kind}: {n}")
    for name in ("MTEB(eng, v2)", "JMTEB(v2)", "MTEB(Multilingual, v2)"):
        print(f"  benchmark {name}: {len(data['benchmarks'][name]['members'])} members")
    print(f"{path} ({path.stat().st_size} bytes) in {time.perf_counter() - started:.1f} s")
    print(f"sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
