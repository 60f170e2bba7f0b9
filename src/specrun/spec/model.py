"""The spec as a typed model: the single source of truth. `schema/spec.schema.json` is generated from it
(`python -m specrun.spec > schema/spec.schema.json`) and a test fails when the two drift. Protocol options are
typed per registered kind (a union discriminated by `kind`)."""

from __future__ import annotations

import functools
import json
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, ValidationInfo, create_model, field_validator, model_validator

from specrun.core import registry
from specrun.core.types import IntervalChoice, SimilarityRequest, Strict
from specrun.mteb.score_ref import MTEB_NAME_PATTERN, MTEB_PATTERN_MEANINGS, MtebRef
from specrun.spec._common import (
    FINGERPRINT_PATTERN,
    HUB_ID_PATTERN,
    NAME_PATTERN,
    REVISION_PATTERN,
    Count,
    FileRef,
    Fingerprint,
    ItemIds,
    Layout,
    Name,
    Revision,
    Sha256,
    Text,
)
from specrun.spec._common import MAX_NAME as MAX_NAME
from specrun.spec._common import MAX_PATH_PART as MAX_PATH_PART
from specrun.spec._compat import move_reader_options
from specrun.spec._expect import Expected
from specrun.spec._hub_source import HubDataset as HubDataset
from specrun.spec.metadata import PATTERN_MEANINGS, Metadata
from specrun.spec.sample import RowSteps, Sample

PATTERN_MEANING = {
    REVISION_PATTERN: "a full 40-hex commit hash (lower case)",
    FINGERPRINT_PATTERN: "'sha256:' and 64 hex digits (run `specrun fingerprint SPEC` to compute it)",
    NAME_PATTERN: "a lower-case name of letters, digits, '_', '.', '-'",
    HUB_ID_PATTERN: "a hub id 'owner/name'",
    **PATTERN_MEANINGS,
    **MTEB_PATTERN_MEANINGS,
}

# a subset keeps the name its data gives it (MTEB's `jpn_Jpan`); its run's id `<id>.<subset>` is in lower case
SUBSET_NAME_PATTERN = MTEB_NAME_PATTERN
SubsetName = Annotated[str, Field(pattern=SUBSET_NAME_PATTERN, max_length=MAX_NAME)]


class Licence(Strict):
    """The data licence and whether publishing results under it has been confirmed."""

    data: Text = Field(description="Licence id of the data, e.g. gpl-3.0, cc-by-sa-4.0, none-stated.")
    publication: Literal["confirmed", "unconfirmed"]
    notice: str | None = Field(None, description="Shown at the top of the card while publication is unconfirmed.")

    @model_validator(mode="after")
    def _notice_when_unconfirmed(self) -> Licence:
        if self.publication == "unconfirmed" and not self.notice:
            raise ValueError("an unconfirmed licence needs a notice for the top of the card")
        return self


class GitFile(Strict):
    path: Text = Field(description="Path in the repository (a file, or a folder for folder formats).")
    sha256: Sha256 | None = Field(None, description="sha256 of the file (of the archive when `member` is set).")
    member: Text | None = Field(None, description="A file inside a zip archive: its path in the archive, or a "
                                                   "path the archive's entry ends with after a '/'.")
    member_sha256: Sha256 | None = Field(
        None, description="sha256 of the extracted member: lets the mirror hold the member itself, or the archive.")
    contents: dict[Text, Sha256] | None = Field(None, description="Folder formats: file inside -> sha256.")
    mirror: Text | None = Field(None, description="Path inside <data-dir>/<source>/ (default: the file's name).")


class GitSource(Layout):
    """Files in a git repository at a full commit, each with its sha256; offline, the same files from the mirror."""

    type: Literal["git_file"]
    path: Annotated[str, Field(pattern=HUB_ID_PATTERN, description="Repository owner/name.")]
    revision: Revision
    licence: Text
    fetch: bool = Field(True, description="False: never downloaded (e.g. withdrawn data); only a user's mirror.")
    files: dict[Name, GitFile] = Field(min_length=1, description="Source split -> file.")
    columns: dict[Name, Text] = Field(min_length=1, description="Item field -> column of the data.")
    values: dict[Text, dict[str, str | int | float]] | None = Field(
        None, description="Column -> {value in the data: value to use}, e.g. NLI labels to numbers.")
    ids: ItemIds = ItemIds()

    @property
    def layout(self) -> Layout:
        return self

    @property
    def split_names(self) -> list[str]:
        return list(self.files)

    def file_for(self, split: str) -> FileRef:
        entry = self.files[split]
        mirror = entry.mirror or PurePosixPath(entry.path).name
        return FileRef(mirror=mirror, repo_path=entry.path, sha256=entry.sha256, member=entry.member,
                       contents=entry.contents, member_sha256=entry.member_sha256)

    def mirror_key(self, split: str) -> tuple[str, ...]:
        return ("files", split, "mirror") if self.files[split].mirror else ("files", split, "path")


