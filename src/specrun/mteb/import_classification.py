"""The Classification part of `specrun import mteb`: MTEB 2.x's AbsTaskClassification (a logistic regression
fitted per experiment on `samples_per_label` items per label of the train split, drawn as its `_undersample_data`
draws them with the task seed 42) as a `classification` spec whose fit split is read like the eval split (and,
where MTEB also evaluates it, read twice: once scored, once as the fit split); eval labels the fit never saw are
scored as MTEB scores them (unmatched_labels: score); what the kind does not do (cross-validation, another
classifier or its settings, attributes of a task's own) refused by name."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import TypeImport, abstask_refusal, card_frame, estimator_refusal, renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_sampling import unsaid_steps
from specrun.mteb.import_sts import hub_source
from specrun.mteb.import_subset import split_stats, subset_reading
from specrun.protocols.classification import MTEB_SEED

CLASSIFICATION_DESCRIPTION = (
    "Each text is embedded on its own with the model's own pooling. In each of MTEB's experiments, samples_per_label "
    "fit items per label are drawn as MTEB's AbsTaskClassification undersamples them (seed 42), a logistic "
    "regression (scikit-learn, lbfgs) is fitted on their embeddings and every evaluated text gets the label it "
    "predicts. Scores are means over the experiments, as MTEB reports them.")
# MTEB score key -> (spec metric, label)
CLASSIFICATION_METRICS = {"accuracy": ("accuracy", "Accuracy"), "f1": ("f1_macro", "Macro F1"),
                          "f1_weighted": ("f1_weighted", "Weighted F1"),
                          "precision": ("precision_macro", "Macro precision"),
                          "recall": ("recall_macro", "Macro recall"),
                          "precision_weighted": ("precision_weighted", "Weighted precision"),
                          "recall_weighted": ("recall_weighted", "Weighted recall")}
LOGISTIC = "sklearn.linear_model._logistic.LogisticRegression"
# LogisticRegression's parameters as MTEB 2.x sets them; max_iter is the kind's option, random_state is the seed's
DEFAULT_PARAMS = {"C": 1.0, "class_weight": None, "dual": False, "fit_intercept": True, "intercept_scaling": 1,
                  "l1_ratio": 0.0, "n_jobs": None, "penalty": "deprecated", "random_state": None, "solver": "lbfgs",
                  "tol": 0.0001, "verbose": 0, "warm_start": False}
# the abstask's own class attributes; another (a task's `num_samples`, `max_eval_samples`) is Python of its own
KNOWN_ATTRIBUTES = {"abstask_prompt", "evaluator", "evaluator_model", "input_column_name", "is_cross_validation",
                    "label_column_name", "n_experiments", "n_splits", "samples_per_label", "train_split",
                    "fast_loading"}


def classification_refusal(task: Task) -> str | None:
    """What MTEB's AbsTaskClassification does beyond the classification kind's probe."""
    reason = abstask_refusal(task, KNOWN_ATTRIBUTES, "AbsTaskClassification") or estimator_refusal(
        task.attributes, LOGISTIC, DEFAULT_PARAMS, own="max_iter", noun="classifier", only="logistic regression",
        kind="the classification kind")
    if reason:
        return reason
    steps = unsaid_steps(task)
    if steps:
        return f"a dataset_transform with {', '.join(steps)} (not expressible in a spec yet)"
    return _split_refusal(task)


def _split_refusal(task: Task) -> str | None:
    """The fit split named, its spec name free, and one input and one label column."""
    fit = fit_split(task)
    if not fit:
        return "no fit split"
    if fit_split_name(task) in task.eval_splits:
        return f"fit split {fit!r} is evaluated and {fit_split_name(task)!r} is an eval split too"
    if not isinstance(task.attributes.get("input_column_name"), str) or \
            not isinstance(task.attributes.get("label_column_name"), str):
        return "input or label column is not one column name"
    return None


def fit_split_name(task: Task) -> str:
    """The spec's name of the fit split: its own, or `<name>_fit` where MTEB evaluates it too (a split a protocol
    fits on is never scored, so the evaluated one is read a second time)."""
    fit = str(fit_split(task))
    return f"{fit}_fit" if fit in task.eval_splits else fit


def _labels_differ(task: Task) -> bool:
    """MTEB's statistics show an eval split whose labels are not the fit split's: MTEB scores those items as
    errors and averages over the labels gold or predicted, which the kind's unmatched_labels: score does."""
    fit_labels = _label_counts(task, str(fit_split(task)))
    if fit_labels is None:
        return False
    return any((labels := _label_counts(task, split)) is not None and set(labels) != set(fit_labels)
               for split in task.eval_splits)


