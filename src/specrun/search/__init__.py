"""Exact search: cosine as every protocol computes it (`cosine`) and the exact blocked top-k corpus search
(`exact`). Imports only the bottom layer; protocols build on it."""
