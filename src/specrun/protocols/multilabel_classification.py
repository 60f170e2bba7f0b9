"""Multilabel classification as MTEB 2.x's AbsTaskMultilabelClassification: each experiment undersamples the fit
split (an item is taken while any of its labels has fewer than samples_per_label taken, one numpy Generator seeded
once and shuffling a fresh index list per experiment), fits scikit-learn's KNeighborsClassifier (5 neighbours,
Euclidean, as MTEB's default) on the labels binarised over the evaluated split's labels (MultiLabelBinarizer:
fit labels the evaluated split lacks are dropped, as MTEB's transform drops them), and predicts every evaluated
item's label set. Differences: MTEB cuts an evaluated split of over 3,000 items by iterative stratification;
here the whole split (or the spec's `where`/`limit`) is scored."""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field

from specrun.core.contracts import KindExample, KindInfo, KindOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import NO_SUPPORT, Item, Outputs, Support
from specrun.protocols.labels import shown, sorted_labels
from specrun.search.cosine import check_vectors

MTEB_SEED = 42
MAX_LABELS = 52  # a label set travels as a bit mask in a float64 output (exact below 2**53)


class MultilabelOptions(KindOptions):
    fit_split: str = Field(min_length=1, description="The split the classifier is fitted on (read, not scored).")
    samples_per_label: int = Field(8, ge=1, description="Fit items per label in each experiment (MTEB: 8).")
    n_experiments: int = Field(10, ge=1, le=1000, description="Fits, each on its own undersample (MTEB: 10).")
    k: int = Field(5, ge=1, description="Neighbours of KNeighborsClassifier (MTEB: 5).")
    seed: int = Field(MTEB_SEED, ge=0, le=2**32 - 1, description="Seeds the undersampling (MTEB: the task's 42).")


def undersamples(label_sets: Sequence[Sequence[Any]], options: MultilabelOptions) -> list[list[int]]:
    """The fit items of each experiment, as MTEB's multilabel `_undersample_data_indices`: one
    numpy.random.default_rng(seed) shuffles a fresh index list per experiment; an item is taken while any of its
    labels has fewer than samples_per_label taken, and then counts for each of its labels."""
    rng = np.random.default_rng(options.seed)
    chosen = []
    for _ in range(options.n_experiments):
        order = list(np.arange(len(label_sets)))
        rng.shuffle(order)
        taken: defaultdict[Any, int] = defaultdict(int)
        picked = []
        for index in order:
            if any(taken[label] < options.samples_per_label for label in label_sets[index]):
                picked.append(int(index))
                for label in label_sets[index]:
                    taken[label] += 1
        chosen.append(picked)
    return chosen


def masks(label_sets: Sequence[Sequence[Any]], classes: Sequence[Any]) -> np.ndarray:
    """Each label set as a bit mask over the classes (bit j: classes[j]); labels outside them dropped."""
    bit = {label: 1 << j for j, label in enumerate(classes)}
    return np.array([sum(bit.get(label, 0) for label in labels) for labels in label_sets], dtype=np.float64)


