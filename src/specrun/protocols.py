"""Protocol stage: which texts a kind of evaluation needs, and how embeddings become per-unit predictions.

A protocol never knows which benchmark it serves. A new protocol is one class plus one registration
(`registry.PROTOCOLS.register(kind, instance)`), and the class carries its metadata: `item_fields` (field -> kind
of `types.FIELD_KINDS`, converted and checked by the data stage), `outputs` (the per-unit arrays its metrics read),
`unit` (what the bootstrap resamples), `Options` (the pydantic model of `protocols.<name>.options`, part of the
spec's schema), `plot` (the outputs drawn against each other, or None), `hub_task` and `hub_task_id` (the hub's
task type and subtask) and
`caption` (the report's caption for its plot); then `validate_items()`, `texts()` and `run()`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from specrun import registry
from specrun.errors import DataError, SpecrunError
from specrun.types import RANK_CUTOFFS, Embed, Item, Outputs

__all__ = ["PROTOCOLS", "RANK_CUTOFFS", "Embed", "Item", "Outputs"]  # the shared types, re-exported for callers


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


COSINE_DECIMALS = 12


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of a with the same row of b, in float64, rounded to 12 decimals; a zero vector is an
    error, not a NaN.

    Rounding makes mathematically equal cosines equal numbers: a pair of identical sentences gives 1 +- 2e-16
    depending on the formula, and rank metrics must see such values as ties. Embeddings are float32 (about 7
    digits), so nothing real lies below 1e-12."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norm_a = np.linalg.norm(a, axis=1)
    norm_b = np.linalg.norm(b, axis=1)
    if np.any(norm_a == 0) or np.any(norm_b == 0):
        raise SpecrunError("the model returned a zero embedding; cosine is undefined")
    return np.round(np.einsum("ij,ij->i", a, b) / (norm_a * norm_b), COSINE_DECIMALS)


class StsProtocol:
    """Zero-shot STS: embed each sentence on its own; the prediction is the cosine of the pair."""

    item_fields: ClassVar[dict[str, str]] = {"text1": "text", "text2": "text", "gold": "number"}
    outputs: ClassVar[tuple[str, ...]] = ("prediction", "gold")
    unit: ClassVar[str] = "pairs"
    Options = NoOptions
    plot: ClassVar[tuple[str, str] | None] = ("prediction", "gold")
    hub_task: ClassVar[str] = "sentence-similarity"
    hub_task_id: ClassVar[str] = "semantic-similarity-scoring"
    caption: ClassVar[str] = "predicted similarity against gold"

    def validate_items(self, items: Sequence[Item], options: BaseModel, origin: str) -> None:
        return None

    def texts(self, items: Sequence[Item], options: BaseModel) -> Iterator[str]:
        for item in items:
            yield item.fields["text1"]
            yield item.fields["text2"]

    def run(self, items: Sequence[Item], embed: Embed, options: BaseModel) -> Outputs:
        left = embed([item.fields["text1"] for item in items])
        right = embed([item.fields["text2"] for item in items])
        prediction = cosine_rows(left, right)
        gold = np.array([item.fields["gold"] for item in items], dtype=np.float64)
        return Outputs(unit=self.unit, ids=[item.id for item in items],
                       arrays={"prediction": prediction, "gold": gold})


def rank_measures(relevance_in_rank_order: np.ndarray, n_relevant: int) -> dict[str, float]:
    """AP, RR, P@k, R@k and nDCG@10 of one ranked list of binary relevance.

    AP divides by the number of relevant items; P@k divides by min(k, list length) even when fewer are relevant
    (trec_eval's P_k divides by k; the two differ only for lists shorter than k)."""
    rel = np.asarray(relevance_in_rank_order, dtype=np.float64)
    ranks = np.arange(1, len(rel) + 1)
    hits = np.cumsum(rel)
    found = np.flatnonzero(rel)
    out = {
        "ap": float(np.sum(hits[found] / ranks[found]) / n_relevant),
        "rr": float(1.0 / (found[0] + 1)) if len(found) else 0.0,
    }
    for k in RANK_CUTOFFS:
        cut = min(k, len(rel))
        out[f"precision_at_{k}"] = float(hits[cut - 1] / cut)
        out[f"recall_at_{k}"] = float(hits[cut - 1] / n_relevant)
    discounts = 1.0 / np.log2(np.arange(2, 12))
    dcg = float(np.sum(rel[:10] * discounts[: min(10, len(rel))]))
    ideal = float(np.sum(discounts[: min(10, n_relevant)]))
    out["ndcg_at_10"] = dcg / ideal
    return out


class RetrievalProtocol:
    """Per query, rank its candidates by cosine, highest first; ties keep the candidates' order in the data
    (a stable sort), so a run is reproducible on any machine. Measures are per query; metrics average them."""

    item_fields: ClassVar[dict[str, str]] = {"query": "text", "candidates": "texts", "relevance": "labels"}
    outputs: ClassVar[tuple[str, ...]] = ("ap", "rr", *(f"{m}_at_{k}" for m in ("precision", "recall")
                                                         for k in RANK_CUTOFFS), "ndcg_at_10")
    unit: ClassVar[str] = "queries"
    Options = NoOptions
    plot: ClassVar[tuple[str, str] | None] = None
    hub_task: ClassVar[str] = "text-retrieval"
    hub_task_id: ClassVar[str] = "document-retrieval"
    caption: ClassVar[str] = ""

    def validate_items(self, items: Sequence[Item], options: BaseModel, origin: str) -> None:
        for item in items:
            if len(item.fields["candidates"]) != len(item.fields["relevance"]):
                raise DataError(f"query {item.id}: {len(item.fields['candidates'])} candidates but "
                                f"{len(item.fields['relevance'])} labels", file=origin)
            if not any(item.fields["relevance"]):
                raise DataError(f"query {item.id}: no relevant candidate; AP is undefined", file=origin)

    def texts(self, items: Sequence[Item], options: BaseModel) -> Iterator[str]:
        for item in items:
            yield item.fields["query"]
            yield from item.fields["candidates"]

    def run(self, items: Sequence[Item], embed: Embed, options: BaseModel) -> Outputs:
        measures: dict[str, list[float]] = {name: [] for name in self.outputs}
        for item in items:
            candidates = item.fields["candidates"]
            query = embed([item.fields["query"]])
            matrix = embed(candidates)
            scores = cosine_rows(np.repeat(query, len(candidates), axis=0), matrix)
            if np.ptp(scores) == 0:
                raise SpecrunError(f"query {item.id}: every candidate has the same score; the ranking is arbitrary")
            order = np.argsort(-scores, kind="stable")
            relevance = np.asarray(item.fields["relevance"])[order]
            for name, value in rank_measures(relevance, int(np.sum(relevance))).items():
                measures[name].append(value)
        return Outputs(unit=self.unit, ids=[item.id for item in items],
                       arrays={name: np.array(values) for name, values in measures.items()})


_PLACEHOLDER = re.compile(r"\{(sentence|condition)\}")


class ConditionalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    template: str = Field(description="Text embedded for a sentence under a condition; {sentence}, {condition}.")
    condition_template: str = Field("{condition}", description="Text embedded for the condition alone.")
    subtract_condition: bool = Field(description="Subtract the condition's embedding from the conditional one.")
    invalid_gold: float | None = Field(None, description="Rows with this gold (e.g. -1) are excluded.")

    @field_validator("template")
    @classmethod
    def _has_sentence(cls, value: str) -> str:
        if "{sentence}" not in value:
            raise ValueError("template must contain {sentence}")
        return value


def fill(template: str, sentence: str, condition: str) -> str:
    """Substitute {sentence} and {condition} once each; braces inside the texts are left alone."""
    values = {"sentence": sentence, "condition": condition}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


class ConditionalStsProtocol:
    """Conditional STS: rows come in adjacent pairs (same two sentences, two conditions). Each sentence is
    embedded under its condition (a template), optionally minus the condition's own embedding; the
    prediction is the cosine of the two. The unit is the sentence pair with its two conditions."""

    item_fields: ClassVar[dict[str, str]] = {"text1": "text", "text2": "text", "condition": "text",
                                             "gold": "number"}
    outputs: ClassVar[tuple[str, ...]] = ("prediction_a", "prediction_b", "gold_a", "gold_b", "valid_a", "valid_b")
    unit: ClassVar[str] = "sentence pairs"
    Options = ConditionalOptions
    plot: ClassVar[tuple[str, str] | None] = None
    hub_task: ClassVar[str] = "sentence-similarity"
    hub_task_id: ClassVar[str] = "semantic-similarity-scoring"
    caption: ClassVar[str] = ""

    def validate_items(self, items: Sequence[Item], options: BaseModel, origin: str) -> None:
        if len(items) % 2:
            raise DataError(f"{len(items)} rows; conditional rows come in adjacent pairs", file=origin)
        for first, second in zip(items[::2], items[1::2], strict=True):
            for key in ("text1", "text2"):
                if first.fields[key] != second.fields[key]:
                    raise DataError(f"items {first.id} and {second.id} form a pair but differ in {key}", file=origin)

    def _conditioned(self, item: Item, key: str, options: ConditionalOptions) -> str:
        return fill(options.template, item.fields[key], item.fields["condition"])

    def texts(self, items: Sequence[Item], options: BaseModel) -> Iterator[str]:
        assert isinstance(options, ConditionalOptions)
        for item in items:
            yield self._conditioned(item, "text1", options)
            yield self._conditioned(item, "text2", options)
            if options.subtract_condition:
                yield fill(options.condition_template, "", item.fields["condition"])

    def run(self, items: Sequence[Item], embed: Embed, options: BaseModel) -> Outputs:
        assert isinstance(options, ConditionalOptions)
        left = embed([self._conditioned(item, "text1", options) for item in items]).astype(np.float64)
        right = embed([self._conditioned(item, "text2", options) for item in items]).astype(np.float64)
        if options.subtract_condition:
            condition = embed([fill(options.condition_template, "", item.fields["condition"]) for item in items])
            left, right = left - condition, right - condition
        prediction = cosine_rows(left, right)
        gold = np.array([item.fields["gold"] for item in items], dtype=np.float64)
        valid = np.ones_like(gold) if options.invalid_gold is None else (gold != options.invalid_gold) * 1.0
        return Outputs(unit=self.unit, ids=[item.id for item in items[::2]], arrays={
            "prediction_a": prediction[::2], "prediction_b": prediction[1::2],
            "gold_a": gold[::2], "gold_b": gold[1::2], "valid_a": valid[::2], "valid_b": valid[1::2]})


PROTOCOLS = registry.PROTOCOLS
for _kind, _protocol in (("sts", StsProtocol()), ("retrieval", RetrievalProtocol()),
                         ("conditional_sts", ConditionalStsProtocol())):
    PROTOCOLS.register(_kind, _protocol)

from specrun import corpus  # noqa: E402,F401  registers the corpus protocol
