"""results.json assembled from the plan, the data, the evaluation and the encoder's own description, with the
predictions file it pins."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from datetime import datetime, timezone
from importlib import metadata

import numpy as np

from specrun import __version__
from specrun.core.types import Score
from specrun.data import SplitData
from specrun.evaluation import ProtocolRun
from specrun.plan import Plan
from specrun.results.model import (
    PREDICTIONS_FILE,
    RECORDED_PACKAGES,
    CardExample,
    MetricInfo,
    ModelMeta,
    ModelProvenance,
    PredictionsRef,
    Provenance,
    Results,
    SimilarityUsed,
    SplitProvenance,
    TextCounts,
    Uncertainty,
)
from specrun.results.statistics import split_statistics


def build_results(plan: Plan, splits: dict[str, SplitData], runs: list[ProtocolRun], model: ModelProvenance,
                  texts: TextCounts, plots: dict[str, str], versions: dict[str, str],
                  timings: dict[str, float], model_meta: ModelMeta | None = None) -> tuple[Results, str]:
    """results.json's model and the predictions file it pins (one row per evaluated unit)."""
    spec = plan.spec  # its id, title and licence; everything read is in the plan
    rows: list[dict[str, object]] = []
    scores: dict[str, dict[str, Score]] = {split.name: {} for split in plan.splits}
    for run in runs:
        scores[run.split].update(run.scores)
        for index, unit_id in enumerate(run.outputs.ids):
            rows.append({"split": run.split, "protocol": run.protocol, "id": unit_id,
                         **{name: _cell(values[index]) for name, values in run.outputs.arrays.items()}})
    predictions = predictions_jsonl(rows)
    data = _data_provenance(plan, splits)
    u = plan.uncertainty
    provenance = Provenance(
        spec_path=plan.loaded.display, spec_sha256=plan.loaded.sha256, subset=plan.loaded.subset,
        splits=list(plan.chosen) if plan.chosen is not None else None, limit=plan.limit,
        specrun_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"), data=data, model=model,
        model_meta=model_meta,
        uncertainty=Uncertainty(method=u.method, interval=u.interval, resamples=u.resamples,
                                confidence=u.confidence, seed=plan.seed,
                                unit={p.name: p.entry.info.unit for p in plan.protocols}),
        similarity={p.name: SimilarityUsed(requested=p.similarity, function=next(
            (run.similarity for run in runs if run.protocol == p.name), p.similarity)) for p in plan.protocols},
        packages=versions, timings_s={k: round(v, 3) for k, v in timings.items()})
    metrics = _metric_infos(plan)
    results = Results(spec_id=spec.id, title=spec.title, licence=spec.licence.data,
                      publication=spec.licence.publication, scores=scores, metrics=metrics, texts=texts,
                      predictions=PredictionsRef(file=PREDICTIONS_FILE, sha256=hashlib.sha256(
                          predictions.encode("utf-8")).hexdigest(), rows=len(rows)),
                      plots=plots, provenance=provenance, statistics=split_statistics(plan, splits),
                      card_examples=card_examples(plan, splits))
    return results, predictions


def _data_provenance(plan: Plan, splits: dict[str, SplitData]) -> dict[str, SplitProvenance]:
    """Per split read, where its data came from (the source as declared, its files) and what of it was used."""
    return {
        name: SplitProvenance(
            source=split.source, origin=split.origin, path=plan.sources[split.source].declared.path,
            revision=plan.sources[split.source].declared.revision,
            licence=plan.sources[split.source].declared.licence, fingerprint=split.fingerprint,
            n_source=split.n_source, n_selected=len(split.items), selection=str(plan.split(name).selection),
            files=split.files)
        for name, split in splits.items()
    }


def _metric_infos(plan: Plan) -> dict[str, MetricInfo]:
    """Each metric id's metric and protocol as the spec declares them, in the spec's order."""
    metrics = {m.id: MetricInfo(metric=m.metric, protocol=p.name, protocol_kind=p.kind, label=m.label,
                                direction=m.direction, range=m.range)
               for p in plan.protocols for m in p.metrics}
    metrics = {name: metrics[name] for name in plan.metric_ids}  # in the spec's order
    return metrics


def card_examples(plan: Plan, splits: dict[str, SplitData]) -> list[CardExample] | None:
    """The first evaluated split's rows the card quotes (as `data.example_items` gives them to the report)."""
    card = plan.spec.card
    if card is None or not card.examples.count or not splits:
        return None
    shown = [name for name in card.examples.columns if name != "id"]
    return [CardExample(id=item.id, fields={name: item.fields[name] for name in shown})
            for item in next(iter(splits.values())).items[:card.examples.count]]


def package_versions() -> dict[str, str]:
    """The installed version of each recorded package. A package this process has imported is read once (each
    lookup scans the installed distributions): upgraded while the process runs, it is still the version that was
    imported. One not imported yet is read each time, as the version a later import would load."""
    versions = {}
    for name in RECORDED_PACKAGES:
        try:
            versions[name] = version_of(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def version_of(name: str) -> str:
    """The installed version of a package (package_versions' rule: an imported one is read once)."""
    return _imported_version(name) if name.replace("-", "_") in sys.modules else _installed_version(name)


@functools.cache
def _imported_version(name: str) -> str:
    return _installed_version(name)


def _installed_version(name: str) -> str:
    """metadata.version(name), read from the metadata file's header block alone: `version` parses the whole file
    with the email parser, long description included (12 ms for the seven recorded packages a hashing run has not
    imported, against 1.4 ms; the same strings, checked in a test)."""
    found = metadata.distribution(name)
    text = found.read_text("METADATA") or found.read_text("PKG-INFO") or ""
    header = re.search(r"^Version:[ \t]*(\S.*?)\s*$", text.split("\n\n", 1)[0], re.MULTILINE)
    return header.group(1) if header else metadata.version(name)


def results_json(results: Results) -> str:
    return results.model_dump_json(indent=2) + "\n"


def _cell(value: np.ndarray) -> float | list[float]:
    """A unit's value of an output array: a number, or one number per run for a (units, runs) array."""
    return float(value) if np.ndim(value) == 0 else [float(v) for v in value]


def predictions_jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows)
