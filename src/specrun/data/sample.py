"""A split's `sample`: the rows MTEB's `stratified_subsampling` (mteb/abstasks/abstask.py) keeps, in its order.

MTEB class-encodes the label column (unless the data already hold it as a ClassLabel): every value as text, the
names sorted as text, then `datasets`' `train_test_split(test_size=n, seed=seed, stratify_by_column=label)`, whose
"test" part it keeps; a split of n rows or fewer is kept whole. The draw depends on the order of the classes (each
class's permutation draws from one generator in class order), so it is reproduced here by the same calls on an
in-memory Dataset of the column and the row numbers, not re-implemented: identical by construction. MTEB encodes
with the names of all its splits together; the sorted names of one split keep their order among them, and the
draw sees only the order of the classes present, so one split's names give the same rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from specrun.core.errors import DataError
from specrun.data.items import RawRow
from specrun.plan import Plan
from specrun.spec.sample import DropRare, Sample, SplitText

__all__ = ["rare_dropped", "sampled", "sampled_order", "split_order", "text_split"]


def sampled(rows: list[RawRow], sample: Sample, class_label: bool, plan: Plan, split_name: str) -> list[RawRow]:
    """The rows the sample keeps, in MTEB's order; all rows, in theirs, when there are n or fewer.
    `class_label`: the column is a ClassLabel of the data read (its cells are the data's own class ids)."""
    if sample.method == "train_test_split":
        try:
            return [rows[index] for index in split_order(len(rows), sample.n, sample.seed)]
        except ValueError as exc:  # datasets' refusal: n not below the rows
            raise DataError(f"`sample` of {sample.n} rows (train_test_split): {str(exc).splitlines()[0]}",
                            file=rows[0].origin if rows else None) from None
    if sample.n >= len(rows):
        return rows
    assert sample.stratify is not None  # the model requires it for mteb_stratified
    values = []
    for raw in rows:
        if sample.stratify not in raw.row:
            raise plan.error(("splits", split_name, "sample", "stratify"),
                             f"column {sample.stratify!r} is not in {raw.origin}; it has: "
                             f"{', '.join(map(str, raw.row))}")
        value = raw.row[sample.stratify]
        if value is None or isinstance(value, (list, tuple, dict)):
            what = "empty" if value is None else f"a {type(value).__name__}"
            raise DataError(f"row {raw.number}: `sample` stratifies by {sample.stratify!r}, whose cell is {what}; "
                            "each row needs one value", file=raw.origin)
        values.append(value)
    try:
        order = sampled_order(values, sample.n, sample.seed, class_label=class_label, column=sample.stratify)
    except (ValueError, TypeError) as exc:  # datasets' and arrow's refusals (a class of one row, mixed types)
        raise DataError(f"`sample` of {sample.n} rows stratified by {sample.stratify!r}: "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                        file=rows[0].origin) from None
    return [rows[index] for index in order]


def sampled_order(values: Sequence[Any], n: int, seed: int, *, class_label: bool = False,
                  column: str = "label") -> list[int]:
    """The positions of the n values MTEB's stratified_subsampling keeps, in its order (n below len(values));
    `column` names the values in datasets' messages."""
    import datasets  # imported here: datasets costs seconds at start-up

    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # its casts draw bars; a run draws its own
    try:
        return _kept(datasets, values, n, seed, class_label, column)
    finally:
        if not quiet:
            datasets.enable_progress_bars()


def _kept(datasets: Any, values: Sequence[Any], n: int, seed: int, class_label: bool, column: str) -> list[int]:
    from datasets import ClassLabel, Features, Value

    row = f"{column}.row"  # not a column name of the data: one Dataset of the two
    rows = list(range(len(values)))
    if class_label:  # the data's own ClassLabel: MTEB stratifies by its ids as they are
        if not all(isinstance(value, int) and not isinstance(value, bool) and value >= 0 for value in values):
            raise ValueError("a ClassLabel column holds class ids (whole numbers from 0)")
        features = Features({column: ClassLabel(num_classes=max(values) + 1), row: Value("int64")})
        dataset = datasets.Dataset.from_dict({column: list(values), row: rows}, features=features)
    else:  # as MTEB: the values as text, the names sorted as text
        dataset = datasets.Dataset.from_dict({column: list(values), row: rows})
        names = sorted({str(value) for value in dataset[column] if value is not None})
        dataset = dataset.cast_column(column, Value("string")).cast_column(column, ClassLabel(names=names))
    kept = dataset.train_test_split(test_size=n, seed=seed, stratify_by_column=column)["test"]
    return [int(index) for index in kept[row]]


def split_order(n_rows: int, n: int, seed: int) -> list[int]:
    """The positions datasets' `train_test_split(test_size=n, seed=seed)` puts in its test part, in its order (a
    task's own draw, e.g. MTEB's ArXiv hierarchical clustering): called on a Dataset of the row numbers, so
    identical by construction; datasets raises where n is not below n_rows."""
    import datasets

    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        dataset = datasets.Dataset.from_dict({"row": list(range(n_rows))})
        return [int(index) for index in dataset.train_test_split(test_size=n, seed=seed)["test"]["row"]]
    finally:
        if not quiet:
            datasets.enable_progress_bars()


def text_split(rows: list[dict[str, Any]], how: dict[str, SplitText], origin: str, plan: Plan,
               split_name: str) -> list[dict[str, Any]]:
    """The split's `split_text`: each named column's text as `text.split(sep)[:max_parts]` (MTEB's label
    splitters, mapped over the rows); a cell that is not text is refused, not passed on as it is."""
    found = []
    for number, row in enumerate(rows, start=1):
        changed = dict(row)
        for column, split in how.items():
            if column not in row:
                raise plan.error(("splits", split_name, "split_text", column),
                                 f"column {column!r} is not in {origin}; it has: {', '.join(map(str, row))}")
            if not isinstance(row[column], str):
                raise DataError(f"row {number}: column {column!r} of `split_text` holds "
                                f"{type(row[column]).__name__}, not text", file=origin)
            changed[column] = row[column].split(split.sep)[:split.max_parts]
        found.append(changed)
    return found


def rare_dropped(rows: list[RawRow], drop: DropRare, plan: Plan, split_name: str) -> list[RawRow]:
    """The split's `drop_rare`: the rows whose value fewer than min_count rows hold, dropped, the others kept in
    order (MTEB pops the one row of each label held once: the same rows)."""
    values = []
    for raw in rows:
        if drop.column not in raw.row:
            raise plan.error(("splits", split_name, "drop_rare", "column"),
                             f"column {drop.column!r} is not in {raw.origin}; it has: {', '.join(map(str, raw.row))}")
        value = raw.row[drop.column]
        if isinstance(value, (list, dict)) or value is None:
            raise DataError(f"row {raw.number}: `drop_rare` counts {drop.column!r}, whose cell is "
                            f"{'empty' if value is None else f'a {type(value).__name__}'}", file=raw.origin)
        values.append(value)
    counts = Counter(values)
    return [raw for raw, value in zip(rows, values, strict=True) if counts[value] >= drop.min_count]
