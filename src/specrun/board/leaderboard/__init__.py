"""The leaderboard: many runs (models x benchmarks) ranked with honest ranks (a rank is an estimate, so each gets
an interval), read from verified runs (`build`), with MTEB's published rows beside ours (`published`), the page's
filters (`facets`) and its Markdown and HTML (`render`). The ranking itself is the board's core
(`specrun.board._ranking`)."""

from __future__ import annotations

from specrun.board.leaderboard._inputs import check_same_items, said_mode
from specrun.board.leaderboard.build import build_leaderboard, compute
from specrun.board.leaderboard.model import Leaderboard

__all__ = ["Leaderboard", "build_leaderboard", "check_same_items", "compute", "said_mode"]
