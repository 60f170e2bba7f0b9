"""The Regression part of `specrun import mteb`: MTEB 2.x's AbsTaskRegression (scikit-learn's LinearRegression
fitted on the train split's embeddings and values, Kendall's tau of its predictions) as a `regression` spec, the
fit split read beside the eval split. MTEB fits each of n_experiments on n_samples rows drawn stratified by binned
value (pandas' qcut into 10 bins, datasets' train_test_split with seed 42 + experiment), which the kind draws with
`draw: binned`; a task whose fit split has no more rows than n_samples fits every experiment on the whole split,
which the kind says as `n_samples: all` (one experiment, the same numbers)."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import TypeImport, abstask_refusal, card_frame, estimator_refusal, renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_classification import fit_split, fit_split_entry
from specrun.mteb.import_sts import hub_source
from specrun.mteb.import_subset import split_stats

REGRESSION_DESCRIPTION = (
    "Each text is embedded on its own with the model's own pooling. A linear regression (scikit-learn's "
    "LinearRegression, MTEB's default) is fitted on the embeddings and values of the whole fit split, which is no "
    "larger than MTEB's n_samples, so each of MTEB's experiments fits this same regression; every evaluated text "
    "gets the value it predicts.")
DRAWN_DESCRIPTION = (
    "Each text is embedded on its own with the model's own pooling. In each of {runs} experiments a linear "
    "regression (scikit-learn's LinearRegression, MTEB's default) is fitted on {n:,} texts of the fit split and "
    "their values, drawn as MTEB draws them: the values cut into 10 quantile bins, a stratified draw by bin "
    "(datasets' train_test_split, seed 42 + experiment); every evaluated text gets the value each experiment's "
    "regression predicts, and each measure is the mean over the experiments.")
MTEB_SEED, MTEB_BINS = 42, 10  # AbsTask.seed; stratified_subsampling's n_bins
# MTEB score key -> (spec metric, label); mae, mse and rmse are lower-is-better errors without a fixed range, which
# an imported metric (higher, a range) does not say, so only the correlation is written
REGRESSION_METRICS = {"kendalltau": ("kendall_tau", "Kendall's τ-b (prediction against gold value)")}
LINEAR = "sklearn.linear_model._base.LinearRegression"
DEFAULT_PARAMS = {"copy_X": True, "fit_intercept": True, "n_jobs": None, "positive": False, "tol": 1e-06}
KNOWN_ATTRIBUTES = {"abstask_prompt", "evaluator", "evaluator_model", "input_column_name", "is_cross_validation",
                    "label_column_name", "n_experiments", "n_samples", "n_splits", "samples_per_label",
                    "train_split", "fast_loading"}


def regression_refusal(task: Task) -> str | None:
    """What MTEB's AbsTaskRegression does beyond the regression kind's fit on the whole fit split."""
    attrs = task.attributes
    reason = abstask_refusal(task, KNOWN_ATTRIBUTES, "AbsTaskRegression") or estimator_refusal(
        attrs, LINEAR, DEFAULT_PARAMS, own=None, noun="regressor", only="LinearRegression",
        kind="the regression kind")
    if reason:
        return reason
    fit = fit_split(task)
    if not fit or fit in task.eval_splits:
        return f"fit split missing or evaluated ({fit!r}; eval splits {', '.join(task.eval_splits)})"
    if not isinstance(attrs.get("input_column_name"), str) or not isinstance(attrs.get("label_column_name"), str):
        return "input or value column is not one column name"
    return _draw_refusal(task, fit)


def _draw_refusal(task: Task, fit: str) -> str | None:
    n_samples, experiments = task.attributes.get("n_samples"), task.attributes.get("n_experiments")
    if not isinstance(n_samples, int) or not isinstance(_fit_rows(task), int) or not isinstance(experiments, int):
        return (f"n_samples {n_samples!r}, n_experiments {experiments!r} or no statistics of fit split {fit!r} "
                "(whether MTEB draws from it cannot be said)")
    return None


def _fit_rows(task: Task) -> int | None:
    return (split_stats(task, str(fit_split(task))) or {}).get("num_samples")


def regression_columns(task: Task) -> dict[str, str]:
    """Item field -> column of the hub data, named as the data names them before a dataset_transform's renames."""
    renamed = renamed_back(task)
    text, value = task.attributes["input_column_name"], task.attributes["label_column_name"]
    return {"text": renamed.get(text, text), "target": renamed.get(value, value)}


def regression_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    return hub_source(task, name, source, regression_columns(task), [*task.eval_splits, str(fit_split(task))])


def regression_protocol(task: Task) -> dict[str, Any]:
    """The whole fit split, once, where MTEB's n_samples covers it (its n_experiments fits are one and the same);
    else MTEB's binned draw of n_samples rows per experiment."""
    entry = {"kind": "regression", "label": "Linear-regression probe", "capability": "embed.text.pooled",
             "description": REGRESSION_DESCRIPTION,
             "options": {"fit_split": fit_split(task), "n_samples": "all", "n_experiments": 1}}
    n_samples, runs = task.attributes["n_samples"], task.attributes["n_experiments"]
    if (_fit_rows(task) or 0) > n_samples:
        entry["description"] = DRAWN_DESCRIPTION.format(runs=runs, n=n_samples)
        entry["options"] |= {"n_samples": n_samples, "n_experiments": runs, "seed": MTEB_SEED, "draw": "binned",
                             "bins": MTEB_BINS}
    return entry


def regression_card(task: Task, version: str) -> dict[str, Any]:
    def count(split: str) -> str:
        value = (split_stats(task, split) or {}).get("num_samples")
        return f"{value:,} texts" if isinstance(value, int) else "count not stated"

    fit = str(fit_split(task))
    frame = card_frame(task, version)
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision}, as MTEB {version} loads "
                f"it for task {task.name}.",
        "items": f"Every text of the evaluated split(s): {', '.join(f'{s} ({count(s)})' for s in task.eval_splits)}; "
                 f"{fit} ({count(fit)}) is only read to fit the regression{_drawn(task)}.",
        "uncertainty": "95 % bootstrap interval over the evaluated texts, 1,000 resamples; the fits are fixed.",
        "caveats": frame["caveats"],
        "examples": {"count": 3, "heading": "Three texts (input: a text; expected output: its value):",
                     "columns": {"id": "item_id", "text": "text", "target": "value"}},
    }


def _drawn(task: Task) -> str:
    n_samples = task.attributes["n_samples"]
    if (_fit_rows(task) or 0) <= n_samples:
        return ""
    return f" ({n_samples:,} of them per experiment, {task.attributes['n_experiments']} experiments)"


REGRESSION_IMPORT = TypeImport(
    type="Regression", protocol="probe", metrics=REGRESSION_METRICS, companions=(), refusal=regression_refusal,
    source=regression_source, protocol_entry=regression_protocol, card=regression_card,
    metric_name=lambda score, metric: metric, score_range=(-1.0, 1.0), extra_splits=fit_split_entry,
    expect_fields={"text": "text_statistics"})

__all__ = ["REGRESSION_DESCRIPTION", "REGRESSION_IMPORT", "REGRESSION_METRICS", "regression_refusal"]
