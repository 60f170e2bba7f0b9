"""The MultilabelClassification part of `specrun import mteb`: MTEB 2.x's AbsTaskMultilabelClassification (in each
of n_experiments, fit items drawn while any of their labels has fewer than samples_per_label, by one numpy
Generator seeded 42; a KNeighborsClassifier on the label sets binarised over the evaluated split's labels) as a
`multilabel_classification` spec, the fit split read beside the eval split. What the kind cannot say is refused by
name: another classifier or settings, cross-validation, an evaluated split MTEB cuts to max_eval_samples by
iterative stratification, and a draw that depends on other subsets or splits (MTEB's Generator is seeded once per
task and runs on across every subset and split it evaluates; the kind seeds it afresh for each)."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import TypeImport, abstask_refusal, card_frame, estimator_refusal, renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_classification import fit_split, fit_split_entry
from specrun.mteb.import_sts import hub_source
from specrun.mteb.import_subset import split_stats
from specrun.protocols.multilabel_classification import MAX_LABELS, MTEB_SEED

MULTILABEL_DESCRIPTION = (
    "Each text is embedded on its own with the model's own pooling. In each of MTEB's experiments the fit items are "
    "drawn as MTEB's AbsTaskMultilabelClassification undersamples them (one Generator seeded 42: an item is taken "
    "while any of its labels has fewer than samples_per_label), a k-nearest-neighbour classifier (scikit-learn, "
    "Euclidean) is fitted on their embeddings and label sets, and every evaluated text gets the label set it "
    "predicts. Scores are means over the experiments, as MTEB reports them.")
# MTEB score key -> (spec metric, label)
MULTILABEL_METRICS = {"accuracy": ("multilabel_accuracy", "Subset accuracy (exact label set)"),
                      "f1": ("multilabel_f1_macro", "Macro F1 over labels"),
                      "lrap": ("lrap", "Label ranking average precision"),
                      "hamming": ("hamming", "Hamming score")}
KNN = "sklearn.neighbors._classification.KNeighborsClassifier"
# KNeighborsClassifier's parameters as MTEB 2.x sets them; n_neighbors is the kind's `k`
DEFAULT_PARAMS = {"algorithm": "auto", "leaf_size": 30, "metric": "minkowski", "metric_params": None,
                  "n_jobs": None, "p": 2, "weights": "uniform"}
KNOWN_ATTRIBUTES = {"abstask_prompt", "evaluator", "evaluator_model", "input_column_name", "is_cross_validation",
                    "label_column_name", "max_eval_samples", "n_experiments", "n_splits", "samples_per_label",
                    "train_split", "fast_loading"}


def multilabel_refusal(task: Task) -> str | None:
    """What MTEB's AbsTaskMultilabelClassification does beyond the multilabel_classification kind's probe."""
    return abstask_refusal(task, KNOWN_ATTRIBUTES, "AbsTaskMultilabelClassification") or estimator_refusal(
        task.attributes, KNN, DEFAULT_PARAMS, own="n_neighbors", noun="classifier", only="KNeighborsClassifier",
        kind="the kind") or _draw_refusal(task) or _split_refusal(task)


def _draw_refusal(task: Task) -> str | None:
    """MTEB's undersampling Generator is the task's, seeded once: only the first subset and split it evaluates
    draws from seed 42; each later one draws from where the one before left it."""
    if len(task.hf_subsets) > 1:
        return (f"{len(task.hf_subsets)} hf_subsets drawn from one Generator (MTEB seeds it once per task: each "
                "subset's fit draw follows from the subsets before it; the kind seeds each afresh)")
    if len(task.eval_splits) > 1:
        return (f"{len(task.eval_splits)} eval splits drawn from one Generator (MTEB seeds it once per task: the "
                "second split's fit draw follows from the first's; the kind seeds each afresh)")
    return None


def _split_refusal(task: Task) -> str | None:
    fit = fit_split(task)
    if not fit or fit in task.eval_splits:
        return f"fit split missing or evaluated ({fit!r}; eval splits {', '.join(task.eval_splits)})"
    if not isinstance(task.attributes.get("input_column_name"), str) or \
            not isinstance(task.attributes.get("label_column_name"), str):
        return "input or label column is not one column name"
    (split,) = task.eval_splits
    stats = split_stats(task, split) or {}
    cut = task.attributes.get("max_eval_samples")
    rows = stats.get("num_samples")
    if cut is not None and not isinstance(rows, int):
        return (f"max_eval_samples {cut} and no statistics of eval split {split!r} (MTEB cuts a larger split by "
                "iterative stratification, which the kind does not)")
    if cut is not None and rows > cut:
        return (f"max_eval_samples {cut} < the {rows:,} rows of eval split {split!r} (MTEB cuts it by iterative "
                "stratification over the labels, which the kind does not)")
    labels = (stats.get("label_statistics") or {}).get("labels") or {}
    named = [label for label in labels if label != "None"]  # MTEB counts items without a label as 'None'
    if len(named) > MAX_LABELS:
        return f"{len(named)} labels in eval split {split!r} (the kind handles up to {MAX_LABELS})"
    return None


def multilabel_columns(task: Task) -> dict[str, str]:
    """Item field -> column of the hub data, named as the data names them before a dataset_transform's renames."""
    renamed = renamed_back(task)
    text, labels = task.attributes["input_column_name"], task.attributes["label_column_name"]
    return {"text": renamed.get(text, text), "labels": renamed.get(labels, labels)}


