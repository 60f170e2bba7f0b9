"""Published points ranked with our runs (board._beside, docs/publishing.md): ranks, our rank interval among
fixed published values and MTEB's Borda checked against direct loops on small cases; on the slice of MTEB's
results repository, every task's ranking of published models equals an independent sort of their main scores
(ties: the best rank, then model name)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from specrun.board import borda_beside, rank_beside, rank_scores
from specrun.board.leaderboard.model import Board, BoardRow
from specrun.board.leaderboard.published import published_rows, ranked_board
from specrun.mteb.results import PublishedDir
from specrun.mteb.score_ref import MtebRef
from specrun.mteb.task_facts import task_facts

TASKS = ("BIOSSES", "Banking77Classification", "JSICK", "JSTS", "SICK-R", "STS12", "STS13", "STS14", "STS15",
         "STS16", "STSBenchmark")


def loop_ranks(published: list[float], ours: np.ndarray, m: int, sign: float) -> int:
    """Our entry m's rank in one table, counted one row at a time."""
    mine = sign * ours[m]
    return 1 + sum(sign * p > mine for p in published) + sum(sign * o > mine for o in ours)


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_rank_beside_equals_a_direct_loop(direction: str) -> None:
    rng = np.random.default_rng(3)
    published = [0.9, 0.8, 0.8, 0.5, 0.62]
    observed = np.array([0.85, 0.6])
    scores = observed + rng.normal(0, 0.08, (400, 2))
    got = rank_beside(np.array(published), observed, scores, direction=direction, confidence=0.9)
    sign = 1.0 if direction == "higher" else -1.0
    for m in range(2):
        per_b = [loop_ranks(published, scores[b], m, sign) for b in range(400)]
        low, high = np.percentile(per_b, [5, 95])
        assert (got.rank_low[m], got.rank_high[m]) == (math.floor(low + 1e-9), math.ceil(high - 1e-9))
        assert got.rank[m] == loop_ranks(published, observed, m, sign)
        assert got.rank_low[m] <= got.rank[m] <= got.rank_high[m]  # our interval holds our point rank
    expected = [1 + sum(sign * q > sign * p for q in published) + sum(sign * o > sign * p for o in observed)
                for p in published]
    assert got.published_rank.tolist() == expected
    if direction == "higher":  # 0.9 | 0.85 ours | 0.8 0.8 (tied: the best rank) | 0.62 | 0.6 ours | 0.5
        assert expected == [1, 3, 3, 7, 5] and got.rank.tolist() == [2, 6]


def mteb_borda(table: np.ndarray) -> np.ndarray:
    """MTEB's Borda (mteb/benchmarks/_create_table.py `_borda_rank_from_long`) by hand: per task, n - the
    average rank of the score (descending), summed; then ranked with ties at the minimum rank."""
    n = table.shape[1]
    points = np.zeros(n)
    for row in table:
        for i in range(n):
            above, tied = sum(row > row[i]), sum(row == row[i])
            points[i] += n - (above + (tied + 1) / 2)
    return points


def test_borda_beside_equals_mteb_s_borda_by_hand() -> None:
    rng = np.random.default_rng(5)
    published = np.array([[0.7, 0.6, 0.6, 0.4], [0.3, 0.5, 0.2, 0.5]])  # (members, models)
    observed = np.array([[0.65, 0.5], [0.45, 0.1]])
    resampled = observed[:, None, :] + rng.normal(0, 0.1, (2, 300, 2))
    got = borda_beside(published, observed, resampled, direction="higher", confidence=0.95)
    points = mteb_borda(np.concatenate([published, observed], axis=1))
    assert got.points.tolist() == pytest.approx(points.tolist(), abs=1e-12)
    assert got.rank.tolist() == [1 + sum(q > p for q in points) for p in points]
    for m in range(2):
        per_b = []
        for b in range(300):
            pts = mteb_borda(np.concatenate([published, resampled[:, b, :]], axis=1))
            per_b.append(1 + sum(pts > pts[4 + m]))
        low, high = np.percentile(per_b, [2.5, 97.5])
        assert (got.rank_low[m], got.rank_high[m]) == (math.floor(low + 1e-9), math.ceil(high - 1e-9))


