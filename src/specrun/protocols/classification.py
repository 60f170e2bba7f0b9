"""Classification with a fitted probe: embeddings of a fit split train a classifier (scikit-learn's logistic
regression as MTEB, or cosine k-nearest neighbours as JMTEB), the evaluated split is predicted; several experiments,
each on its own undersample of the fit split, as MTEB's AbsTaskClassification runs them."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, FieldText, Item, Outputs, Support
from specrun.protocols.labels import label_numbers, shown, sorted_labels
from specrun.search.cosine import check_vectors

MTEB_SEED = 42  # MTEB's task seed: its undersampling and the classifier's random_state


class ClassificationOptions(KindOptions):
    fit_split: str = Field(min_length=1, description="The split the classifier is fitted on (read, not scored).")
    classifier: Literal["logistic_regression", "knn"] = Field(
        "logistic_regression", description="logistic_regression: scikit-learn's LogisticRegression (lbfgs) as "
                                           "MTEB; knn: k nearest fit items by cosine, majority vote, as JMTEB.")
    max_iter: int = Field(100, ge=1, description="logistic_regression: iterations (MTEB: 100).")
    k: int = Field(5, ge=1, description="knn: neighbours that vote.")
    samples_per_label: int | Literal["all"] = Field(
        8, description="Fit items per label in each experiment, drawn as MTEB undersamples (MTEB: 8); all: "
                       "the whole fit split.")
    n_experiments: int = Field(10, ge=1, le=1000, description="Fits, each on its own undersample (MTEB: 10).")
    seed: int = Field(MTEB_SEED, ge=0, le=2**32 - 1, description="Seeds the undersampling and the classifier.")
    short_classes: Literal["error", "take_what_there_is"] = Field(
        "error", description="A label with fewer fit items than samples_per_label: an error, or (as MTEB does) "
                             "fit on the items there are.")
    unmatched_labels: Literal["error", "score"] = Field(
        "error", description="A label of the evaluated split that the fit split lacks, or the reverse: an error, "
                             "or (as MTEB) scored: an item whose label the fit never saw counts as wrong, and the "
                             "averages run over the labels gold or predicted, as scikit-learn's.")

    @model_validator(mode="after")
    def _experiments_differ(self) -> ClassificationOptions:
        if self.samples_per_label == "all" and self.n_experiments > 1:
            raise ValueError("samples_per_label: all fits the same classifier in every experiment; "
                             "set n_experiments: 1")
        if isinstance(self.samples_per_label, int) and self.samples_per_label < 1:
            raise ValueError("samples_per_label must be at least 1, or all")
        return self


def undersamples(labels: Sequence[Any], options: ClassificationOptions) -> list[list[int]]:
    """The fit items of each experiment, as MTEB's `_undersample_data`: one index list shuffled again in every
    experiment by a fresh RandomState(seed) (the shuffles compound), and the first `samples_per_label` items of
    each label in that order."""
    if options.samples_per_label == "all":
        return [list(range(len(labels)))]
    order = list(range(len(labels)))
    chosen = []
    for _ in range(options.n_experiments):
        np.random.RandomState(options.seed).shuffle(order)
        taken: Counter[Any] = Counter()
        picked = []
        for index in order:
            if taken[labels[index]] < options.samples_per_label:
                picked.append(index)
                taken[labels[index]] += 1
        chosen.append(picked)
    return chosen


def _classifier(options: ClassificationOptions) -> Any:
    if options.classifier == "knn":
        from sklearn.neighbors import KNeighborsClassifier

        return KNeighborsClassifier(n_neighbors=options.k, metric="cosine", algorithm="brute")
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=options.max_iter, random_state=options.seed)


class ClassificationProtocol(ProtocolKind[ClassificationOptions]):
    """A probe on frozen embeddings: fitted on the fit split (per experiment, an undersample of it), it predicts
    each evaluated item's label. Outputs per item: the gold label and the predicted label of every experiment
    (labels numbered in sorted order); metrics average over experiments, as MTEB reports."""

    info = KindInfo(
        item_fields={"text": "text", "label": "label"},
        outputs=("predicted_class", "gold_class"),
        unit="items",
        prompt_task="Classification",
        split_options=("fit_split",),
        hub_task="text-classification",
        hub_task_id="multi-class-classification",
    )
    Options = ClassificationOptions

    def _fit_items(self, options: ClassificationOptions, support: Support) -> list[Item]:
        return list(support[options.fit_split])

    @staticmethod
    def _classes(fit: Sequence[Item], options: ClassificationOptions, items: Sequence[Item] = ()) -> list[Any]:
        """The labels of the fit split and the evaluated items in order (the same labels unless unmatched_labels
        is score); texts and numbers mixed are refused."""
        return sorted_labels({item.fields["label"] for item in (*fit, *items)}, f"fit split {options.fit_split!r}")

    def validate_items(self, items: Sequence[Item], options: ClassificationOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        fit = self._fit_items(options, support)
        fit_labels = {item.fields["label"] for item in fit}
        labels = {item.fields["label"] for item in items}
        where = f"fit split {options.fit_split!r}"
        if len(fit_labels) < 2:
            raise DataError(f"{where} has a single label ({shown(fit_labels)}); a classifier needs two or more")
        if labels - fit_labels and options.unmatched_labels == "error":
            raise DataError(f"the evaluated split has label(s) {shown(labels - fit_labels)} that {where} lacks; "
                            "the classifier can never predict them (MTEB scores them as errors: unmatched_labels: "
                            "score)")
        if fit_labels - labels and options.unmatched_labels == "error":
            raise DataError(f"{where} has label(s) {shown(fit_labels - labels)} that the evaluated split lacks; "
                            "restrict both to the same labels (`where`), or score as MTEB does (unmatched_labels: "
                            "score)")
        self._classes(fit, options, items)
        self._check_sampling(fit, options, where)

    def texts(self, items: Sequence[Item], options: ClassificationOptions,
              support: Support = NO_SUPPORT) -> Iterator[FieldText]:
        fit = self._fit_items(options, support)
        used = sorted(set().union(*undersamples([item.fields["label"] for item in fit], options)))
        for index in used:  # only the fit items some experiment uses, as MTEB encodes them
            yield "text", fit[index].fields["text"]
        for item in items:
            yield "text", item.fields["text"]

    def _check_sampling(self, fit: Sequence[Item], options: ClassificationOptions, where: str) -> None:
        counts = Counter(item.fields["label"] for item in fit)
        short = {label for label, count in counts.items()
                 if options.samples_per_label != "all" and count < options.samples_per_label}
        if short and options.short_classes == "error":
            raise DataError(f"{where}: label(s) {shown(short)} have fewer than samples_per_label = "
                            f"{options.samples_per_label} items (fewest: {min(counts[s] for s in short)}); MTEB "
                            "fits on the items there are: set short_classes: take_what_there_is, or lower "
                            "samples_per_label")
        taken_whole = [label for label, count in counts.items()
                       if options.samples_per_label != "all" and count <= options.samples_per_label]
        if len(taken_whole) == len(counts) and options.n_experiments > 1:  # as `all` with several experiments
            raise DataError(f"{where}: samples_per_label = {options.samples_per_label} is at least every label's "
                            f"count (largest: {max(counts.values())}), so every experiment fits on the whole split "
                            "and the same classifier: set samples_per_label: all and n_experiments: 1")
        if options.classifier == "knn":
            fewest = min(len(chosen) for chosen in undersamples([item.fields["label"] for item in fit], options))
            if options.k > fewest:
                raise DataError(f"knn: k = {options.k} but an experiment fits on {fewest} items")

    def run(self, items: Sequence[Item], ctx: RunContext, options: ClassificationOptions) -> Outputs:
        fit = self._fit_items(options, ctx.support)
        classes = self._classes(fit, options, items)
        fit_y = label_numbers(fit, classes)
        gold = label_numbers(items, classes)
        chosen = undersamples([item.fields["label"] for item in fit], options)
        used = sorted(set().union(*chosen))
        undefined = "a classifier cannot be fitted or applied"
        fit_x = check_vectors(ctx.embed([fit[index].fields["text"] for index in used], "text"), undefined)
        position = {index: row for row, index in enumerate(used)}
        test_x = check_vectors(ctx.embed([item.fields["text"] for item in items], "text"), undefined)
        predicted = np.empty((len(items), len(chosen)), dtype=np.float64)
        from sklearn.exceptions import ConvergenceWarning

        for run, indices in enumerate(chosen):
            model = _classifier(options)
            with warnings.catch_warnings():  # MTEB's 100 lbfgs iterations often stop short; parity keeps them
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(fit_x[[position[index] for index in indices]], fit_y[indices])
            predicted[:, run] = model.predict(test_x)
        if len(set(gold.tolist())) > 1 and np.all(predicted == predicted[:1]):  # each experiment one class
            raise DataError(f"every experiment predicts one class for all {len(items)} items; a constant "
                            "prediction measures nothing (are the vectors all the same?)")
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"predicted_class": predicted, "gold_class": gold.astype(np.float64)})

    def example(self) -> KindExample:
        fit = [("refund my card payment", "money"), ("my card was charged twice", "money"),
               ("the transfer has not arrived", "money"), ("why is there a fee on my top up", "money"),
               ("how do I change my pin", "security"), ("my card was stolen yesterday", "security"),
               ("someone used my account", "security"), ("block my card please", "security")]
        test = [("I was charged a fee", "money"), ("where is my transfer", "money"), ("refund please", "money"),
                ("my pin is locked", "security"), ("stolen phone and card", "security"),
                ("lock my account", "security")]
        return KindExample(
            items=[Item(id=f"t{i}", fields={"text": text, "label": label}) for i, (text, label) in enumerate(test)],
            options={"fit_split": "train", "samples_per_label": 3, "n_experiments": 4},
            support={"train": [Item(id=f"f{i}", fields={"text": text, "label": label})
                               for i, (text, label) in enumerate(fit)]})


PROTOCOLS.register("classification", ClassificationProtocol())
