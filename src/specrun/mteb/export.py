"""Our results out, as MTEB result files: `<org>__<model>/<revision or no_revision_available>/<TaskName>.json`
with the fields of mteb 2.x's TaskResult (mteb/results/task_result.py: task_name, dataset_revision, mteb_version,
scores.<split> = [{hf_subset, languages, main_score, <score>...}], evaluation_time, kg_co2_emissions, date), so
that mteb's own loader (`TaskResult.from_disk`) reads them and the runs can be submitted to its results
repository. Our interval, n and provenance go into an extra top-level `specrun` block, a key MTEB's model ignores.
Only verified runs are written, and only metrics whose spec names an `mteb` counterpart. Beside the task files,
each folder gets the `model_meta.json` mteb's ResultCache writes there (ModelMeta.to_dict's fields, mteb/models/
model_meta.py), from the model metadata the run recorded (provenance.model_meta): nothing guessed, absent is null."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from specrun import __version__
from specrun.core.errors import PublishedError, PublishError
from specrun.core.files import sha256_file
from specrun.mteb.results.files import NO_REVISION, checked_part, model_folder_name
from specrun.results import Results, refuse_configured, run_identity, run_labels
from specrun.results.identity import identity_notes
from specrun.results.verify import refuse_limited, verified_with_spec

EXPORT_FORMAT = "specrun.mteb-export/1"
# the mteb release whose TaskResult fields these files follow: a 2.x version, so that its loader reads them as
# current files (no conversion meant for files before 1.11 or 1.12.48); the `specrun` block says who made them
MTEB_FIELDS_VERSION = "2.26.24"
EVALUATION_TIME_NOTE = (
    "evaluation_time is null: a run records the time of its whole invocation (data, model load, the encoding "
    "shared by every spec it evaluated), not one task's; each run's timings_s are below")


@dataclass
class _TaskFile:
    task: str
    dataset_revision: str
    entries: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (split, subset) -> entry
    runs: list[dict[str, Any]] = field(default_factory=list)
    date: float | None = None


def mteb_files(paths: list[Path], spec: str | None = None,
               model_name: str | None = None) -> tuple[dict[str, str], list[str]]:
    """The files to write (relative path -> JSON text) and notes; every run verified and checked first. With
    `model_name`, runs of a local model folder (whose path names no model) are written under that name."""
    state = _Export()
    for path in paths:
        verified, loaded = verified_with_spec(path, spec)
        refuse_limited(verified, "export")
        results, model = verified.results, verified.results.provenance.model
        name = _exported_name(results, path, model_name)
        folder = (model_folder_name(name),
                  checked_part(model.revision, "model revision") if model.revision else NO_REVISION)
        _one_configuration(state.identity_of, folder, run_identity(results), path, name)
        if folder not in state.metas:  # one configuration per folder (above): its first run describes the model
            state.metas[folder] = model_meta_json(results, state.notes, name)
        by_task = _run_scores(state, folder, results, loaded.spec, path, name)
        if not by_task:
            state.notes.append(f"{path}: no metric of spec {results.spec_id} that this run scored names an MTEB "
                               "counterpart; nothing exported")
            continue
        refuse_configured(results, path, "export --format mteb", "MTEB's result files")
        other_data = identity_notes(loaded.spec, results)
        if other_data:  # the file would name MTEB's dataset revision for it
            raise PublishError(f"export --format mteb: this run's data is not MTEB's ({other_data[0]}), and MTEB's "
                               "result files name the task's own dataset revision; only a run on MTEB's data goes "
                               "there", file=str(path))
        for task, scores in by_task.items():
            _add_run(state.tasks[(*folder, task)], results, path, scores, name)
    if not state.tasks:
        raise PublishError("no metric of these runs' specs names an MTEB counterpart (`metrics.NAME.mteb`) on a "
                           "split they scored; nothing to export"
                           + (f" ({state.notes[0]})" if state.notes else ""), file=str(paths[0]))
    files = {f"{model}/{revision}/{task}.json": _text(task_file) for (model, revision, task), task_file in
             sorted(state.tasks.items())}
    files.update({f"{model}/{revision}/model_meta.json": state.metas[(model, revision)]
                  for model, revision in sorted({key[:2] for key in state.tasks})})
    return files, state.notes


@dataclass
class _Export:
    """What the runs exported so far have claimed and written: task files, scores, folders' settings, notes."""

    tasks: dict[tuple[str, str, str], _TaskFile] = field(default_factory=dict)
    claimed: dict[tuple[str, ...], Path] = field(default_factory=dict)
    identity_of: dict[tuple[str, str], tuple[Any, Path]] = field(default_factory=dict)
    metas: dict[tuple[str, str], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _exported_name(results: Results, path: Path, model_name: str | None) -> str:
    """The model name the files carry: the run's, or --model-name for a run of a local folder (a hub model's
    run names its model itself, and no other name may be put on its scores)."""
    model = results.provenance.model
    if model_name is None:
        if model.origin == "local":  # its path is no MTEB id: models/my_model would read as an org's model
            raise PublishError(f"this run is of the local model folder {model.name}, whose path names no MTEB model; "
                               "name it with --model-name ORG/NAME", file=str(path))
        try:
            model_folder_name(model.name)
        except PublishedError as exc:
            raise PublishError(f"{exc.message}; name the model with --model-name ORG/NAME", file=str(path)) from None
        return model.name
    if model.origin != "local":
        raise PublishError(f"--model-name {model_name}: this run is of the {model.origin} model {model.name}, which "
                           "names itself; --model-name is for runs of a local model folder", file=str(path))
    org, _, name = model_name.partition("/")
    if "/" in name or not org or not name or "__" in model_name:  # a__b/c would read back as a/b__c
        raise PublishError(f"--model-name {model_name!r}: expected ORG/NAME (no '__'), as MTEB's results name a "
                           "model", file=str(path))
    return model_name


def _run_scores(state: _Export, folder: tuple[str, str], results: Results, spec: Any, path: Path,
                name: str) -> dict[str, list[dict[str, Any]]]:
    """The run's scores with an MTEB counterpart, entered into their task files; per task, what the `specrun`
    block records of them. A counterpart on a split the run did not score (a --splits run) is a note."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for metric_id, split, ref in ((m, split, ref) for m in spec.metrics for split, ref in spec.mteb_cells(m)):
        if metric_id not in results.scores.get(split, {}):
            state.notes.append(f"{path}: {metric_id} is not exported: its MTEB counterpart is on split {split}, "
                               "which this run did not score (--splits)")
            continue
        checked_part(ref.task, "MTEB task")
        where = (*folder, ref.task, ref.split, ref.subset, ref.score)
        if where in state.claimed:
            raise PublishError(f"MTEB {ref.task} {ref.split} {ref.subset} {ref.score} of {name} comes from both "
                               f"{state.claimed[where]} and {path}; export one of them", file=str(path))
        state.claimed[where] = path
        data = results.provenance.data[split]
        task_file = state.tasks.setdefault((*folder, ref.task), _TaskFile(task=ref.task,
                                                                          dataset_revision=data.revision))
        if task_file.dataset_revision != data.revision:
            raise PublishError(f"MTEB {ref.task} of {name}: the runs read data at different revisions "
                               f"({task_file.dataset_revision} and {data.revision}); one file has one "
                               "dataset_revision", file=str(path))
        entry = task_file.entries.setdefault((ref.split, ref.subset), {
            "hf_subset": ref.subset, "languages": [], "main_score": None})
        entry["languages"] = entry["languages"] or list(ref.languages)
        score = results.scores[split][metric_id]
        entry[ref.score] = score.value
        if ref.main:
            entry["main_score"] = score.value
        by_task.setdefault(ref.task, []).append({
            "split": ref.split, "hf_subset": ref.subset, "score": ref.score, "main": ref.main, "metric": metric_id,
            "spec_split": split, "value": score.value, "ci_low": score.ci_low, "ci_high": score.ci_high,
            "interval": score.interval, "n": score.n})
    return by_task


MTEB_LANGUAGE = re.compile(r"^[a-z]{3}-[A-Z][a-z]{3}$")  # ISOLanguageScript: ISO 639-3 and ISO 15924


def model_meta_json(results: Results, notes: list[str], name: str | None = None) -> str:
    """The fields of mteb's ModelMeta.to_dict, each from what the run recorded or null. memory_usage_mb is mteb's
    measure (the weight files' bytes / 2**20, rounded), not our peak memory; languages are written only where the
    card states them as mteb's `eng-Latn` codes (a script is never guessed from `en`)."""
    model, meta = results.provenance.model, results.provenance.model_meta
    name = name or model.name
    recorded = meta.model_dump() if meta is not None else {}
    languages = recorded.get("languages")
    if languages and not all(MTEB_LANGUAGE.match(code) for code in languages):
        notes.append(f"{name}: languages {', '.join(languages)} are not mteb's ISO 639-3-Script codes; "
                     "model_meta.json says null")
        languages = None
    bases = recorded.get("base_model") or []
    weights = recorded.get("weights_bytes")
    document = {
        "loader_kwargs": {}, "name": name, "revision": model.revision, "release_date": None,
        "languages": languages, "n_parameters": recorded.get("n_parameters"),
        "n_active_parameters_override": None, "n_embedding_parameters": None,
        "memory_usage_mb": None if weights is None else float(round(weights / 2**20)),
        "max_tokens": recorded.get("max_tokens"), "embed_dim": recorded.get("embed_dim"),
        "license": recorded.get("license"), "open_weights": True if model.origin == "hub" else None,
        "public_training_code": None, "public_training_data": None,
        "framework": ["Sentence Transformers"] if model.adapter == "sentence-transformers" else [],
        "reference": f"https://huggingface.co/{model.name}" if model.origin == "hub" else None,
        "similarity_fn_name": recorded.get("similarity_fn_name"), "use_instructions": None,
        "training_datasets": recorded.get("training_datasets"),
        "adapted_from": bases[0] if len(bases) == 1 else None, "superseded_by": None, "modalities": ["text"],
        "model_type": ["dense"], "citation": None, "contacts": None, "experiment_kwargs": None,
        "output_dtypes": None, "extra_requirements_groups": None, "loader": None, "is_cross_encoder": False}
    return json.dumps(document, indent=4, ensure_ascii=False, allow_nan=False) + "\n"


def _add_run(task_file: _TaskFile, results: Results, path: Path, scores: list[dict[str, Any]], name: str) -> None:
    """The run's part of the `specrun` block: what made the numbers, its timings, and each score's interval."""
    u, model = results.provenance.uncertainty, results.provenance.model
    created = datetime.fromisoformat(results.provenance.created).timestamp()
    task_file.date = max(task_file.date or created, created)
    task_file.runs.append({
        "spec_id": results.spec_id, "spec_sha256": results.provenance.spec_sha256,
        "results_sha256": sha256_file(path), "specrun_version": results.provenance.specrun_version,
        "model": {"name": model.name, "revision": model.revision, "weights_sha256": model.weights_sha256,
                  **({"exported_as": name} if name != model.name else {})},
        "data": {split: {"path": d.path, "revision": d.revision, "fingerprint": d.fingerprint}
                 for split, d in results.provenance.data.items() if split in results.scores},
        "timings_s": dict(results.provenance.timings_s),
        "confidence": u.confidence, "resamples": u.resamples, "seed": u.seed, "scores": scores})


def _one_configuration(identity_of: dict[tuple[str, str], tuple[Any, Path]], folder: tuple[str, str],
                       ident: tuple[Any, ...], path: Path, model: str) -> None:
    """Runs exported into one model and revision folder share their settings: the layout has room for one."""
    earlier = identity_of.setdefault(folder, (ident, path))
    if earlier[0] != ident:
        labels = run_labels([earlier[0], ident])
        raise PublishError(f"{path} ({labels[1]}) and {earlier[1]} ({labels[0]}) are runs of {model} with "
                           "different settings; MTEB's layout holds one configuration per model and revision: "
                           "export them into different folders", file=str(path))


def _text(task_file: _TaskFile) -> str:
    scores: dict[str, list[dict[str, Any]]] = {}
    for (split, _subset), entry in task_file.entries.items():
        scores.setdefault(split, []).append(entry)
    document = {
        "dataset_revision": task_file.dataset_revision,
        "task_name": task_file.task,
        "mteb_version": MTEB_FIELDS_VERSION,
        "scores": scores,
        "evaluation_time": None,  # not this task's time: EVALUATION_TIME_NOTE
        "kg_co2_emissions": None,
        "date": task_file.date,
        "specrun": {"format": EXPORT_FORMAT, "made_by": f"specrun {__version__}",
                    "note": "made by specrun, not by mteb: mteb_version names the TaskResult fields followed; "
                            "dataset_revision is the revision of the data specrun read; each score's interval is "
                            f"below; {EVALUATION_TIME_NOTE}",
                    "runs": task_file.runs},
    }
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


__all__ = ["EXPORT_FORMAT", "MTEB_FIELDS_VERSION", "model_meta_json", "mteb_files"]