def our_board(value: float) -> tuple[Board, object]:
    """A board of one run of ours with a fixed value (an interval of zero width), below every published score."""
    ranking = rank_scores(np.array([value]), np.full((200, 1), value), direction="higher", confidence=0.95)
    row = BoardRow(model="ours", results="r.json", score=value, ci_low=value, ci_high=value, n=1, rank=1,
                   rank_low=1, rank_high=1, diff_to_best=0, diff_low=0, diff_high=0, separable_from_best=False)
    board = Board(split="test", metric="m", metric_label="m", direction="higher", headline=True, n_units=1,
                  best="ours", not_separable=[], rows=[row], better=[[0.0]])
    return board, ranking


def plain_value(path: Path, split: str, score: str) -> float | None:
    """The file's value with plain json: `scores.<split>` default entry, or the layout before 1.11."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if "scores" in data:
        entry = next((e for e in data["scores"].get(split, []) if e["hf_subset"] == "default"), None)
        value = None if entry is None else entry.get(score)
    else:
        block = data.get(split, {})
        old = {"cosine_spearman": ("cos_sim", "spearman")}.get(score)
        value = block.get(old[0], {}).get(old[1]) if old else block.get(score)
    return value if isinstance(value, float | int) and math.isfinite(value) else None


def test_each_task_s_ranking_of_published_models_is_an_independent_sort(data_dir: Path) -> None:
    """Every task of the slice, by its main score: ours (a value below all) changes no published rank."""
    root = data_dir / "mteb-results-slice" / "results"
    published = PublishedDir(root)
    for task in TASKS:
        facts = task_facts(task)
        assert facts is not None
        split = "validation" if task == "JSTS" else "test"
        found = published.every_model(MtebRef(task=task, split=split, score=facts.main_score))
        board, ranking = our_board(-5.0)
        ranked = ranked_board(board, published_rows(found, "STS"), ranking, ["ours"], "all", 0.95)
        plain = {}  # model -> value, every model folder's one file of the task (the slice has one each)
        for path in sorted(root.glob(f"*/*/{task}.json")):
            value = plain_value(path, split, facts.main_score)
            if value is not None:
                plain[path.parts[-3].replace("__", "/", 1)] = value
        order = sorted(plain, key=lambda model: (-plain[model], model))
        assert [(r.model, r.score) for r in ranked.published] == [(m, plain[m]) for m in order], task
        assert [r.rank for r in ranked.published] == [1 + sum(v > plain[m] for v in plain.values())
                                                      for m in order], task
        assert ranked.rows[0].published_rank == len(plain) + 1  # ours last, its interval a point
        assert (ranked.rows[0].published_rank_low, ranked.rows[0].published_rank_high) == (len(plain) + 1,) * 2


def test_comparable_only_leaves_flagged_rows_unranked(data_dir: Path) -> None:
    """On STS12: external/ rows and files on another dataset revision are flagged; `comparable` lists them last,
    unranked, and ranks the others among themselves."""
    root = data_dir / "mteb-results-slice" / "results"
    found = PublishedDir(root).every_model(MtebRef(task="STS12", split="test", score="cosine_spearman"))
    rows = published_rows(found, "STS")
    flagged = [r for r in rows if r.flags]
    assert {f for r in rows for f in r.flags} <= {"dataset_revision", "external"}  # STS: no version flag
    assert all(("external" in r.flags) == (r.revision == "external") for r in rows)
    assert 0 < len(flagged) < len(rows)
    board, ranking = our_board(0.7)
    ranked = ranked_board(board, rows, ranking, ["ours"], "comparable", 0.95)
    kept = [r for r in ranked.published if r.rank is not None]
    assert len(kept) == len(rows) - len(flagged) and all(not r.flags for r in kept)
    assert all(r.rank is None for r in ranked.published[len(kept):])
    assert ranked.rows[0].published_rank == 1 + sum(r.score > 0.7 for r in kept)
