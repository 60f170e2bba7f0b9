"""Leaderboard stage: many runs (models x specs) ranked with honest ranks (a rank is an estimate, so each gets an
interval): the resampled ranking (`ranking`, where every formula is written), the boards built from verified runs
(`board`), and their Markdown and HTML (`render`)."""

from __future__ import annotations

from specrun.leaderboard.board import build_leaderboard, check_same_items, compute
from specrun.leaderboard.inputs import said_mode
from specrun.leaderboard.model import Leaderboard
from specrun.leaderboard.ranking import rank_board, rank_overall

__all__ = ["Leaderboard", "build_leaderboard", "check_same_items", "compute", "rank_board", "rank_overall",
           "said_mode"]