Source = Annotated[HubDataset | GitSource, Field(discriminator="type")]


Scalar = str | int | float


class Not(Strict):
    not_: Scalar | list[Scalar] = Field(alias="not", description="Keep rows whose column is none of these.")


class Split(RowSteps):
    source: Name
    source_split: Name | None = Field(None, description="The one source split (file) this split reads.")
    source_splits: list[Name] | None = Field(
        None, min_length=2, description="Several source splits (files) read in this order as one split.")
    ids: Literal["running", "per_file"] = Field(
        "running", description="With source_splits: row numbers run on across files, or restart per file "
                               "with the source split's name in the id.")
    where: dict[Text, Scalar | list[Scalar] | Not] | None = Field(
        None, description="Keep rows whose column equals the value (a list: any of them; {not: ...}: none).")
    explode: list[Text] | None = Field(
        None, min_length=1, description="Columns whose cells hold lists: a row becomes one row per element (the "
                                        "columns' lists of equal length, other columns repeated); a row whose "
                                        "cells are not lists stays one row. MTEB's layouts that store a split as "
                                        "one row of lists, or a clustering set per row. `where` then tests each "
                                        "new row.")
    explode_row: Text | None = Field(None, description="With `explode`: a column the new rows get, the number (from "
                                     "0) of the row they came from: a set's id (MTEB's legacy clustering).")
    sample: Sample | None = Field(
        None, description="Keep a seeded stratified sample of the rows (after `explode` and `where`), as MTEB's "
                          "stratified_subsampling keeps them, in its order.")
    evaluate: bool = Field(True, description="Scored and reported; false for a split no protocol reads here.")
    fingerprint: Fingerprint | None = Field(
        None, description="sha256 of the mapped items; required for an evaluated split unless its file is pinned "
                          "by sha256.")
    expect: Expected | None = Field(
        None, description="The split's statistics as a reference states them; a run says where its own differ.")

    @model_validator(mode="after")
    def _one_way_to_name_files(self) -> Split:
        if (self.source_split is None) == (self.source_splits is None):
            raise ValueError("name the source split to read: `source_split: NAME`, or several read as one split: "
                             "`source_splits: [A, B]`")
        return self

    @property
    def source_split_names(self) -> list[str]:
        return [self.source_split] if self.source_split is not None else list(self.source_splits or [])


class Subset(Strict):
    seed: Annotated[Count, Field(ge=0, le=2**63 - 1, description="Seeds the subset draw and the bootstrap.")]
    splits: dict[Name, Literal["all"] | Annotated[Count, Field(gt=0)]] = Field(min_length=1)


class ProtocolSpec(Strict):
    """What every protocol entry holds; `spec_model()` makes one subclass per registered kind, whose `kind` is that
    kind and whose `options` is that kind's own options model, joined as a union discriminated by `kind`: the
    schema checks each kind's options and an editor completes them."""

    kind: Name = Field(description="Registered protocol kind, e.g. sts.")
    label: Text
    capability: Text
    similarity: SimilarityRequest = Field("cosine", description=(
        "How the kind compares vectors: cosine, dot, euclidean or manhattan (negated distances: higher is more "
        "similar), or model: the model's own similarity_fn_name (sentence-transformers' config; cosine when it "
        "states none), resolved at run time and recorded."))
    description: Text
    options: Any = Field(None, description="Options of this protocol kind.")
    roles: dict[Name, Literal["query", "document", "symmetric"]] = Field(default_factory=dict, description=(
        "Per text field, how the model embeds it, where the kind's default does not fit (bitext mining's "
        "sides are documents, a retrieval query a query): query, document or symmetric."))
    instruction: Text | None = Field(None, description=(
        "The task instruction for instruction-following models (MTEB's task prompt), e.g. 'Given a web search "
        "query, retrieve relevant passages that answer the query'; applied to queries and symmetric texts "
        "through --instruction-template, never to documents."))


