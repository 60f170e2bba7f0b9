"""Exact search: cosine as every protocol computes it (`cosine`) and the exact blocked top-k corpus search
(`exact`). Imports only the bottom layer; protocols build on it."""

# the package is its modules, each imported by its own name (nothing is re-exported here)
__all__ = ["by_similarity", "cosine", "exact", "pairs", "ranking", "similarity", "thresholds"]
