"""A split's `sample`: the rows MTEB's stratified_subsampling keeps (the label class-encoded as it encodes it, then
datasets' train_test_split with the seed and stratification), in its order; a split no larger than n kept whole;
values the option or the data cannot take refused in one line."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from datasets import ClassLabel, Dataset, Features, Value

from specrun.core.errors import SpecrunError
from specrun.data import load_split
from specrun.data.sample import sampled_order
from tests.conftest import plan_of
from tests.test_trust_inputs_data import CLUSTERING, jsonl, toy_spec

# 12 classes of unequal size: as text "10" and "11" sort before "2", so the class order is MTEB's only if encoded
# as MTEB encodes (numbers as text)
LABELS = [index % 12 if index % 5 else index % 3 for index in range(400)]
RECORDS = [{"s1": f"text {index}", "group": label} for index, label in enumerate(LABELS)]


def sampled_items(tmp_path: Path, records: list[dict], **sample: object) -> list:
    spec = toy_spec(tmp_path, jsonl(records), "jsonl", "data.jsonl", protocol=CLUSTERING,
                    split={"sample": {"stratify": "group", "seed": 42, **sample}})
    return load_split(plan_of(spec), "test", tmp_path / "data", check=False).items


def mteb_kept(records: list[dict], n: int, seed: int) -> list[str]:
    """MTEB's stratified_subsampling of one split, written out with datasets as mteb/abstasks/abstask.py does."""
    dataset = Dataset.from_list(records)
    names = sorted({str(x) for x in dataset["group"] if x is not None})
    dataset = dataset.cast_column("group", Value("string")).cast_column("group", ClassLabel(names=names))
    return dataset.train_test_split(test_size=n, seed=seed, stratify_by_column="group")["test"]["s1"]


@pytest.mark.parametrize("as_text", [False, True])
def test_the_rows_and_order_are_datasets_train_test_split_s(tmp_path: Path, as_text: bool) -> None:
    records = [{**record, "group": f"c{record['group']}"} for record in RECORDS] if as_text else RECORDS
    items = sampled_items(tmp_path, records, n=97)
    assert [item.fields["text"] for item in items] == mteb_kept(records, 97, 42)
    assert [item.id for item in items] == [f"toy-{int(item.fields['text'].split()[1])}" for item in items]


def test_the_sample_keeps_each_label_s_share(tmp_path: Path) -> None:
    items = sampled_items(tmp_path, RECORDS, n=100)
    whole, kept = Counter(LABELS), Counter(item.fields["label"] for item in items)
    assert len(items) == 100
    assert all(abs(kept[label] - 100 * count / len(LABELS)) <= 1 for label, count in whole.items())


def test_a_split_of_n_rows_or_fewer_is_kept_whole_in_its_order(tmp_path: Path) -> None:
    items = sampled_items(tmp_path, RECORDS[:50], n=50)
    assert [item.fields["text"] for item in items] == [record["s1"] for record in RECORDS[:50]]


def test_a_classlabel_column_is_drawn_by_its_own_ids() -> None:
    ids = [label % 11 for label in LABELS]
    names = [f"n{9 - i}" for i in range(11)]  # not in sorted order: MTEB keeps the data's ClassLabel as it is
    dataset = Dataset.from_dict({"label": ids, "row": list(range(len(ids)))},
                                features=Features({"label": ClassLabel(names=names), "row": Value("int64")}))
    expected = dataset.train_test_split(test_size=60, seed=7, stratify_by_column="label")["test"]["row"]
    assert sampled_order(ids, 60, 7, class_label=True) == expected


@pytest.mark.parametrize(("sample", "said"), [
    ({"n": 0}, r"splits\.test\.sample\.n.*greater than or equal to 1"),
    ({"n": True}, r"splits\.test\.sample\.n"),
    ({"n": 10, "method": "random"}, r"splits\.test\.sample\.method.*mteb_stratified"),
    ({"n": 10, "size": 3}, r"splits\.test\.sample.*size"),
])
def test_bad_values_of_the_option_are_refused_in_one_line(tmp_path: Path, sample: dict, said: str) -> None:
    with pytest.raises(SpecrunError) as caught:
        sampled_items(tmp_path, RECORDS, **sample)
    assert re.search(said, caught.value.one_line())
    assert "\n" not in caught.value.one_line()


@pytest.mark.parametrize(("records", "stratify", "said"), [
    ([*RECORDS, {"s1": "alone", "group": 99}], "group", r"least populated class .* only 1 member"),
    ([*RECORDS[:-1], {"s1": "none", "group": None}], "group", r"row 400: `sample` stratifies by 'group', whose "
                                                              r"cell is empty"),
    (RECORDS, "topic", r"column 'topic' is not in .*; it has: s1, group"),
])
def test_data_the_draw_cannot_take_is_refused_in_one_line(tmp_path: Path, records: list, stratify: str,
                                                          said: str) -> None:
    with pytest.raises(SpecrunError, match=said) as caught:
        sampled_items(tmp_path, records, n=50, stratify=stratify)
    assert "\n" not in caught.value.one_line()
