"""Results stage: one validated results.json with full provenance, assembled here (`build_results`) from the
plan, the data, the evaluation and the encoder's own description, and read back here (bounded, verified)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from decimal import Decimal
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, ValidationError

from specrun import __version__
from specrun.core.errors import SpecrunError, printable
from specrun.core.files import read_regular_file, write_atomic
from specrun.core.settings import AppliedPrompt, EncoderSettings
from specrun.core.types import Score, Strict
from specrun.data import SplitData
from specrun.evaluation import ProtocolRun
from specrun.plan import Plan

__all__ = ["write_atomic"]  # callers import it from here too

RESULTS_FORMAT = "specrun.results/1"
PREDICTIONS_FILE = "predictions.jsonl"
RESULTS_LIMIT = 16 << 20  # bytes: a results.json is a few kB; anything near this is not one
PREDICTIONS_LIMIT = 1 << 30  # bytes: about ten million units of predictions
RECORDED_PACKAGES = ("specrun", "numpy", "scipy", "torch", "transformers", "sentence-transformers", "datasets",
                     "tokenizers", "pydantic", "matplotlib")


class MetricInfo(Strict):
    """What a metric id means, so results can be compared and exported without the spec."""

    metric: str
    protocol: str
    protocol_kind: str
    label: str
    direction: Literal["higher", "lower"]


class PredictionsRef(Strict):
    """The per-unit predictions beside results.json (JSON Lines), pinned by sha256."""

    file: str
    sha256: str
    rows: int


class TextCounts(Strict):
    total: int = Field(ge=0, description="Texts the protocols asked for, duplicates included.")
    unique: int = Field(ge=0)
    encoded: int = Field(ge=0, description="Texts sent to the model in this run.")


class ModelProvenance(EncoderSettings):
    """The encoder's own description, validated as it goes into results.json: the model (encoders.ModelRef), every
    setting as the adapter applied it (EncoderSettings, inherited: a new setting is recorded without an edit here)
    and what follows from the model (encoders.EncoderInfo); a test keeps them in step."""

    name: str
    path: str
    origin: Literal["bundled", "local", "hub"]
    revision: str | None
    weights_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="A content digest of the weights, always.")
    pooling: str
    normalize: bool
    device: str
    prompts: tuple[AppliedPrompt, ...] = Field((), description=(
        "The prompt each view of the spec's texts got (role, task type, instruction): its text, and where it came "
        "from (a flag, the instruction template, the model's config, the model's default prompt, none)."))


class SplitProvenance(Strict):
    source: str
    origin: str
    path: str
    revision: str
    licence: str
    fingerprint: str
    n_source: int
    n_selected: int
    selection: str
    files: dict[str, str] = Field(default_factory=dict,
                                  description="File inside its source -> sha256 of the bytes read (no local path).")


class Uncertainty(Strict):
    method: str
    interval: str
    resamples: int
    confidence: float
    seed: int
    unit: dict[str, str] = Field(description="Protocol -> the unit the bootstrap resamples.")


class Provenance(Strict):
    spec_path: str
    spec_sha256: str
    specrun_version: str
    created: str
    data: dict[str, SplitProvenance]
    model: ModelProvenance
    uncertainty: Uncertainty
    packages: dict[str, str]
    timings_s: dict[str, float]


class Results(Strict):
    format: Literal["specrun.results/1"] = RESULTS_FORMAT
    spec_id: str
    title: str
    licence: str
    publication: Literal["confirmed", "unconfirmed"]
    scores: dict[str, dict[str, Score]] = Field(description="split -> metric id -> score")
    metrics: dict[str, MetricInfo]
    texts: TextCounts
    predictions: PredictionsRef
    plots: dict[str, str] = Field(default_factory=dict, description="split/protocol -> PNG file beside the report")
    provenance: Provenance


def build_results(plan: Plan, splits: dict[str, SplitData], runs: list[ProtocolRun], model: ModelProvenance,
                  texts: TextCounts, plots: dict[str, str], versions: dict[str, str],
                  timings: dict[str, float]) -> tuple[Results, str]:
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
    data = {
        name: SplitProvenance(
            source=split.source, origin=split.origin, path=plan.sources[split.source].declared.path,
            revision=plan.sources[split.source].declared.revision,
            licence=plan.sources[split.source].declared.licence, fingerprint=split.fingerprint,
            n_source=split.n_source, n_selected=len(split.items), selection=str(plan.split(name).selection),
            files=split.files)
        for name, split in splits.items()
    }
    u = plan.uncertainty
    provenance = Provenance(
        spec_path=plan.loaded.display, spec_sha256=plan.loaded.sha256, specrun_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"), data=data, model=model,
        uncertainty=Uncertainty(method=u.method, interval=u.interval, resamples=u.resamples,
                                confidence=u.confidence, seed=plan.seed,
                                unit={p.name: p.entry.unit for p in plan.protocols}),
        packages=versions, timings_s={k: round(v, 3) for k, v in timings.items()})
    metrics = {m.id: MetricInfo(metric=m.metric, protocol=p.name, protocol_kind=p.kind, label=m.label,
                                direction=m.direction)
               for p in plan.protocols for m in p.metrics}
    metrics = {name: metrics[name] for name in plan.metric_ids}  # in the spec's order
    results = Results(spec_id=spec.id, title=spec.title, licence=spec.licence.data,
                      publication=spec.licence.publication, scores=scores, metrics=metrics, texts=texts,
                      predictions=PredictionsRef(file=PREDICTIONS_FILE, sha256=hashlib.sha256(
                          predictions.encode("utf-8")).hexdigest(), rows=len(rows)),
                      plots=plots, provenance=provenance)
    return results, predictions


def package_versions() -> dict[str, str]:
    versions = {}
    for name in RECORDED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def results_json(results: Results) -> str:
    return results.model_dump_json(indent=2) + "\n"


def confidence_percent(confidence: float) -> str:
    """The interval's level as written, e.g. '95%' or '99.99999999%': rounding would misstate it ('100%')."""
    text = format(Decimal(repr(float(confidence))).scaleb(2).normalize(), "f")
    return f"{text}%"