def multilabel_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    """The hf_dataset source read for the eval split and the fit split (as MTEB loads both)."""
    return hub_source(task, name, source, multilabel_columns(task), [*task.eval_splits, str(fit_split(task))])


def multilabel_protocol(task: Task) -> dict[str, Any]:
    """The probe's options, each MTEB's class attribute (k its classifier's n_neighbors) or its task seed."""
    attrs = task.attributes
    k = (attrs.get("evaluator_model") or {}).get("params", {}).get("n_neighbors", 5)
    options = {"fit_split": fit_split(task), "samples_per_label": attrs["samples_per_label"],
               "n_experiments": attrs["n_experiments"], "k": k, "seed": MTEB_SEED}
    return {"kind": "multilabel_classification", "label": "k-nearest-neighbour probe",
            "capability": "embed.text.pooled", "description": MULTILABEL_DESCRIPTION, "options": options}


def multilabel_card(task: Task, version: str) -> dict[str, Any]:
    def count(split: str) -> str:
        value = (split_stats(task, split) or {}).get("num_samples")
        return f"{value:,} texts" if isinstance(value, int) else "count not stated"

    attrs, fit = task.attributes, str(fit_split(task))
    splits = ", ".join(f"{split} ({count(split)})" for split in task.eval_splits)
    frame = card_frame(task, version)
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision}, as MTEB {version} loads "
                f"it for task {task.name}.",
        "items": f"Every text of the evaluated split: {splits}; {fit} ({count(fit)}) is only read to fit the "
                 f"probe, about {attrs['samples_per_label']} per label in each of {attrs['n_experiments']} "
                 "experiments.",
        "uncertainty": "95 % two-level bootstrap interval: 1,000 resamples of the evaluated texts, each paired with "
                       "a resample of the experiments.",
        "caveats": frame["caveats"],
        "examples": {"count": 3, "heading": "Three texts (input: a text; expected output: its set of labels):",
                     "columns": {"id": "item_id", "text": "text", "labels": "labels"}},
    }


MULTILABEL_IMPORT = TypeImport(
    type="MultilabelClassification", protocol="probe", metrics=MULTILABEL_METRICS,
    companions=("accuracy", "f1", "lrap", "hamming"), refusal=multilabel_refusal, source=multilabel_source,
    protocol_entry=multilabel_protocol, card=multilabel_card, metric_name=lambda score, metric: metric,
    extra_splits=fit_split_entry, expect_fields={"text": "text_statistics"})

__all__ = ["MULTILABEL_DESCRIPTION", "MULTILABEL_IMPORT", "MULTILABEL_METRICS", "multilabel_refusal"]
