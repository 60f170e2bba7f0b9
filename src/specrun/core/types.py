"""Plain types every stage shares: `Item` is what the data stage produces and protocols read; `Outputs` what a
protocol produces and metrics read; `Embed` the callable the encoder stage hands to protocols; `Score` what the
metrics stage returns and every reader shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> (len(texts), dim) matrix, rows in the order given

RANK_CUTOFFS = (1, 3, 5, 10, 20, 100)  # the K of precision_at_K / recall_at_K, shared by protocol and metrics
CORPUS_CUTOFFS = (1, 3, 5, 10, 100, 1000)  # the K of the trec measures: ndcg_cut_K, map_cut_K, ...
TREC_MEASURES = ("ndcg", "map", "mrr", "recall", "precision")  # per query, at each of CORPUS_CUTOFFS


def trec_output(measure: str, k: int) -> str:
    """The output array (and metric) name of a trec measure at a cutoff: ndcg_cut_10."""
    return f"{measure}_cut_{k}"


class Strict(BaseModel):
    """The base of every pydantic model specrun reads or writes: unknown keys are errors, values immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Item:
    id: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outputs:
    """Per-unit arrays in unit order, aligned: what metrics consume and the bootstrap resamples."""

    unit: str
    ids: list[str]
    arrays: dict[str, np.ndarray]


class Score(Strict):
    """A metric's value on all units, its bootstrap interval and the number of units it was computed on: what
    the metrics stage returns, results.json stores and every reader shows (one type for all of them)."""

    value: float
    ci_low: float
    ci_high: float
    n: int = Field(gt=0)