def read_results(path: Path) -> Results:
    """results.json parsed and schema-checked (bounded read); its consistency is checked by specrun.verify."""
    raw = read_regular_file(path, RESULTS_LIMIT, "the results file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecrunError("not a specrun results file: not UTF-8", file=str(path)) from None
    try:
        return Results.model_validate_json(text)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        key = ".".join(str(p) for p in err["loc"])
        raise SpecrunError(f"not a specrun results file: {err['msg']}", file=str(path), key=key or None) from None


def is_plain_file_name(name: str) -> bool:
    """A name that can only mean a file beside results.json: no folder part, no '..', not absolute."""
    return (bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name
            and ":" not in name and name == name.strip() and len(name) <= 255)


Unit = tuple[str, str]  # (split, protocol)


def _cell(value: np.ndarray) -> float | list[float]:
    """A unit's value of an output array: a number, or one number per run for a (units, runs) array."""
    return float(value) if np.ndim(value) == 0 else [float(v) for v in value]


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError
    return float(value)


def predictions_jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows)


def read_predictions(results_path: Path, results: Results) -> dict[Unit, tuple[list[str], dict[str, np.ndarray]]]:
    """The per-unit arrays of a run, from the predictions file its results.json pins (a plain file name beside it,
    a bounded read, sha256 and row count checked)."""
    name = results.predictions.file
    if not is_plain_file_name(name):
        raise SpecrunError(f"predictions file {name!r} must be a plain file name beside results.json",
                           file=str(results_path), key="predictions.file")
    path = results_path.parent / name
    raw = read_regular_file(path, PREDICTIONS_LIMIT, "the predictions file")
    found = hashlib.sha256(raw).hexdigest()
    if found != results.predictions.sha256:
        raise SpecrunError(f"sha256 {found} differs from the {results.predictions.sha256} that results.json pins",
                           file=str(path))
    grouped: dict[Unit, tuple[list[str], dict[str, list[Any]]]] = {}
    lines = raw.decode("utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line)
            unit = (row.pop("split"), row.pop("protocol"))
            unit_id = row.pop("id")
            if not all(isinstance(part, str) for part in (*unit, unit_id)):
                raise TypeError
            ids, arrays = grouped.setdefault(unit, ([], {}))
            ids.append(unit_id)
            for key, value in row.items():  # a number, or a list of one number per run
                cell = [_number(v) for v in value] if isinstance(value, list) and value else _number(value)
                arrays.setdefault(key, []).append(cell)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise SpecrunError("not a predictions row", file=str(path), line=number) from None
    if len(lines) != results.predictions.rows:
        raise SpecrunError(f"{len(lines)} rows, not the {results.predictions.rows} that results.json records",
                           file=str(path))
    for (split, protocol), (ids, arrays) in grouped.items():
        short = [key for key, values in arrays.items() if len(values) != len(ids)]
        if short:
            raise SpecrunError(f"split {split}, protocol {protocol}: column {short[0]} is missing from some rows",
                               file=str(path))
        ragged = [key for key, values in arrays.items() if len({len(v) if isinstance(v, list) else -1
                                                                for v in values}) > 1]
        if ragged:
            raise SpecrunError(f"split {split}, protocol {protocol}: column {ragged[0]} holds a different number "
                               "of runs in some rows", file=str(path))
    return {unit: (ids, {key: np.asarray(values) for key, values in arrays.items()})
            for unit, (ids, arrays) in grouped.items()}


# what can tell two runs of one model name apart: the user's settings first, then what follows from the model
IDENTITY_FIELDS = (*EncoderSettings.identity_fields(), "pooling", "normalize", "revision", "weights_sha256",
                   "device")  # not the applied prompts: they name the spec's task types, so differ between specs
SHOWN_WHEN_DIFFERENT = len(EncoderSettings.identity_fields())  # the user's own settings: named whenever they differ


def run_identity(results: Results) -> tuple[Any, ...]:
    m = results.provenance.model
    return (m.name, *(getattr(m, field) for field in IDENTITY_FIELDS))


def describe_setting(field: str, value: Any) -> str:
    if field in ("prompt", "prompt_name", "query_prompt", "document_prompt", "instruction_template"):
        name = field.replace("_", " ")
        return f"{name} {json.dumps(value, ensure_ascii=False)}" if value else f"no {name}"
    if field == "model_prompts":
        return "model prompts" if value else "no model prompts"
    if field in ("weights_sha256", "revision"):
        return f"{field.split('_')[0]} {str(value)[:10]}"
    return f"{field.replace('_', ' ')} {value}" if value is not None else f"no {field.replace('_', ' ')}"


def run_labels(identities: Sequence[tuple[Any, ...]]) -> list[str]:
    """What `compare` and `leaderboard` call each run: the model name, plus, when a name has several
    configurations, every field (in IDENTITY_FIELDS order: adapter, prompt, max length, pooling, ...) on which
    they differ: a label that hid a truncation behind the adapter would credit the adapter with what the
    truncation did."""
    chosen: dict[str, list[int]] = {}
    for name in dict.fromkeys(ident[0] for ident in identities):
        group = list(dict.fromkeys(ident for ident in identities if ident[0] == name))
        # what a user set (adapter, prompt, max length) is shown whenever it differs; what follows from it
        # (pooling, normalisation, ...) only when still needed to tell runs apart
        fields = [i for i in range(1, SHOWN_WHEN_DIFFERENT + 1) if len({g[i] for g in group}) > 1]
        for i in range(SHOWN_WHEN_DIFFERENT + 1, len(IDENTITY_FIELDS) + 1):
            if len({tuple(g[f] for f in fields) for g in group}) == len(group):
                break
            if len({g[i] for g in group}) > 1:
                fields.append(i)
        chosen[name] = fields
    out = []
    for ident in identities:
        parts = [describe_setting(IDENTITY_FIELDS[i - 1], ident[i]) for i in chosen[ident[0]]]
        out.append(printable(shown_name(ident[0]) + (f" ({', '.join(parts)})" if parts else "")))
    # a name that reads like another configuration's label is quoted above; any label still shared by two
    # configurations is told apart by the weights digest and, failing that, a number
    for label in {label for label in out if out.count(label) > 1}:
        rows = [i for i, other in enumerate(out) if other == label]
        digests = {identities[i][IDENTITY_FIELDS.index("weights_sha256") + 1] for i in rows}
        for number, i in enumerate(rows, start=1):
            ident = identities[i]
            out[i] = f"{label} [weights {str(ident[IDENTITY_FIELDS.index('weights_sha256') + 1])[:10]}]" \
                if len(digests) == len(rows) else f"{label} [#{number}]"
    return out


def shown_name(name: str) -> str:
    """A model's name as a label shows it: quoted when it holds what a label's settings part looks like
    (parentheses, brackets) or starts or ends with white space, so no folder name passes for a setting."""
    if any(ch in name for ch in "()[]") or name != name.strip():
        return json.dumps(name, ensure_ascii=False)
    return name
