"""A split's `explode`: MTEB's layouts that store a split as one row of lists (v1 pair classification) or a
clustering set per row become one item per element, ids numbered over the elements, exactly as MTEB's transforms
chain them (`itertools.chain.from_iterable` of each column); lists that do not line up are refused."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from specrun.core.errors import SpecrunError
from specrun.data import load_split
from tests.conftest import plan_of
from tests.test_trust_inputs_data import CLUSTERING, jsonl, toy_spec

SETS = [{"s1": ["a cat", "a dog", "a car"], "group": ["animal", "animal", "vehicle"]},
        {"s1": ["a bus", "a cow"], "group": ["vehicle", "animal"]}]


def exploded_items(tmp_path: Path, records: list[dict], **split: object) -> list:
    spec = toy_spec(tmp_path, jsonl(records), "jsonl", "data.jsonl", protocol=CLUSTERING,
                    split={"explode": ["s1", "group"], **split})
    return load_split(plan_of(spec), "test", tmp_path / "data", check=False).items


def test_rows_of_lists_become_one_item_per_element_in_mtebs_order(tmp_path: Path) -> None:
    items = exploded_items(tmp_path, SETS)
    texts = list(itertools.chain.from_iterable(row["s1"] for row in SETS))  # MTEB's dataset_transform
    labels = list(itertools.chain.from_iterable(row["group"] for row in SETS))
    assert [item.fields["text"] for item in items] == texts
    assert [item.fields["label"] for item in items] == labels
    assert [item.id for item in items] == [f"toy-{i}" for i in range(5)]


def test_rows_without_lists_stay_and_where_tests_the_new_rows(tmp_path: Path) -> None:
    flat = [{"s1": "a tram", "group": "vehicle"}]
    items = exploded_items(tmp_path, [*SETS, *flat], where={"group": "vehicle"})
    assert [item.fields["text"] for item in items] == ["a car", "a bus", "a tram"]


@pytest.mark.parametrize(("record", "said"), [
    ({"s1": ["a", "b"], "group": ["x"]}, r"row 1: the columns of `explode` must hold lists of one length "
                                         r"\(s1: 2, group: 1\)"),
    ({"s1": ["a", "b"], "group": "x"}, r"\(s1: 2, group: not a list\)"),
])
def test_lists_that_do_not_line_up_are_refused(tmp_path: Path, record: dict, said: str) -> None:
    with pytest.raises(SpecrunError, match=said):
        exploded_items(tmp_path, [record])


def test_an_explode_column_the_data_lacks_is_refused_by_key(tmp_path: Path) -> None:
    spec = toy_spec(tmp_path, jsonl(SETS), "jsonl", "data.jsonl", protocol=CLUSTERING,
                    split={"explode": ["s1", "topic"]})
    with pytest.raises(SpecrunError, match=r"column 'topic' is not in .*; it has: s1, group"):
        load_split(plan_of(spec), "test", tmp_path / "data", check=False)


def test_an_empty_set_is_refused_where_rows_are_sets(tmp_path: Path) -> None:
    """With `explode_row` each row is a set (MTEB's legacy clustering), and MTEB scores an empty one 1.0: left
    to vanish with its no items, it would move the mean silently, so it is one line. Without `explode_row` an
    empty row of lists is no items, as MTEB's chaining of rows gives none."""
    empty = {"s1": [], "group": []}
    with pytest.raises(SpecrunError, match=r"row 2: an empty set"):
        exploded_items(tmp_path / "sets", [SETS[0], empty], explode_row="mteb_set")
    assert len(exploded_items(tmp_path / "rows", [SETS[0], empty])) == 3
