"""results.json's model: what a run wrote, typed and validated (every reader shows these types)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from specrun.core.settings import AppliedPrompt, EncoderSettings
from specrun.core.types import Score, Similarity, SimilarityRequest, Strict

RESULTS_FORMAT = "specrun.results/1"


PREDICTIONS_FILE = "predictions.jsonl"


RESULTS_LIMIT = 16 << 20  # bytes: a results.json is a few kB; anything near this is not one


PREDICTIONS_LIMIT = 1 << 30  # bytes: about ten million units of predictions


RECORDED_PACKAGES = ("specrun", "numpy", "scipy", "torch", "transformers", "sentence-transformers", "datasets",
                     "tokenizers", "pydantic", "matplotlib")


class MetricInfo(Strict):
    """What a metric id means, so results can be compared and exported without the spec."""

    metric: str
    protocol: str
    protocol_kind: str
    label: str
    direction: Literal["higher", "lower"]
    range: tuple[float, float] | None = Field(None, description="The spec's range of the metric: every interval is "
                                                                "clipped to it (absent in older results).")


class PredictionsRef(Strict):
    """The per-unit predictions beside results.json (JSON Lines), pinned by sha256."""

    file: str
    sha256: str
    rows: int


class TextCounts(Strict):
    total: int = Field(ge=0, description="Texts the protocols asked for, duplicates included.")
    unique: int = Field(ge=0)
    encoded: int = Field(ge=0, description="Texts sent to the model in this run.")


class RerankerProvenance(Strict):
    """The cross-encoder of a two-stage run (--reranker; which documents: `rerank_top_k`): its weights, and how
    many (query, document) pairs this spec asked it for and it scored in this run (the rest: its pair cache)."""

    name: str
    origin: Literal["bundled", "local", "hub"]
    revision: str | None
    weights_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    max_length: int | None = Field(None, description="Tokens per pair, as the cross-encoder applied it (None: "
                                                     "every pair came from the cache).")
    pairs: int = Field(ge=0)
    scored: int = Field(ge=0)


class ModelProvenance(EncoderSettings):
    """The encoder's own description, validated as it goes into results.json: the model (encoders.ModelRef), every
    setting as the adapter applied it (EncoderSettings, inherited: a new setting is recorded without an edit here)
    and what follows from the model (encoders.EncoderInfo); a test keeps them in step."""

    name: str
    path: str
    origin: Literal["bundled", "local", "hub"]
    revision: str | None
    weights_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="A content digest of the weights, always.")
    pooling: str
    normalize: bool
    device: str
    prompts: tuple[AppliedPrompt, ...] = Field((), description=(
        "The prompt each view of the spec's texts got (role, task type, instruction): its text, and where it came "
        "from (a flag, the instruction template, the model's config, the model's default prompt, none)."))
    reranker_model: RerankerProvenance | None = None  # --reranker: the second stage's cross-encoder


class ModelMeta(Strict):
    """The model as MTEB's ModelMeta describes one, each field only where something states or measures it
    (`sources` names where): parameters counted from the safetensors headers, the weight files' bytes, the
    model's own token limit, the vectors' dimension, the encode's peak memory (absent when every vector came
    from the cache), and the licence, languages, base model and training datasets of the model card's front
    matter. Peak memory varies between runs: nothing compares, keys or labels runs by it."""

    n_parameters: int | None = Field(None, description="Floating-point tensor elements of the safetensors files.")
    embed_dim: int | None = Field(None, description="Width of the vectors the run scored (after --truncate-dim).")
    max_tokens: int | None = Field(None, description="The model's own tokens per text (its config's).")
    weights_bytes: int | None = Field(None, description="Bytes of the weight files of the model folder.")
    peak_memory_bytes: int | None = Field(None, description="Peak memory of this run's load and encode.")
    peak_memory_measure: str | None = Field(None, description="What peak_memory_bytes measures.")
    license: str | None = None
    languages: list[str] | None = None
    base_model: list[str] | None = None
    training_datasets: list[str] | None = None
    similarity_fn_name: str | None = Field(None, description="As config_sentence_transformers.json states it.")
    sources: dict[str, str] = Field(default_factory=dict, description="Field -> where it was read or measured.")


class SplitProvenance(Strict):
    source: str
    origin: str
    path: str
    revision: str
    licence: str
    fingerprint: str
    n_source: int
    n_selected: int
    selection: str
    files: dict[str, str] = Field(default_factory=dict,
                                  description="File inside its source -> sha256 of the bytes read (no local path); "
                                              "for a folder format's pinned copy of a hub repo, each pinned file of "
                                              "the copy, all checked before the read.")


class Uncertainty(Strict):
    method: str
    interval: str
    resamples: int
    confidence: float
    seed: int
    unit: dict[str, str] = Field(description="Protocol -> the unit the bootstrap resamples.")


class SimilarityUsed(Strict):
    """How a protocol compared vectors: as its spec asked (`model`: the model's own) and the function applied."""

    requested: SimilarityRequest
    function: Similarity


class Provenance(Strict):
    spec_path: str
    spec_sha256: str
    subset: str | None = Field(None, description="The subset of the spec file's `subsets` this run scored.")
    splits: list[str] | None = Field(None, description="The evaluated splits --splits chose (absent: all of them).")
    limit: int | None = Field(None, gt=0, description="--limit: the first N items of each split were read (a smoke "
                                                     "run, refused by compare, leaderboard and publish).")
    specrun_version: str
    created: str
    data: dict[str, SplitProvenance]
    model: ModelProvenance
    model_meta: ModelMeta | None = Field(None, description="What the model is (absent in older results).")
    uncertainty: Uncertainty
    similarity: dict[str, SimilarityUsed] = Field(
        default_factory=dict, description="Protocol -> how it compared vectors (absent in older results: cosine).")
    packages: dict[str, str]
    timings_s: dict[str, float]


class Spread(Strict):
    """The smallest, mean and largest of a per-item count, a text length or a value."""

    min: int | float
    mean: float
    max: int | float


class FieldStatistics(Strict):
    """One item field of a split, described as its kind allows (the other keys stay null)."""

    kind: str = Field(description="The field's kind as the protocol kind declares it (text, label, corpus, ...).")
    unique: int | None = Field(None, description="Distinct texts (text and texts fields).")
    length: Spread | None = Field(None, description="Characters (code points) per text.")
    per_item: Spread | None = Field(None, description="Entries per item: texts of a list, candidates of a query.")
    values: Spread | None = Field(None, description="The numbers themselves (gold scores, targets).")
    labels: dict[str, int] | None = Field(None, description="Items per label (label and binary fields).")
    relevant: Spread | None = Field(None, description="Relevant documents or candidates per query.")
    documents: int | None = Field(None, description="Documents of a corpus; their texts stay on disk and are not "
                                                    "measured here.")


class SplitStatistics(Strict):
    """What the items of a split are like, computed from them at run time (MTEB's descriptive statistics)."""

    n: int = Field(ge=0, description="Items read for the split (after the subset).")
    evaluated: bool = Field(description="False for a split a protocol only fits on.")
    unique_texts: int = Field(ge=0, description="Distinct texts across the split's text fields (a corpus aside).")
    fields: dict[str, FieldStatistics]


class CardExample(Strict):
    """A row the card quotes: its id and the fields the card's examples show."""

    id: str
    fields: dict[str, Any]


class Results(Strict):
    format: Literal["specrun.results/1"] = RESULTS_FORMAT
    spec_id: str
    title: str
    licence: str
    publication: Literal["confirmed", "unconfirmed"]
    scores: dict[str, dict[str, Score]] = Field(description="split -> metric id -> score")
    metrics: dict[str, MetricInfo]
    texts: TextCounts
    predictions: PredictionsRef
    plots: dict[str, str] = Field(default_factory=dict, description="split/protocol -> PNG file beside the report")
    provenance: Provenance
    statistics: dict[str, SplitStatistics] | None = Field(
        None, description="split -> its descriptive statistics (absent in results written before they were kept)")
    card_examples: list[CardExample] | None = Field(
        None, description="The rows the report's card quotes, so `card --results` renders from the run alone "
                          "(absent: the card shows none, or results written before they were kept)")


Unit = tuple[str, str]  # (split, protocol)
