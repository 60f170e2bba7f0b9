"""Plain types every stage shares: `Item` is what the data stage produces and protocols read; `Outputs` what a
protocol produces and metrics read; `Embed` the callable the encoder stage hands to protocols; `Score` what the
metrics stage returns and every reader shows."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

Embed = Callable[[Sequence[str], str], np.ndarray]  # (texts, the item field they come from) -> (len(texts), dim)
# matrix, rows in the order given; the field says how they are embedded (its role, the protocol's instruction)
FieldText = tuple[str, str]  # (item field, text): what a protocol's `texts` yields

Role = Literal["query", "document", "symmetric"]
ROLES: tuple[Role, ...] = ("query", "document", "symmetric")  # how a model is asked to embed a text: as a query,
# as a document it is searched in, or the one way texts compared with each other are embedded

Similarity = Literal["cosine", "dot", "euclidean", "manhattan"]  # how vectors are compared, named as
# sentence-transformers' similarity_fn_name names them (euclidean and manhattan as negated distances)
SimilarityRequest = Literal[Similarity, "model"]  # what a spec's `similarity:` takes; model: the model's own
SIMILARITIES: tuple[Similarity, ...] = get_args(Similarity)  # the one list every stage reads


@dataclass(frozen=True)
class View:
    """How one set of texts is embedded: their role, the task type a model's prompts are looked up by (MTEB's
    task types: STS, Retrieval, ...) and the protocol's task instruction. The encoder resolves a view to the
    prompt text it applies; the same text in two views is two vectors."""

    role: Role = "symmetric"
    task: str = ""
    instruction: str | None = None

RANK_CUTOFFS = (1, 3, 5, 10, 20, 100)  # the K of precision_at_K / recall_at_K, shared by protocol and metrics
# the K of the trec measures ndcg_cut_K, map_cut_K, ...: MTEB's k_values, and 2, which some of its tasks score
CORPUS_CUTOFFS = (1, 2, 3, 5, 10, 20, 100, 1000)
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


Support = Mapping[str, Sequence["Item"]]  # split name -> items: the splits a protocol fits on, besides the evaluated
NO_SUPPORT: Support = MappingProxyType({})


@dataclass(frozen=True)
class Outputs:
    """Per-unit arrays in unit order, aligned: what metrics consume and the bootstrap resamples. An array is
    (units,), or (units, runs) for a protocol that fits or draws several times (classification experiments,
    k-means runs): column r is run r."""

    unit: str
    ids: list[str]
    arrays: dict[str, np.ndarray]


_RUN_FIELDS = ("runs", "run_sd", "clipped")  # written only when set: older files read and write as before
Aggregate = Literal["mean_task", "mean_task_type", "weighted_mean"]  # what a benchmark of several members reports
# (MTEB's Mean (task), Mean (task type), and a weighted mean): named here because a suite declares them and the
# board computes them
AGGREGATE_LABELS: dict[str, str] = {"mean_task": "Mean (task)", "mean_task_type": "Mean (task type)",
                                    "weighted_mean": "Weighted mean"}
IntervalMethod = Literal["percentile", "basic", "centred", "bca", "centred_t_runs"]  # how resamples become an
# interval (centred_t_runs also reads the per-run values: metrics.intervals)
INTERVAL_METHODS: tuple[str, ...] = get_args(IntervalMethod)  # (metrics.intervals); a metric declares its own
IntervalChoice = Literal["auto", "percentile", "basic", "centred", "bca", "centred_t_runs"]  # what a spec names;
# auto: the metric's


class Score(Strict):
    """A metric's value on all units, its bootstrap interval and the number of units it was computed on: what
    the metrics stage returns, results.json stores and every reader shows (one type for all of them)."""

    value: float
    ci_low: float
    ci_high: float
    n: int = Field(gt=0)
    interval: IntervalMethod = Field("percentile", description="How the interval was read from the resamples "
                                     "(results written before there were methods: percentile).")
    runs: int | None = Field(None, description="Fits or random runs the value is the mean of (None: one).")
    run_sd: float | None = Field(None, description="Standard deviation of the value across those runs.")
    clipped: bool | None = Field(None, description="True when an end of the interval was moved back into the "
                                                   "metric's range (written only then).")

    @model_serializer(mode="wrap")
    def _runs_only_when_there_are(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)  # a score of one fit or none is written as before the runs existed
        return {key: value for key, value in data.items() if key not in _RUN_FIELDS or value is not None}
