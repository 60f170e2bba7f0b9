"""`specrun import mteb`: an MTEB task of the catalogue as an ordinary spec (a dict, then YAML text): an
`hf_dataset` source at MTEB's dataset path and revision, its eval splits, the columns its abstask reads, and the
main score and its companion with their `mteb:` mappings. What YAML cannot say (Python of the task's own, a
revision that is not a commit, several hf_subsets for now, a task type not supported yet) is refused, one line per
task naming the piece. Task names come from the catalogue only; nothing here knows a benchmark by name."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from specrun.core.errors import UsageError
from specrun.mteb._expect import expected_split
from specrun.mteb._type_import import TypeImport
from specrun.mteb.catalogue import Catalogue, Task, load
from specrun.mteb.import_bitext_mining import BITEXT_MINING_IMPORT
from specrun.mteb.import_classification import CLASSIFICATION_IMPORT
from specrun.mteb.import_clustering import CLUSTERING_IMPORT
from specrun.mteb.import_instruction_retrieval import INSTRUCTION_RERANKING_IMPORT, INSTRUCTION_RETRIEVAL_IMPORT
from specrun.mteb.import_multilabel import MULTILABEL_IMPORT
from specrun.mteb.import_pair_classification import PAIR_CLASSIFICATION_IMPORT
from specrun.mteb.import_regression import REGRESSION_IMPORT
from specrun.mteb.import_reranking import RERANKING_IMPORT
from specrun.mteb.import_retrieval import RETRIEVAL_IMPORT
from specrun.mteb.import_sampling import sampled_splits
from specrun.mteb.import_sts import STS_IMPORT
from specrun.mteb.import_subset import MAX_SUBSETS, one_subset, restricted, split_stats, subset_reading, subset_spec
from specrun.mteb.import_summarization import SUMMARIZATION_IMPORT
from specrun.mteb.vocabulary import ANNOTATIONS_CREATORS, DOMAINS, SAMPLE_CREATION
from specrun.spec.metadata import Metadata
from specrun.spec.model import MAX_NAME, SUBSET_NAME_PATTERN

SEED = 20261006  # the seed every shipped spec uses: it seeds the subset draw (none here: `all`) and the bootstrap
ID_UNSAFE = re.compile(r"[^a-z0-9_.-]+")
SUBSET_NAME = re.compile(SUBSET_NAME_PATTERN)
ISO_CODE = re.compile(r"^[a-z]{2,3}$")  # the spec's `language` entries
# a dataset_transform the generator read as plain steps: renames are columns named differently; these change rows
ROW_CHANGING_STEPS = ("sampling", "class_encode", "explode", "sets", "joined_splits", "solo_dropped", "split_text",
                      "train_test_split")  # sets: attributes the transform assigns, which hold at evaluation


# the task types the import writes, one registration each (what a type contributes: mteb/type_import.py)
TYPES: dict[str, TypeImport] = {entry.type: entry for entry in (STS_IMPORT, RETRIEVAL_IMPORT, CLASSIFICATION_IMPORT,
                                                                   BITEXT_MINING_IMPORT, MULTILABEL_IMPORT,
                                                                   REGRESSION_IMPORT,
                                                                   PAIR_CLASSIFICATION_IMPORT, CLUSTERING_IMPORT,
                                                                   SUMMARIZATION_IMPORT, RERANKING_IMPORT,
                                                                   INSTRUCTION_RETRIEVAL_IMPORT,
                                                                   INSTRUCTION_RERANKING_IMPORT)}


@dataclass(frozen=True)
class Imported:
    task: str
    spec_id: str
    text: str  # the spec as YAML


def spec_id(task_name: str) -> str:
    """The spec id of a task: its name in lower case, runs of other characters as '-' (stable, a valid NAME)."""
    text = ID_UNSAFE.sub("-", task_name.lower()).strip("-._")
    return text[:MAX_NAME] or "task"


CHECKS: list[Callable[[Task], str | None]] = []  # filled below: type, dataset, hooks, shape


def refusals(task: Task) -> list[str]:
    """Why the task cannot be written as a spec: the missing piece each check finds (none: it imports); of a
    task of several subsets, also the first subset whose own data its type cannot say (labels that differ, say)."""
    found = [reason for check in CHECKS if (reason := check(task)) is not None]
    if found or len(task.hf_subsets) == 1:
        return found
    for subset in task.hf_subsets:
        reason = TYPES[task.type].refusal(restricted(task, subset))
        if reason:
            return [f"subset {subset}: {reason}"]
    return []


def _type_refusal(task: Task) -> str | None:
    if task.type not in TYPES:
        return f"task type {task.type} is not supported yet (supported: {', '.join(TYPES)})"
    if task.modalities != ["text"]:
        return f"modalities {task.modalities} (text only is supported)"
    if task.is_aggregate:
        return f"an aggregate of {len(task.aggregate_of)} tasks, not a task of its own (import its members)"
    scores = TYPES[task.type].metrics
    if task.main_score not in scores:
        return f"main score {task.main_score}, which the import does not map (for {task.type}: {', '.join(scores)})"
    return None


def _dataset_refusal(task: Task) -> str | None:
    if not task.dataset.is_commit:
        return (f"dataset revision {task.dataset.revision!r} is not a 40-hex commit "
                f"({task.revision_note or 'no pin'})")
    other = sorted(set(task.dataset.options) - {"name"})
    if other:
        return f"load_dataset argument(s) {', '.join(other)} (not expressible as an hf_dataset source yet)"
    if len(task.hf_subsets) > MAX_SUBSETS:
        return f"{len(task.hf_subsets):,} hf_subsets (more than the {MAX_SUBSETS} one imported spec holds)"
    bad = [subset for subset in task.hf_subsets if not SUBSET_NAME.match(subset)] if len(task.hf_subsets) > 1 else []
    if bad:
        return f"hf_subset name {bad[0]!r} is not a valid subset name (letters, digits, '_', '.', '-')"
    return None


def _hook_refusal(task: Task) -> str | None:
    """Python of the task's own: an overridden method other than a plain dataset_transform or one that only adds
    scores of a kind its type knows (`TypeImport.extra_scores`: what its body calls, as the catalogue read it)."""
    hooks = [hook for hook in task.hooks if hook != "dataset_transform" and not _adds_scores_only(task, hook)]
    if hooks:
        owner = task.hooks[hooks[0]].rsplit(".", 1)[-1]
        return f"overrides {', '.join(hooks)} ({owner}): custom Python that YAML cannot say"
    transform = task.transform
    if "dataset_transform" in task.hooks and transform is None:
        return "overrides dataset_transform, and its steps were not read"
    if transform is None:
        return None
    if transform.kind == "custom" or transform.other:
        return f"a custom dataset_transform ({', '.join(transform.other) or 'unread steps'})"
    said = TYPES[task.type].row_steps if task.type in TYPES else ()
    steps = [step for step in ROW_CHANGING_STEPS if getattr(transform, step) and step not in said]
    if steps:
        return f"a dataset_transform with {', '.join(steps)} (not expressible in a spec yet)"
    return None


def _adds_scores_only(task: Task, hook: str) -> bool:
    allowed = TYPES[task.type].extra_scores.get(hook) if task.type in TYPES else None
    return allowed is not None and hook in task.hook_calls and set(task.hook_calls[hook]) <= allowed


def _shape_refusal(task: Task) -> str | None:
    if task.type not in TYPES:  # the columns and splits of a type are read once the type is supported
        return None
    reason = TYPES[task.type].refusal(task)
    if reason:
        return reason
    if not task.eval_splits:
        return "no eval split"
    bad = [split for split in task.eval_splits if spec_id(split) != split]
    if bad:
        return f"eval split {bad[0]!r} is not a valid spec name"
    return None


CHECKS.extend([_type_refusal, _dataset_refusal, _hook_refusal, _shape_refusal])


def _languages(task: Task) -> list[str]:
    return list(dict.fromkeys(code for subset in task.hf_subsets for code in task.languages.get(subset, [])))


def _iso_codes(task: Task) -> list[str]:
    """The spec's `language`: the ISO 639 codes of MTEB's languages (a programming language MTEB lists, e.g.
    `python-Code`, is no ISO code: it stays in `metadata.languages` only)."""
    return list(dict.fromkeys(base for code in _languages(task) if ISO_CODE.match(base := code.split("-")[0])))


def _metadata(task: Task) -> dict[str, Any]:
    """MTEB's metadata keys the spec's `metadata` holds, each only where its value is one the spec accepts."""
    found: dict[str, Any] = {"languages": _languages(task)}
    domains = [domain for domain in task.domains or [] if domain in DOMAINS]
    if domains:
        found["domains"] = domains
    if task.annotations_creators in ANNOTATIONS_CREATORS:
        found["annotations_creators"] = task.annotations_creators
    if task.sample_creation in SAMPLE_CREATION:
        found["sample_creation"] = task.sample_creation
    if task.date:
        found["date"] = list(task.date)
    if task.reference:
        found["reference"] = task.reference
    return {key: value for key, value in found.items() if value and _accepted(key, value)}


def _accepted(key: str, value: Any) -> bool:
    """The spec's `metadata` takes this value of this key (a date out of order or a reference that is not a URL
    is left out, not guessed at)."""
    try:
        Metadata.model_validate({key: value})
    except ValueError:  # pydantic's ValidationError is a ValueError
        return False
    return True


def _metrics(task: Task, entry: TypeImport) -> dict[str, Any]:
    """The main score and its companions, each with its `mteb:` counterpart: on the one eval split (`split`), or
    on each of several (`splits`: every spec split is MTEB's split of the same name), one metric either way."""
    metrics: dict[str, Any] = {}
    companions = entry.companions_of(task) if entry.companions_of else entry.companions
    for score in dict.fromkeys([task.main_score, *companions]):
        metric, label = entry.metrics[score]
        ref: dict[str, Any] = {"task": task.name, "subset": task.hf_subsets[0], "score": score}
        if len(task.eval_splits) > 1:
            ref["splits"] = Flow({split: split for split in task.eval_splits})
        else:
            ref["split"] = task.eval_splits[0]
        if score == task.main_score:
            ref["main"] = True
        ref["languages"] = _languages(task)
        if entry.mteb_caveat:
            ref["caveat"] = entry.mteb_caveat
        metrics[entry.metric_name(score, metric)] = {
            "metric": metric, "protocol": entry.protocol, "label": label, "direction": "higher",
            "range": list(entry.score_ranges.get(score, entry.score_range)),
            **({"interval": method} if (method := entry.interval(task)) else {}), "mteb": Flow(ref)}
    return metrics


def _notice(task: Task, version: str) -> str:
    return (f"Imported from MTEB {version}'s metadata of task {task.name}: the licence is MTEB's statement "
            f"({task.license or 'none stated'}), not confirmed against the data's own terms. Local evaluation is "
            "fine; confirm what the data's licence allows before publishing results or rows on the hub.")


def build_spec(task: Task, version: str) -> dict[str, Any]:
    """The spec of a task that `refusals` accepts, as a plain dict in the order a spec is read; a task of several
    subsets as the spec of its first with every subset's overlay (import_subset.subset_spec)."""
    if len(task.hf_subsets) == 1:
        return _one_spec(task, version)
    return subset_spec(task, {subset: _one_spec(restricted(task, subset), version) for subset in task.hf_subsets},
                       Flow)


def _one_spec(task: Task, version: str) -> dict[str, Any]:
    """The spec of a task of one subset."""
    entry, name = TYPES[task.type], spec_id(task.name)
    base: dict[str, Any] = {"type": "hf_dataset", "path": task.dataset.path, "revision": task.dataset.revision,
                            "licence": task.license or "none-stated"}
    spec: dict[str, Any] = {
        "id": name,
        "title": f"{task.name} (MTEB {task.type}{', ' + subset if (subset := one_subset(task)) else ''})",
        "language": _iso_codes(task),
        "metadata": _metadata(task),
        "licence": {"data": task.license or "none-stated", "publication": "unconfirmed",
                    "notice": _notice(task, version)},
        "sources": {name: entry.source(task, name, base)},
        "splits": sampled_splits(task, {split: _said({"source": name, "source_split": split,
                                                      **subset_reading(task)[1], **entry.split_reading(task),
                                                      **_expect(task, entry, split, version)})
                                        for split in task.eval_splits} | entry.extra_splits(task, name)),
        "subset": {"seed": SEED, "splits": dict.fromkeys(task.eval_splits, "all")},
        "protocols": {entry.protocol: entry.protocol_entry(task)},
        "metrics": _metrics(task, entry),
        "uncertainty": {"method": "bootstrap", "interval": "auto", "resamples": 1000, "confidence": 0.95},
        "card": entry.card(task, version),
    }
    if task.citation and task.citation.strip():
        spec["citation"] = task.citation.strip()
    return spec


def _said(entry: dict[str, Any]) -> dict[str, Any]:
    """A split's keys without those a type's split_reading unsets (None: source_split where it reads several)."""
    return {key: value for key, value in entry.items() if value is not None}


def _expect(task: Task, entry: TypeImport, split: str, version: str) -> dict[str, Any]:
    """`expect`: MTEB's descriptive statistics of the split, where the task type's fields map onto ours (STS's
    text1 and text2), so a run on a local copy says where that copy is not MTEB's data."""
    fields = entry.expect_fields
    found = expected_split(split_stats(task, split), fields, source=f"MTEB {version}'s descriptive statistics",
                           label_field=entry.label_field) if fields else None
    return {"expect": found} if found else {}


class SpecDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Multi-line texts (citations) as literal blocks, so the file reads as written. libyaml's emitter where PyYAML
    has it: the same text as the pure-Python one for every task of the catalogue (checked in a test), four times
    as fast; a spec with a character beyond U+FFFF (an emoji) goes to the pure-Python one (`PureSpecDumper`),
    since libyaml escapes it and so writes a literal block as one quoted line."""


class PureSpecDumper(yaml.SafeDumper):
    """SpecDumper's representers on the pure-Python emitter."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """Multi-line texts as literal blocks; a long one-line text (a description, a notice) as a folded block,
    whose line breaks a round-trip rewrite (`fingerprint --write`) keeps, where a wrapped quoted text comes back
    as one line of hundreds of characters (a new-user trial). Texts that folding could change stay as they are."""
    style = "|" if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()) else None
    if style is None and len(value) > FOLDED_FROM and "\n" not in value and value == value.strip() \
            and "  " not in value and value.isprintable():
        style = ">"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


FOLDED_FROM = 100  # characters: a text longer than a line of the file is written folded


class Flow(dict):  # type: ignore[type-arg]
    """A mapping written on one line (an `mteb:` counterpart, as the hand-written specs write it)."""


class _Inline(str):
    """A text inside a one-line mapping or list: no block style there, so never folded."""


def _inline(dumper: yaml.SafeDumper, value: _Inline) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value))


def _list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    flow = all(isinstance(item, (str, int, float)) and "\n" not in str(item) for item in value)
    items = [_Inline(item) if flow and type(item) is str else item for item in value]
    return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=flow)


def _flow(dumper: yaml.SafeDumper, value: Flow) -> yaml.MappingNode:
    items = [(key, _Inline(item) if type(item) is str else item) for key, item in value.items()]
    return dumper.represent_mapping("tag:yaml.org,2002:map", items, flow_style=True)


for _dumper in (SpecDumper, PureSpecDumper):
    _dumper.add_representer(str, _text)
    _dumper.add_representer(list, _list)
    _dumper.add_representer(Flow, _flow)
    _dumper.add_representer(_Inline, _inline)
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


DUMP_OPTIONS: dict[str, Any] = {"sort_keys": False, "allow_unicode": True, "width": 118}


def spec_text(task: Task, version: str, spec: dict[str, Any] | None = None) -> str:
    """The spec as YAML with its header; `spec`: build_spec's dict when the caller already has it."""
    pins = ("The hub is read at its commit; `specrun fingerprint SPEC --data-dir DIR --write` pins a local "
            "copy.") if task.type not in (
        "Retrieval", "Reranking", "InstructionRetrieval", "InstructionReranking") else (
        f"Read from a local copy of the dataset repo in <data-dir>/{spec_id(task.name)}/ only; `specrun "
        "fingerprint SPEC --data-dir DIR --write` pins it before a run.")
    header = (f"# MTEB {version} task {task.name} ({task.type}), written by `specrun import mteb` from the "
              f"catalogue's metadata.\n# {pins}\n")
    spec = spec or build_spec(task, version)
    plain = json.dumps(spec, ensure_ascii=False, default=str)
    pure = _ASTRAL.search(plain) and "\x85" not in plain  # (the pure emitter writes NEL raw: read back as a break)
    body = yaml.dump(spec, Dumper=PureSpecDumper if pure else SpecDumper, **DUMP_OPTIONS)
    return header + body


def import_tasks(names: Iterable[str], catalogue: Catalogue | None = None) -> list[Imported]:
    """Every named task as spec text, or one UsageError naming each task refused and why (nothing half done)."""
    catalogue = catalogue or load()
    version = catalogue.provenance.mteb_version
    tasks = [catalogue.task(name) for name in dict.fromkeys(names)]
    refused = [f"{task.name}: {', '.join(reasons)}" for task in tasks if (reasons := refusals(task))]
    if refused:
        raise UsageError(f"cannot import from MTEB {version}: {'; '.join(refused)}; nothing was written")
    imported = [Imported(task.name, spec_id(task.name), spec_text(task, version)) for task in tasks]
    ids: dict[str, str] = {}
    for entry in imported:
        if entry.spec_id in ids:
            raise UsageError(f"tasks {ids[entry.spec_id]} and {entry.task} would both be spec {entry.spec_id!r}; "
                             "import them separately")
        ids[entry.spec_id] = entry.task
    return imported


def coverage(tasks: Iterable[Task]) -> dict[str, dict[str, int]]:
    """Per task type: how many tasks it has, how many import, and how many each missing piece blocks (a task
    missing several counts under each)."""
    found: dict[str, dict[str, int]] = {}
    for task in tasks:
        counts = found.setdefault(task.type, {"tasks": 0, "imports": 0})
        counts["tasks"] += 1
        reasons = refusals(task)
        if not reasons:
            counts["imports"] += 1
        for kind in dict.fromkeys(kind for reason in reasons for kind in _reason_kinds(reason)):
            counts[kind] = counts.get(kind, 0) + 1
    return found


def _reason_kinds(reason: str) -> list[str]:
    """A refusal's kinds, for counts: each overridden method on its own, else the text before its details."""
    if reason.startswith("overrides ") and not reason.startswith("overrides dataset_transform, and"):
        return [f"overrides {hook}" for hook in reason.removeprefix("overrides ").split(" (")[0].split(", ")]
    for prefix, kind in (("task type", "task type not supported"), ("modalities", "modalities other than text"),
                         ("an aggregate", "aggregate task"), ("column_names", "column_names not two texts"),
                         ("overrides dataset_transform, and", "unread dataset_transform"),
                         ("a custom dataset_transform", "custom dataset_transform"),
                         ("a dataset_transform with", "dataset_transform steps"), ("dataset revision", "revision"),
                         ("hf_subset name", "hf_subset names"),
                         ("load_dataset argument", "load_dataset arguments"), ("main score", "main score")):
        if reason.startswith(prefix):
            return [kind]
    return [re.sub(r"^[\d,]+ ", "", reason.split(" (")[0])]
