"""The functions a protocol compares vectors by (a protocol's `similarity:`), named as sentence-transformers names
them in `similarity_fn_name`: cosine, dot, and euclidean and manhattan as negated distances (higher is more similar,
as sentence-transformers' similarity functions and MTEB's evaluators score them). Cosine is `cosine_rows` itself,
so a cosine spec's numbers are the ones it always had; every other function is float64, rounded to
COSINE_DECIMALS like every cosine (mathematically equal scores are ties), and a non-finite vector is an error."""

from __future__ import annotations

import numpy as np

from specrun.core.types import SIMILARITIES as SIMILARITIES  # the one list (core.types), read here by the kinds
from specrun.search.cosine import COSINE_DECIMALS, check_norms, cosine_rows, row_dots


def checked_finite(rows: np.ndarray, function: str) -> np.ndarray:
    """The rows as float64, refused when one holds NaN or inf (a zero vector is fine: only cosine divides by a
    norm)."""
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1) if rows.ndim == 2 else np.linalg.norm(rows)[None]
    check_norms(np.where(np.isfinite(norms), 1.0, norms), f"the {function} similarity is undefined")
    return rows


def similarity_rows(a: np.ndarray, b: np.ndarray, function: str = "cosine") -> np.ndarray:
    """`function` of each row of a with the same row of b (b may be one row for every row of a)."""
    if function == "cosine":
        return cosine_rows(a, b)
    a, b = checked_finite(a, function), checked_finite(b, function)
    if function == "dot":
        values = row_dots(a, b)
    elif function == "euclidean":
        values = -np.linalg.norm(a - b, axis=1)
    elif function == "manhattan":
        values = -np.abs(a - b).sum(axis=1)
    else:
        raise ValueError(f"unknown similarity {function!r}")
    return np.round(values, COSINE_DECIMALS)


def similarity_matrix(a: np.ndarray, b: np.ndarray, function: str) -> np.ndarray:
    """`function` of every row of a with every row of b, (len(a), len(b)): for the kinds that meet every source
    with every target. Cosine is left to the kinds' own formula (their numbers stay as they were)."""
    a, b = checked_finite(a, function), checked_finite(b, function)
    if function == "dot":
        values = a @ b.T
    elif function in ("euclidean", "manhattan"):
        from scipy.spatial.distance import cdist  # exact distances, memory len(a) x len(b) only

        values = -cdist(a, b, metric="euclidean" if function == "euclidean" else "cityblock")
    else:
        raise ValueError(f"similarity_matrix takes dot, euclidean or manhattan, not {function!r}")
    return np.round(values, COSINE_DECIMALS)
