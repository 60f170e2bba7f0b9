"""core.recent: the newest kept, a value got becomes the newest, the oldest dropped past a count or a byte budget,
sizes added up exactly when a key is put again, and clear forgets every value."""

from __future__ import annotations

from specrun.core.recent import Recent


def test_the_oldest_go_first_past_the_count_or_the_budget() -> None:
    kept: Recent[str] = Recent()
    for key in "abc":
        kept.put(key, key.upper(), 10, count=3, total=100)
    assert kept.get("a") == "A"  # now the newest: b goes first
    kept.put("d", "D", 10, count=3, total=100)
    assert list(kept.entries) == ["c", "a", "d"] and kept.get("b") is None
    kept.put("e", "E", 75, count=3, total=100)  # 10 + 10 + 10 + 75 > 100: the oldest goes
    assert list(kept.entries) == ["a", "d", "e"] and kept.size == 95
    kept.put("d", "D2", 5, count=3, total=100)  # put again: its old size is taken out, not added twice
    assert list(kept.entries) == ["a", "e", "d"] and kept.get("d") == "D2" and kept.size == 90
    kept.put("big", "B", 101, total=100)  # over the budget alone: nothing is left
    assert not kept.entries and kept.size == 0
    kept.put("x", "X")
    kept.clear()
    assert kept.get("x") is None and kept.size == 0