class MultilabelClassificationProtocol(ProtocolKind[MultilabelOptions]):
    """A k-nearest-neighbour probe on frozen embeddings predicting each evaluated item's set of labels. Outputs
    per item: its gold label set and the predicted set of every experiment, as bit masks over the evaluated
    split's labels in sorted order; metrics (multilabel_accuracy, multilabel_f1_macro, lrap, hamming) average
    over experiments, as MTEB reports."""

    info = KindInfo(
        item_fields={"text": "text", "labels": "label_set"},
        outputs=("predicted_labels", "gold_labels"),
        unit="items",
        prompt_task="MultilabelClassification",
        split_options=("fit_split",),
        hub_task="text-classification",
        hub_task_id="multi-label-classification",
    )
    Options = MultilabelOptions

    def validate_items(self, items: Sequence[Item], options: MultilabelOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        fit = list(support[options.fit_split])
        classes = self._classes(items)
        fit_labels = {label for item in fit for label in item.fields["labels"]}
        if len(classes) < 2:
            raise DataError(f"the evaluated split holds {len(classes)} label(s); multilabel classification needs "
                            "two or more")
        if len(classes) > MAX_LABELS:
            raise DataError(f"the evaluated split holds {len(classes)} labels; this kind handles up to {MAX_LABELS}")
        if not set(classes) & fit_labels:
            raise DataError(f"fit split {options.fit_split!r} holds none of the evaluated labels "
                            f"({shown(set(classes))})")
        fewest = min(len(chosen) for chosen in undersamples([item.fields["labels"] for item in fit], options))
        if options.k > fewest:
            raise DataError(f"k = {options.k} but an experiment fits on {fewest} items")

    @staticmethod
    def _classes(items: Sequence[Item]) -> list[Any]:
        return sorted_labels({label for item in items for label in item.fields["labels"]}, "the evaluated split")

    def run(self, items: Sequence[Item], ctx: RunContext, options: MultilabelOptions) -> Outputs:
        from sklearn.neighbors import KNeighborsClassifier

        fit = list(ctx.support[options.fit_split])
        classes = self._classes(items)
        chosen = undersamples([item.fields["labels"] for item in fit], options)
        used = sorted(set().union(*chosen))
        undefined = "a classifier cannot be fitted or applied"
        fit_x = check_vectors(ctx.embed([fit[index].fields["text"] for index in used], "text"), undefined)
        test_x = check_vectors(ctx.embed([item.fields["text"] for item in items], "text"), undefined)
        position = {index: row for row, index in enumerate(used)}
        fit_bits = unpack(masks([item.fields["labels"] for item in fit], classes), len(classes))
        weights = 1 << np.arange(len(classes), dtype=np.int64)
        predicted = np.empty((len(items), len(chosen)), dtype=np.float64)
        for run, indices in enumerate(chosen):
            model = KNeighborsClassifier(n_neighbors=options.k)
            with warnings.catch_warnings():  # a label no fit item of the experiment holds: a constant column
                warnings.simplefilter("ignore", UserWarning)
                model.fit(fit_x[[position[index] for index in indices]], fit_bits[indices])
            predicted[:, run] = (np.asarray(model.predict(test_x), dtype=np.int64) @ weights).astype(np.float64)
        gold_sets = {tuple(sorted(map(str, item.fields["labels"]))) for item in items}
        if len(gold_sets) > 1 and np.all(predicted == predicted[:1]):  # each experiment one label set
            raise DataError(f"every experiment predicts one label set for all {len(items)} items; a constant "
                            "prediction measures nothing (are the vectors all the same?)")
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"predicted_labels": predicted,
                               "gold_labels": masks([item.fields["labels"] for item in items], classes)})

    def example(self) -> KindExample:
        fit = [("the striker scored and the fans cheered", ["sports"]), ("a late goal won the cup", ["sports"]),
               ("the coach was fined by the league", ["sports", "money"]), ("ticket prices rose again", ["money"]),
               ("the bank cut its rates", ["money"]), ("shares fell after the report", ["money"]),
               ("the minister opened the stadium", ["politics", "sports"]), ("a new tax law passed", ["politics",
                                                                                                     "money"]),
               ("the election date was set", ["politics"]), ("parliament debated the bill", ["politics"])]
        test = [("the team won the derby", ["sports"]), ("the budget raised taxes", ["politics", "money"]),
                ("the club sold its striker for millions", ["sports", "money"]), ("voters went to the polls",
                                                                                   ["politics"]),
                ("interest rates stay high", ["money"]), ("the mayor cheered the champions", ["politics", "sports"])]
        return KindExample(
            items=[Item(id=f"t{i}", fields={"text": text, "labels": labels}) for i, (text, labels) in enumerate(test)],
            options={"fit_split": "train", "samples_per_label": 2, "n_experiments": 3, "k": 3},
            support={"train": [Item(id=f"f{i}", fields={"text": text, "labels": labels})
                               for i, (text, labels) in enumerate(fit)]},
            metrics=("multilabel_accuracy", "multilabel_f1_macro", "lrap", "hamming"))


def unpack(bits: np.ndarray, n_labels: int) -> np.ndarray:
    """Bit masks (any shape) as 0/1 label columns (shape + (n_labels,))."""
    return ((bits.astype(np.int64)[..., None] >> np.arange(n_labels)) & 1).astype(np.int64)


PROTOCOLS.register("multilabel_classification", MultilabelClassificationProtocol())