def fit_split(task: Task) -> str | None:
    split = task.attributes.get("train_split") or task.fit_split
    return split if isinstance(split, str) else None


def _label_counts(task: Task, split: str) -> dict[str, int] | None:
    labels = ((split_stats(task, split) or {}).get("label_statistics") or {}).get("labels")
    if not isinstance(labels, dict) or not labels:
        return None
    return {str(label): int(value.get("count", 0)) for label, value in labels.items() if isinstance(value, dict)}


def classification_columns(task: Task) -> dict[str, str]:
    """Item field -> column of the hub data, named as the data names them before a dataset_transform's renames."""
    renamed = renamed_back(task)
    text, label = task.attributes["input_column_name"], task.attributes["label_column_name"]
    return {"text": renamed.get(text, text), "label": renamed.get(label, label)}


def classification_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    """The hf_dataset source read for the eval splits and the fit split (as MTEB loads both)."""
    read = list(dict.fromkeys([*task.eval_splits, str(fit_split(task))]))  # the fit split may be evaluated too
    return hub_source(task, name, source, classification_columns(task), read)


def fit_split_entry(task: Task, name: str) -> dict[str, Any]:
    """The fit split's `splits:` entry: read, never scored."""
    fit = str(fit_split(task))
    return {fit_split_name(task): {"source": name, "source_split": fit, **subset_reading(task)[1], "evaluate": False}}


def classification_protocol(task: Task) -> dict[str, Any]:
    """The probe's options: the ones that change numbers are MTEB's class attributes (and its task seed)."""
    attrs = task.attributes
    spl, fit_labels = attrs["samples_per_label"], _label_counts(task, str(fit_split(task))) or {}
    options: dict[str, Any] = {"fit_split": fit_split_name(task), "classifier": "logistic_regression",
                               "samples_per_label": spl, "n_experiments": attrs["n_experiments"], "seed": MTEB_SEED}
    max_iter = (attrs.get("evaluator_model") or {}).get("params", {}).get("max_iter", 100)
    if max_iter != 100:
        options["max_iter"] = max_iter
    if any(count < spl for count in fit_labels.values()):
        # as MTEB fits on the items there are: the kind draws as MTEB's undersampling does (the same seeded
        # permutation), so a split whose every label is short is fitted on in MTEB's row order, experiment by
        # experiment, not approximated by one fit
        options["short_classes"] = "take_what_there_is"
    if _labels_differ(task):
        options["unmatched_labels"] = "score"
    return {"kind": "classification", "label": "Logistic-regression probe", "capability": "embed.text.pooled",
            "description": CLASSIFICATION_DESCRIPTION, "options": options}


def classification_card(task: Task, version: str) -> dict[str, Any]:
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
        "items": f"Every text of the evaluated split(s): {splits}; {fit} ({count(fit)}) is "
                 f"{'also' if fit in task.eval_splits else 'only'} read to fit the probe, "
                 f"{attrs['samples_per_label']} per label in each of {attrs['n_experiments']} experiments.",
        "uncertainty": "95 % two-level bootstrap interval: 1,000 resamples of the evaluated texts, each paired with "
                       "a resample of the experiments.",
        "caveats": frame["caveats"],
        "examples": {"count": 3, "heading": "Three texts (input: a text; expected output: its label):",
                     "columns": {"id": "item_id", "text": "text", "label": "label"}},
    }


CLASSIFICATION_IMPORT = TypeImport(
    type="Classification", protocol="probe", metrics=CLASSIFICATION_METRICS,
    companions=("accuracy", "f1", "f1_weighted"), refusal=classification_refusal, source=classification_source,
    protocol_entry=classification_protocol, card=classification_card, metric_name=lambda score, metric: metric,
    extra_splits=fit_split_entry, expect_fields={"text": "text_statistics"}, label_field="label",
    row_steps=("sampling", "class_encode"))  # each where import_sampling says it (else refused by the refusal)

__all__ = ["CLASSIFICATION_DESCRIPTION", "CLASSIFICATION_IMPORT", "CLASSIFICATION_METRICS", "classification_card",
           "classification_protocol",
           "classification_refusal", "classification_source", "fit_split_entry"]
