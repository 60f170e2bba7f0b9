"""Several runs at once: resampled jointly, aggregated, compared and ranked. Every view of many runs reads one
core:

- `joint`: each member's (a suite member's, a spec subset's) resamples drawn jointly (members on the same items
  share one draw), and an aggregate (MTEB's Mean (task), Mean (task type), a weighted mean) with its interval;
- `paired`: the paired difference of two runs' metric on the same resamples;
- `_ranking`: ranks with rank intervals, the difference to the best, pairwise shares, Borda, and the ranking
  across benchmarks; `_beside`: our rows ranked among published points (no interval).

Machinery modules are private by name (`_ranking`, `_beside`); what they offer is named here (`__all__`). The
views: `compare` (two runs of a spec), `subsets` (a spec's subsets averaged), `prompt_spread` (a model's
prompt variants), `leaderboard` (many models x specs or suites: one model, Markdown, JSON and HTML) and `suites`
(suite runs read back, compared, ranked).

Nothing is imported here eagerly: the runner imports `subsets` and `prompt_spread`, which must not load the
leaderboard with them."""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "MemberDraws": "joint", "MemberUnits": "joint", "PartUnits": "joint", "aggregate_interval": "joint",
    "aggregate_method": "joint", "joint_draws": "joint", "member_draws": "joint", "member_seed": "joint",
    "over_resamples": "joint", "point": "joint",
    "Difference": "paired", "method_note": "paired", "paired_difference": "paired",
    "Ranking": "_ranking", "borda_points": "_ranking", "min_ranks": "_ranking", "rank_board": "_ranking",
    "rank_interval": "_ranking", "rank_overall": "_ranking", "rank_scores": "_ranking",
    "borda_beside": "_beside", "rank_beside": "_beside",
    "Leaderboard": "leaderboard", "build_leaderboard": "leaderboard", "compute": "leaderboard",
    "check_same_items": "leaderboard",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """The board's API, imported on first use (PEP 562)."""
    if name in _HOMES:
        return getattr(importlib.import_module(f"specrun.board.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'specrun.board' has no attribute {name!r}")
