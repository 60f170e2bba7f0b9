"""Regression with a fitted probe (MTEB's AbsTaskRegression): a linear regression on embeddings of a fit split
predicts each evaluated item's number; several experiments on subsamples of the fit split if asked."""

from __future__ import annotations

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
        "all", description="Fit items per experiment, drawn uniformly with seed + experiment (MTEB draws 2,048 "
                           "stratified by binned target, which this does not reproduce); all: the whole fit split.")
    n_experiments: int = Field(1, ge=1, le=1000, description="Fits, each on its own subsample.")
    seed: int = Field(42, ge=0, le=2**32 - 1, description="Seeds the subsamples.")

    @model_validator(mode="after")
    def _experiments_differ(self) -> RegressionOptions:
        if self.n_samples == "all" and self.n_experiments > 1:
            raise ValueError("n_samples: all fits the same regression in every experiment; set n_experiments: 1")
        if isinstance(self.n_samples, int) and self.n_samples < 2:
            raise ValueError("n_samples must be at least 2, or all")
        return self


def subsamples(n_fit: int, options: RegressionOptions) -> list[np.ndarray]:
    if options.n_samples == "all" or options.n_samples >= n_fit:
        return [np.arange(n_fit)] * (1 if options.n_samples == "all" else options.n_experiments)
    return [np.sort(np.random.default_rng(options.seed + run).choice(n_fit, options.n_samples, replace=False))
            for run in range(options.n_experiments)]


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
        for run, indices in enumerate(subsamples(len(fit), options)):  # a constant fit is not a metric's fault
            if len(indices) and np.ptp(targets[indices]) == 0:
                raise DataError(f"fit split {options.fit_split!r}: experiment {run}'s {len(indices)} fit items all "
                                f"have target {float(targets[indices][0])!r}, so its regression predicts a constant; "
                                "raise n_samples (or n_samples: all)")

    def texts(self, items: Sequence[Item], options: RegressionOptions,
              support: Support = NO_SUPPORT) -> Iterator[FieldText]:
        fit = support[options.fit_split]
        chosen = subsamples(len(fit), options)
        used = sorted(set().union(*(set(indices.tolist()) for indices in chosen)))
        for index in used:
            yield "text", fit[index].fields["text"]
        for item in items:
            yield "text", item.fields["text"]

    def run(self, items: Sequence[Item], ctx: RunContext, options: RegressionOptions) -> Outputs:
        from sklearn.linear_model import LinearRegression

        fit = ctx.support[options.fit_split]
        targets = np.array([item.fields["target"] for item in fit], dtype=np.float64)
        chosen = subsamples(len(fit), options)
        used = sorted(set().union(*(set(c.tolist()) for c in chosen)))
        position = {index: row for row, index in enumerate(used)}
        undefined = "a regression cannot be fitted or applied"
        fit_x = check_vectors(ctx.embed([fit[index].fields["text"] for index in used], "text"), undefined)
        test_x = check_vectors(ctx.embed([item.fields["text"] for item in items], "text"), undefined)
        predicted = np.empty((len(items), len(chosen)))
        for run, indices in enumerate(chosen):
            model = LinearRegression().fit(fit_x[[position[i] for i in indices.tolist()]], targets[indices])
            predicted[:, run] = model.predict(test_x)
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
