"""Cosine as every protocol and the exact search compute it: float64, rounded to 12 decimals, a zero vector an
error."""

from __future__ import annotations

import numpy as np

from specrun.core.errors import SpecrunError

COSINE_DECIMALS = 12


def check_norms(norms: np.ndarray, undefined: str = "cosine is undefined") -> None:
    """Cosine is undefined for a zero vector and for one holding NaN or inf (its norm says which): an error, never
    a NaN score or a vector silently left out of a ranking."""
    if not np.all(np.isfinite(norms)):
        raise SpecrunError(f"the model returned {int(np.sum(~np.isfinite(norms)))} non-finite embedding(s) (NaN "
                           f"or inf); {undefined}")
    if np.any(norms == 0):
        raise SpecrunError(f"the model returned a zero embedding; {undefined}")


def check_vectors(vectors: np.ndarray, undefined: str) -> np.ndarray:
    """The vectors, refused (as check_norms) when one is zero or not finite: what a fitted probe or k-means
    checks before it reads them."""
    check_norms(np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1), undefined)
    return vectors


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of a with the same row of b, in float64, rounded to 12 decimals; a zero or non-finite
    vector is an error, not a NaN.

    Rounding makes mathematically equal cosines equal numbers: a pair of identical sentences gives 1 +- 2e-16
    depending on the formula, and rank metrics must see such values as ties. Embeddings are float32 (about 7
    digits), so nothing real lies below 1e-12."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return cosine_with_norms(a, b, checked_norms(a), checked_norms(b))


def checked_norms(rows: np.ndarray) -> np.ndarray:
    """The float64 norm of each row, as cosine_rows takes it (each row's own reduction, whatever rows surround
    it, so norms taken once for many pairs are the same numbers); a zero or non-finite one is an error."""
    norms = np.linalg.norm(np.asarray(rows, dtype=np.float64), axis=1)
    check_norms(norms)
    return norms


def cosine_with_norms(a: np.ndarray, b: np.ndarray, norm_a: np.ndarray, norm_b: np.ndarray) -> np.ndarray:
    """cosine_rows of float64 rows whose norms (checked_norms) are known: the one formula, in one place."""
    return cosine_of_dots(row_dots(a, b), norm_a, norm_b)


def row_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The dot product of each row of a with the same row of b (float64), as cosine_with_norms takes it; b may
    be one row (1-D) for every row of a: the same kernel, so the same numbers."""
    return np.einsum("ij,j->i" if b.ndim == 1 else "ij,ij->i", a, b)


def cosine_of_dots(dots: np.ndarray, norm_a: np.ndarray, norm_b: np.ndarray) -> np.ndarray:
    """cosine_with_norms from its dot products (row_dots)."""
    return np.round(dots / (norm_a * norm_b), COSINE_DECIMALS)
