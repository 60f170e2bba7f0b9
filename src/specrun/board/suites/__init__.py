"""Suite runs as a board: suite.json read back and verified with every member's run (`runs`, `parts`, `units`),
compared two at a time (`compare`), ranked on a leaderboard (`leaderboard`), beside MTEB's published values
(`published`)."""

# the package is its modules, each imported by its own name (nothing is re-exported here)
__all__ = ["compare", "leaderboard", "parts", "published", "runs", "units"]