class MetricSpec(Strict):
    metric: Name = Field(description="Registered metric, e.g. pearson, spearman.")
    protocol: Name
    label: Text
    direction: Literal["higher", "lower"]
    range: tuple[float, float]
    interval: IntervalChoice | None = Field(
        None, description="This metric's interval method, over uncertainty.interval (default: that).")
    mteb: MtebRef | None = Field(None, description=(
        "The metric's counterpart in MTEB's result files: {task, split, subset, score}."))

    @field_validator("range")
    @classmethod
    def _ordered(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not value[0] < value[1]:
            raise ValueError(f"range must be [low, high] with low < high, got {list(value)}")
        return value


class Uncertainty(Strict):
    method: Literal["bootstrap"] = "bootstrap"
    interval: IntervalChoice = Field(
        "auto", description="How the resamples become an interval: auto (each metric's own method, chosen from "
                            "measured coverage: bench/coverage.py), percentile, basic, centred, bca or "
                            "centred_t_runs (docs/intervals.md).")
    resamples: Count = Field(ge=100, le=100_000)
    confidence: float = Field(gt=0.5, lt=1.0, strict=True)  # a quoted number or `true` is no confidence


class Examples(Strict):
    count: Count = Field(ge=0, le=50)
    heading: Text
    columns: dict[Name, Text] = Field(min_length=1, description="'id' or item field -> column header.")


class Card(Strict):
    what_is_measured: Text
    data: Text
    items_label: Text = "Items"
    items: Text
    uncertainty: Text
    caveats: Text
    examples: Examples


class Spec(Strict):
    """A benchmark: data at a pinned revision, protocols, metrics, uncertainty and the card's prose."""

    id: Name
    title: Text
    licence: Licence
    language: list[Annotated[str, Field(pattern=r"^[a-z]{2,3}$")]] | None = Field(
        None, description="The data's languages as ISO 639 codes (e.g. [ja]); stated on the hub's dataset card.")
    sources: dict[Name, Source] = Field(min_length=1)
    splits: dict[Name, Split] = Field(min_length=1)
    subset: Subset
    protocols: dict[Name, ProtocolSpec] = Field(min_length=1)
    metrics: dict[Name, MetricSpec] = Field(min_length=1)
    uncertainty: Uncertainty
    card: Card | None = Field(None, description="The card's prose and examples; a local spec may leave it out (no "
                                                "card sections in its report; publishing is refused).")
    metadata: Metadata | None = Field(None, description="MTEB's task metadata keys (languages, domains, ...).")
    citation: str | None = None
    subsets: dict[SubsetName, dict[str, Any]] | None = Field(None, description=(
        "Named parts (language pairs, domains): overrides merged as `extends` merges, each run as `<id>.<subset>` "
        "(in lower case; two names that differ only in case are refused)."))

    @model_validator(mode="before")
    @classmethod
    def _reader_options_under_options(cls, data: Any, info: ValidationInfo) -> Any:
        """Older specs stay valid: their top-level reader options move under `options`; the loader says where."""
        moved = (info.context or {}).get("moved_reader_options")
        return move_reader_options(data, moved)

    @property
    def evaluated_splits(self) -> list[str]:
        return [name for name, split in self.splits.items() if split.evaluate]

    def mteb_cells(self, metric_id: str) -> list[tuple[str, MtebRef]]:
        """Each evaluated split whose score of `metric_id` has an MTEB counterpart, with that counterpart (its
        `split` the MTEB split of that cell); none without an `mteb` key."""
        ref = self.metrics[metric_id].mteb
        return [] if ref is None else ref.cells(self.evaluated_splits)

    def mteb_ref(self, metric_id: str, split: str) -> MtebRef | None:
        """The MTEB counterpart of `metric_id`'s score on the evaluated `split`, if it has one."""
        return dict(self.mteb_cells(metric_id)).get(split)


def _protocol_models() -> list[type[ProtocolSpec]]:
    models = []
    for kind, protocol in registry.PROTOCOLS.items():
        options = protocol.Options
        required = any(field.is_required() for field in options.model_fields.values())
        models.append(create_model(
            f"{''.join(part.title() for part in kind.split('_'))}Protocol", __base__=ProtocolSpec,
            __doc__=f"A protocol of kind {kind}: {next(iter((protocol.__doc__ or '').strip().splitlines()), kind)}",
            kind=(Literal[kind], Field(description="Registered protocol kind.")),
            options=(options, Field(description=f"Options of kind {kind}.")) if required
            else (options, Field(default_factory=options, description=f"Options of kind {kind}."))))
    return models


@functools.cache
def _spec_model(kinds: tuple[tuple[str, type[BaseModel]], ...]) -> type[Spec]:
    members = _protocol_models()
    entry: Any = members[0] if len(members) == 1 else Annotated[Union[tuple(members)],  # noqa: UP007
                                                                   Field(discriminator="kind")]
    return create_model("Spec", __base__=Spec, __doc__=Spec.__doc__,
                        protocols=(dict[Name, entry], Field(min_length=1)))


def spec_model() -> type[Spec]:
    """The spec model for the protocol kinds registered now (built once per set of kinds and their options
    models, so a kind registered again with other options is typed by those)."""
    return _spec_model(tuple((kind, entry.Options) for kind, entry in registry.PROTOCOLS.items()))


def json_schema() -> dict[str, Any]:
    schema = spec_model().model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/specrun/specrun/schema/spec.schema.json"
    return schema


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
