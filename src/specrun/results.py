"""Results stage: one validated results.json with full provenance, written atomically."""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from specrun.errors import SpecrunError
from specrun.files import write_atomic

__all__ = ["write_atomic"]  # callers import it from here too

RESULTS_FORMAT = "specrun.results/1"
PREDICTIONS_FILE = "predictions.jsonl"
RECORDED_PACKAGES = ("specrun", "numpy", "scipy", "torch", "transformers", "sentence-transformers", "datasets",
                     "tokenizers", "pydantic", "matplotlib")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Score(Frozen):
    value: float
    ci_low: float
    ci_high: float
    n: int = Field(gt=0)


class MetricInfo(Frozen):
    """What a metric id means, so results can be compared and exported without the spec."""

    metric: str
    protocol: str
    protocol_kind: str
    label: str
    direction: Literal["higher", "lower"]


class PredictionsRef(Frozen):
    """The per-unit predictions beside results.json (JSON Lines), pinned by sha256."""

    file: str
    sha256: str
    rows: int


class TextCounts(Frozen):
    total: int = Field(ge=0, description="Texts the protocols asked for, duplicates included.")
    unique: int = Field(ge=0)
    encoded: int = Field(ge=0, description="Texts sent to the model in this run.")


class ModelProvenance(Frozen):
    name: str
    path: str
    origin: Literal["bundled", "local", "hub"]
    revision: str | None
    weights_sha256: str | None
    adapter: str
    pooling: str
    normalize: bool
    max_length: int
    device: str
    dtype: str
    prompt: str | None = None
    prompt_name: str | None = None
    trust_remote_code: bool = False


class SplitProvenance(Frozen):
    source: str
    origin: str
    path: str
    revision: str
    licence: str
    fingerprint: str
    n_source: int
    n_selected: int
    selection: str


class Uncertainty(Frozen):
    method: str
    interval: str
    resamples: int
    confidence: float
    seed: int
    unit: dict[str, str] = Field(description="Protocol -> the unit the bootstrap resamples.")


class Provenance(Frozen):
    spec_path: str
    spec_sha256: str
    specrun_version: str
    created: str
    data: dict[str, SplitProvenance]
    model: ModelProvenance
    uncertainty: Uncertainty
    packages: dict[str, str]
    timings_s: dict[str, float]


class Results(Frozen):
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


def read_results(path: Path) -> Results:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecrunError(f"cannot read results ({exc.strerror})", file=str(path)) from None
    try:
        return Results.model_validate_json(text)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        key = ".".join(str(p) for p in err["loc"])
        raise SpecrunError(f"not a specrun results file: {err['msg']}", file=str(path), key=key or None) from None


Unit = tuple[str, str]  # (split, protocol)


def predictions_jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows)


def read_predictions(results_path: Path, results: Results) -> dict[Unit, tuple[list[str], dict[str, np.ndarray]]]:
    """The per-unit arrays of a run, from the predictions file its results.json pins (sha256 checked)."""
    path = results_path.parent / results.predictions.file
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecrunError(f"cannot read the predictions of {results_path} ({exc.strerror})", file=str(path)) from None
    found = hashlib.sha256(raw).hexdigest()
    if found != results.predictions.sha256:
        raise SpecrunError(f"sha256 {found} differs from the {results.predictions.sha256} that results.json pins",
                           file=str(path))
    grouped: dict[Unit, tuple[list[str], dict[str, list[float]]]] = {}
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        try:
            row = json.loads(line)
            unit = (row.pop("split"), row.pop("protocol"))
            ids, arrays = grouped.setdefault(unit, ([], {}))
            ids.append(row.pop("id"))
            for name, value in row.items():
                arrays.setdefault(name, []).append(float(value))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise SpecrunError("not a predictions row", file=str(path), line=number) from None
    return {unit: (ids, {name: np.asarray(values) for name, values in arrays.items()})
            for unit, (ids, arrays) in grouped.items()}
