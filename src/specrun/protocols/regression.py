"""Regression with a fitted probe (MTEB's AbsTaskRegression): a linear regression on embeddings of a fit split
predicts each evaluated item's number; several experiments on subsamples of the fit split if asked."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, FieldText, Item, Outputs, Support
from specrun.search.cosine import check_vectors


class RegressionOptions(KindOptions):
    fit_split: str = Field(min_length=1, description="The split the regression is fitted on (read, not scored).")
    n_samples: int | Literal["all"] = Field(
        "all", description="Fit items per experiment, drawn as `draw` says with seed + experiment; all: the whole "
                           "fit split.")
    n_experiments: int = Field(1, ge=1, le=1000, description="Fits, each on its own subsample.")
    seed: int = Field(42, ge=0, le=2**32 - 1, description="Seeds the subsamples.")
    draw: Literal["uniform", "binned"] = Field(
        "uniform", description="uniform: n_samples items uniformly without replacement (numpy), fitted in item "
                               "order; binned: MTEB's AbsTaskRegression draw, the targets cut into `bins` quantile "
                               "bins (pandas' qcut, duplicate edges dropped) and datasets' train_test_split "
                               "stratified by bin, its test part fitted in its order.")
    bins: int = Field(10, ge=2, le=1000, description="Quantile bins of the binned draw (MTEB: 10).")

    @model_validator(mode="after")
    def _experiments_differ(self) -> RegressionOptions:
        if self.n_samples == "all" and self.n_experiments > 1:
            raise ValueError("n_samples: all fits the same regression in every experiment; set n_experiments: 1")
        if isinstance(self.n_samples, int) and self.n_samples < 2:
            raise ValueError("n_samples must be at least 2, or all")
        return self


def subsamples(targets: np.ndarray, options: RegressionOptions) -> list[np.ndarray]:
    """The fit items of each experiment, in the order they are fitted (every item where n_samples covers them)."""
    n_fit = len(targets)
    if options.n_samples == "all" or options.n_samples >= n_fit:
        return [np.arange(n_fit)] * (1 if options.n_samples == "all" else options.n_experiments)
    if options.draw == "binned":
        key = hashlib.sha256(targets.tobytes()).hexdigest()
        return [_binned(key, targets, options.n_samples, options.seed + run, options.bins)
                for run in range(options.n_experiments)]
    return [np.sort(np.random.default_rng(options.seed + run).choice(n_fit, options.n_samples, replace=False))
            for run in range(options.n_experiments)]


_DRAWS: dict[tuple[str, int, int, int], np.ndarray] = {}  # validation, texts and run draw the same rows


def _binned(key: str, targets: np.ndarray, n: int, seed: int, bins: int) -> np.ndarray:
    if (key, n, seed, bins) not in _DRAWS:
        if len(_DRAWS) > 256:
            _DRAWS.clear()
        _DRAWS[key, n, seed, bins] = binned_draw(targets, n, seed, bins)
    return _DRAWS[key, n, seed, bins]


def binned_draw(targets: np.ndarray, n: int, seed: int, bins: int) -> np.ndarray:
    """The positions MTEB's AbsTaskRegression.stratified_subsampling keeps (n below len(targets)), in its order:
    the same pandas and datasets calls on a Dataset of the bins and the positions, so identical by construction
    (the draw depends on the bins' order and datasets' generator, not on the other columns)."""
    import datasets  # imported here: datasets (and pandas with it) cost seconds at start-up
    import pandas as pd

    binned = pd.qcut(targets.tolist(), q=bins, labels=False, duplicates="drop")
    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # its casts draw bars; a run draws its own
    try:
        dataset = datasets.Dataset.from_dict({"bin": binned.tolist(), "position": list(range(len(targets)))})
        dataset = dataset.cast_column("bin", datasets.ClassLabel(names=np.unique(binned).tolist()))
        kept = dataset.train_test_split(test_size=n, seed=seed, stratify_by_column="bin")["test"]
    except ValueError as exc:  # datasets' refusal, e.g. a bin of one item
        raise DataError(f"binned draw of {n} fit items (seed {seed}): {str(exc).splitlines()[0]}") from None
    finally:
        if not quiet:
            datasets.enable_progress_bars()
    return np.asarray(kept["position"], dtype=np.int64)


class RegressionProtocol(ProtocolKind[RegressionOptions]):
    """scikit-learn's LinearRegression (MTEB's default) fitted on the fit split's embeddings and targets, once per
    experiment; outputs per item its gold number and the prediction of every experiment."""

    info = KindInfo(
        item_fields={"text": "text", "target": "number"},
        outputs=("predicted_value", "gold_value"),
        gold={"gold_value": "target"},
        unit="items",
        prompt_task="Regression",
        split_options=("fit_split",),
        hub_task="text-classification",
    )
    Options = RegressionOptions

    def validate_items(self, items: Sequence[Item], options: RegressionOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        fit = support[options.fit_split]
        targets = np.array([item.fields["target"] for item in fit], dtype=np.float64)
        if np.ptp(targets) == 0:
            raise DataError(f"fit split {options.fit_split!r}: every target is {float(targets[0])!r}; a regression "
                            "fitted on it predicts a constant")
        if isinstance(options.n_samples, int) and options.n_samples >= len(fit) and options.n_experiments > 1:
            raise DataError(f"n_samples {options.n_samples} >= the {len(fit)} items of fit split "
                            f"{options.fit_split!r}: every experiment would fit the same regression; set "
                            "n_samples: all and n_experiments: 1")
        for run, indices in enumerate(subsamples(targets, options)):  # a constant fit is not a metric's fault
            if len(indices) and np.ptp(targets[indices]) == 0:
                raise DataError(f"fit split {options.fit_split!r}: experiment {run}'s {len(indices)} fit items all "
                                f"have target {float(targets[indices][0])!r}, so its regression predicts a constant; "
                                "raise n_samples (or n_samples: all)")

    def texts(self, items: Sequence[Item], options: RegressionOptions,
              support: Support = NO_SUPPORT) -> Iterator[FieldText]:
        fit = support[options.fit_split]
        chosen = subsamples(np.array([item.fields["target"] for item in fit], dtype=np.float64), options)
        used = sorted(set().union(*(set(indices.tolist()) for indices in chosen)))
        for index in used:
            yield "text", fit[index].fields["text"]
        for item in items:
            yield "text", item.fields["text"]

    def run(self, items: Sequence[Item], ctx: RunContext, options: RegressionOptions) -> Outputs:
        from sklearn.linear_model import LinearRegression

        fit = ctx.support[options.fit_split]
        targets = np.array([item.fields["target"] for item in fit], dtype=np.float64)
        chosen = subsamples(targets, options)
        used = sorted(set().union(*(set(c.tolist()) for c in chosen)))
        position = {index: row for row, index in enumerate(used)}
        undefined = "a regression cannot be fitted or applied"
        fit_x = check_vectors(ctx.embed([fit[index].fields["text"] for index in used], "text"), undefined)
        test_x = check_vectors(ctx.embed([item.fields["text"] for item in items], "text"), undefined)
        predicted = np.empty((len(items), len(chosen)))
        for run, indices in enumerate(chosen):
            model = LinearRegression().fit(fit_x[[position[i] for i in indices.tolist()]], targets[indices])
            predicted[:, run] = model.predict(test_x)
        spread = np.ptp(predicted, axis=0) if len(items) > 1 else np.ones(1)
        if np.all(spread <= 1e-12 * np.maximum(1.0, np.abs(predicted).max(axis=0))):
            raise DataError(f"every experiment predicts one value for all {len(items)} items; a constant "
                            "prediction measures nothing (are the vectors all the same?)")
        gold = np.array([item.fields["target"] for item in items], dtype=np.float64)
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"predicted_value": predicted, "gold_value": gold})

    def example(self) -> KindExample:
        words = ["tiny", "a short line", "a sentence of middling size", "this sentence is somewhat longer still",
                 "and this one goes on for quite a while before it finally stops", "ok", "a few words here",
                 "one more sentence that is neither short nor very long"]
        fit = [Item(id=f"f{i}", fields={"text": w, "target": float(len(w.split()))}) for i, w in enumerate(words)]
        test = [Item(id=f"t{i}", fields={"text": t, "target": float(len(t.split()))}) for i, t in enumerate(
            ["short", "a medium sized sentence", "a long sentence that keeps on going and going", "two words"])]
        return KindExample(items=test, options={"fit_split": "train"}, support={"train": fit})


PROTOCOLS.register("regression", RegressionProtocol())
