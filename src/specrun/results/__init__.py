"""Results stage: one validated results.json with full provenance, assembled here (`_build`) from the plan, the
data, the evaluation and the encoder's own description; read back (`_read`: bounded, pinned), verified (`verify`:
every number recomputed from the predictions) and labelled (`_labels`) here, for every later stage."""

from __future__ import annotations

from specrun.results._build import build_results, package_versions, predictions_jsonl, results_json
from specrun.results._labels import (
    IDENTITY_FIELDS,
    confidence_percent,
    configuration,
    configured_note,
    describe_setting,
    refuse_configured,
    run_identity,
    run_labels,
    shown_name,
)
from specrun.results._read import is_plain_file_name, read_predictions, read_results
from specrun.results.model import (
    PREDICTIONS_FILE,
    PREDICTIONS_LIMIT,
    RESULTS_FORMAT,
    RESULTS_LIMIT,
    FieldStatistics,
    MetricInfo,
    ModelMeta,
    ModelProvenance,
    PredictionsRef,
    Provenance,
    RerankerProvenance,
    Results,
    SplitProvenance,
    SplitStatistics,
    Spread,
    TextCounts,
    Uncertainty,
    Unit,
)

__all__ = ["IDENTITY_FIELDS", "PREDICTIONS_FILE", "PREDICTIONS_LIMIT", "RESULTS_FORMAT", "RESULTS_LIMIT",
           "FieldStatistics", "MetricInfo", "ModelMeta", "ModelProvenance", "PredictionsRef", "Provenance",
           "RerankerProvenance", "Results", "SplitProvenance", "SplitStatistics", "Spread", "TextCounts",
           "Uncertainty", "Unit", "build_results", "confidence_percent", "configuration", "configured_note",
           "describe_setting",
           "is_plain_file_name", "package_versions", "predictions_jsonl", "read_predictions", "read_results",
           "refuse_configured", "results_json", "run_identity", "run_labels", "shown_name"]
