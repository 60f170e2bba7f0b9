"""Reports stage: a scatter of predicted similarity against gold, which people read faster than a table.
matplotlib is an optional extra (`specrun[plot]`); without it there is no picture and the report says nothing
is missing beyond it."""

from __future__ import annotations

import io

import numpy as np


def scatter_png(prediction: np.ndarray, gold: np.ndarray, title: str) -> bytes | None:
    """PNG bytes, or None when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=(5, 4), dpi=100)
    axes = figure.subplots()
    axes.scatter(gold, prediction, s=10, alpha=0.5, linewidths=0)
    axes.set_xlabel("gold")
    axes.set_ylabel("predicted similarity (cosine)")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})  # no version string: same data, same bytes
    return buffer.getvalue()
