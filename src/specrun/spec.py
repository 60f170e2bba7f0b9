"""Spec stage: YAML -> validated, typed benchmark spec.

The pydantic model below is the single source of truth; `schema/spec.schema.json` is generated from it
(`python -m specrun.spec > schema/spec.schema.json`) and a test fails when the two drift.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from specrun.core import registry
from specrun.core.errors import SpecError
from specrun.yamlsafe import KeyPath, LocatedYaml, read_yaml

REVISION_PATTERN = r"^[0-9a-f]{40}$"
FINGERPRINT_PATTERN = r"^sha256:[0-9a-f]{64}$"
NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"
HUB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$"

_PATTERN_MEANING = {
    REVISION_PATTERN: "a full 40-hex commit hash (lower case)",
    FINGERPRINT_PATTERN: "'sha256:' and 64 hex digits (run `specrun fingerprint SPEC` to compute it)",
    NAME_PATTERN: "a lower-case name of letters, digits, '_', '.', '-'",
    HUB_ID_PATTERN: "a hub id 'owner/name'",
}

Revision = Annotated[str, Field(pattern=REVISION_PATTERN, description="Full 40-hex commit hash.")]
Fingerprint = Annotated[str, Field(pattern=FINGERPRINT_PATTERN, description="sha256 of the mapped items.")]
MAX_NAME = 64  # ids, split, source, protocol and metric names become folder and file names: keep them short
MAX_PATH_PART = 255  # bytes in one path component: what ext4, xfs, btrfs and tmpfs accept
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=MAX_NAME)]
Count = Annotated[int, Field(strict=True)]  # a YAML `true` is not the number 1
Text = Annotated[str, Field(min_length=1)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


class Layout(Strict):
    """How a source's files are read: the format, and its options."""

    format: Annotated[str, Field(json_schema_extra=lambda schema: schema.update(enum=sorted(registry.readers())),
                                 description="A registered reader (`specrun list --formats`).")]
    quoting: Literal["minimal", "none"] = Field("minimal", description="tsv/csv: 'none' reads quotes as text.")
    names: list[Text] | None = Field(None, description="Column names of a file without a header row.")
    optional_names: list[Text] | None = Field(
        None, description="tsv/csv: trailing fields a row may lack (null when absent), after the named columns.")
    extra_fields: Literal["error", "ignore"] = Field(
        "error", description="tsv/csv: what to do with fields beyond the named (and optional) columns.")
    options: dict[Name, Any] = Field(default_factory=dict, description="Options of a plugin reader.")


class Mirror(Layout):
    """Where the data lies in a local mirror: <data-dir>/<source name>/<file>, one file per source split."""

    files: dict[Name, Text] = Field(min_length=1, description="Source split -> path inside the source's folder.")


class ItemIds(Strict):
    """How items are named: a column of the data, or the row number (0-based, zero-padded to `width`)."""

    prefix: str = ""
    column: str | None = None
    width: Count = Field(0, ge=0, le=12)


@dataclass(frozen=True)
class FileRef:
    """One source split's file: where it lies in the mirror and, for git sources, where upstream and its hash."""

    mirror: str
    repo_path: str | None = None
    sha256: str | None = None
    member: str | None = None
    contents: dict[str, str] | None = None
    member_sha256: str | None = None

    @property
    def pinned(self) -> bool:
        return self.sha256 is not None or bool(self.contents) or self.member_sha256 is not None


class HubDataset(Strict):
    """A Hugging Face hub dataset at a commit, read with `datasets` (config, data files, split). Offline: either
    mirror files read like any file source (`mirror`), or a local copy of the dataset repo in
    <data-dir>/<source>/ read by `datasets` with the very same arguments (`splits` without `mirror`)."""

    type: Literal["hf_dataset"]
    path: Annotated[str, Field(pattern=HUB_ID_PATTERN)]
    revision: Revision
    licence: Text
    config: Text | None = Field(None, description="The dataset's config (subset) name.")
    data_files: dict[Name, Text | list[Text]] | None = Field(
        None, description="Split -> file pattern(s) inside the dataset repo, as `load_dataset(data_files=...)`.")
    splits: list[Name] | None = Field(None, description="The dataset's splits this spec reads (without `mirror`).")
    mirror: Mirror | None = None
    columns: dict[Name, Text] = Field(min_length=1, description="Item field -> column of the data.")
    values: dict[Text, dict[str, str | int | float]] | None = Field(
        None, description="Column -> {value in the data: value to use}, e.g. NLI labels to numbers.")
    ids: ItemIds = ItemIds()

    @model_validator(mode="after")
    def _mirror_or_splits(self) -> HubDataset:
        if self.mirror is None and not self.splits and not self.data_files:
            raise ValueError("name the dataset's splits (`splits: [test]`), its `data_files`, or mirror files "
                             "(`mirror`)")
        return self

    @property
    def layout(self) -> Layout:
        return self.mirror if self.mirror is not None else Layout(format="hf_dataset")

    @property
    def split_names(self) -> list[str]:
        if self.mirror is not None:
            return list(self.mirror.files)
        return list(self.splits or self.data_files or [])

    def file_for(self, split: str) -> FileRef:
        return FileRef(mirror=self.mirror.files[split] if self.mirror is not None else ".")

    def mirror_key(self, split: str) -> tuple[str, ...]:
        return ("mirror", "files", split) if self.mirror is not None else ("splits",)


Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


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


class Split(Strict):
    source: Name
    source_split: Name | None = Field(None, description="The one source split (file) this split reads.")
    source_splits: list[Name] | None = Field(
        None, min_length=2, description="Several source splits (files) read in this order as one split.")
    ids: Literal["running", "per_file"] = Field(
        "running", description="With source_splits: row numbers run on across files, or restart per file "
                               "with the source split's name in the id.")
    where: dict[Text, Scalar | list[Scalar] | Not] | None = Field(
        None, description="Keep rows whose column equals the value (a list: any of them; {not: ...}: none).")
    evaluate: bool = Field(True, description="Scored and reported; false for a split no protocol reads here.")
    fingerprint: Fingerprint | None = Field(
        None, description="sha256 of the mapped items; required for an evaluated split unless its file is pinned "
                          "by sha256.")

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
    similarity: Literal["cosine"] = "cosine"
    description: Text
    options: Any = Field(None, description="Options of this protocol kind.")


class MetricSpec(Strict):
    metric: Name = Field(description="Registered metric, e.g. pearson, spearman.")
    protocol: Name
    label: Text
    direction: Literal["higher", "lower"]
    range: tuple[float, float]

    @field_validator("range")
    @classmethod
    def _ordered(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not value[0] < value[1]:
            raise ValueError(f"range must be [low, high] with low < high, got {list(value)}")
        return value


class Uncertainty(Strict):
    method: Literal["bootstrap"] = "bootstrap"
    interval: Literal["percentile"] = "percentile"
    resamples: Count = Field(ge=100, le=100_000)
    confidence: float = Field(gt=0.5, lt=1.0)


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
    card: Card
    citation: str | None = None

    @property
    def evaluated_splits(self) -> list[str]:
        return [name for name, split in self.splits.items() if split.evaluate]


def _protocol_models() -> list[type[ProtocolSpec]]:
    models = []
    for kind, protocol in registry.PROTOCOLS.items():
        options = protocol.Options
        required = any(field.is_required() for field in options.model_fields.values())
        models.append(create_model(
            f"{''.join(part.title() for part in kind.split('_'))}Protocol", __base__=ProtocolSpec,
            __doc__=f"A protocol of kind {kind}: {(protocol.__doc__ or '').strip().splitlines()[0]}",
            kind=(Literal[kind], Field(description="Registered protocol kind.")),
            options=(options, Field(description=f"Options of kind {kind}.")) if required
            else (options, Field(default_factory=options, description=f"Options of kind {kind}."))))
    return models


@functools.cache
def _spec_model(kinds: tuple[str, ...]) -> type[Spec]:
    members = _protocol_models()
    entry: Any = members[0] if len(members) == 1 else Annotated[Union[tuple(members)],  # noqa: UP007
                                                                   Field(discriminator="kind")]
    return create_model("Spec", __base__=Spec, __doc__=Spec.__doc__,
                        protocols=(dict[Name, entry], Field(min_length=1)))


def spec_model() -> type[Spec]:
    """The spec model for the protocol kinds registered now (built once per set of kinds)."""
    return _spec_model(tuple(registry.PROTOCOLS))


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec with where it came from: errors found later (data, metrics) still point at lines."""

    spec: Spec
    path: Path
    display: str
    sha256: str
    located: LocatedYaml

    def error(self, path: KeyPath, message: str) -> SpecError:
        return self.located.error(path, message)


def load_spec(path: Path | str, *, require_fingerprints: bool = True) -> LoadedSpec:
    path = Path(path)
    located = read_yaml(path, str(path))
    if not isinstance(located.data, dict):
        raise SpecError("expected a mapping of spec keys at the top level", file=located.file, line=1)
    model = spec_model()
    try:
        spec = model.model_validate(located.data)
    except ValidationError as exc:
        raise _first_error(exc, located, model) from None
    _check_references(spec, located, require_fingerprints)
    return LoadedSpec(spec=spec, path=path, display=str(path), sha256=located.sha256, located=located)


# What a key accepts, in the spec's own words, for values of the wrong shape where pydantic's sentence would not
# tell the author what to write instead.
KEY_HINTS = {
    "source_split": "a split reads one source split (a name); to combine files, use `source_splits: [A, B]`",
    "source_splits": "a list of two or more source split names, read in that order as one split",
    "member": "the name of one file inside the zip archive (e.g. data/test.csv)",
    "member_sha256": "the sha256 (64 hex digits) of the member once extracted",
    "where": "column: value (a value, a list of values, or {not: value or list})",
    "values": "column: {value in the data: value to use}, e.g. label: {entailment: 2, neutral: 1}",
    "files": "source split: file (`path`, `sha256`, optional `member`, `member_sha256`, `mirror`)",
    "optional_names": "a list of the trailing field names a row may lack",
    "names": "a list of column names, for a file without a header row",
}
_SHAPE_ERRORS = ("string_type", "list_type", "dict_type", "model_type", "model_attributes_type", "int_type",
                 "too_short")


def _first_error(exc: ValidationError, located: LocatedYaml, model: type[BaseModel]) -> SpecError:
    errors = exc.errors(include_url=False)
    err = errors[0]
    raw_loc = tuple(err["loc"])
    loc = _yaml_path(raw_loc, located.data, missing=err["type"] == "missing")
    kind = err["type"]
    given = err.get("input")
    named = [part for part in loc if isinstance(part, str)]
    if named and named[-1] in KEY_HINTS and (kind in _SHAPE_ERRORS or all(
            e["type"] in _SHAPE_ERRORS for e in errors if _yaml_path(tuple(e["loc"]), located.data) == loc)):
        shown = f" (got {given!r})" if not isinstance(given, dict) else ""
        return located.error(loc, f"expected {KEY_HINTS[named[-1]]}{shown}")
    branches = [e for e in errors if _yaml_path(tuple(e["loc"]), located.data) == loc]
    if len(branches) > 1 and kind != "extra_forbidden":  # one value failed every branch of a union
        options = " or ".join(dict.fromkeys(_branch_message(e) for e in branches))
        more = len(errors) - len(branches)
        return located.error(loc, f"{options} (got {given!r})" + (f" (+{more} more)" if more else ""))
    if kind == "union_tag_invalid" and loc[:1] == ("protocols",) and len(loc) == 2:
        tag = str(err.get("ctx", {}).get("tag"))
        return located.error((*loc, "kind"), f"unknown protocol kind {tag!r}"
                                             f"{registry.did_you_mean(tag, list(registry.PROTOCOLS))}; expected "
                                             f"one of: {', '.join(registry.PROTOCOLS)}")
    if kind == "extra_forbidden":
        what = "option" if "options" in loc[:-1] else "key"
        message = f"unknown {what}; expected one of: {', '.join(_allowed_keys(raw_loc[:-1], model))}"
    elif kind == "missing":
        message = "required key is missing"
    elif kind == "string_pattern_mismatch":
        pattern = err.get("ctx", {}).get("pattern", "")
        message = f"expected {_PATTERN_MEANING.get(pattern, 'text matching ' + pattern)}, got {given!r}"
    elif kind in ("literal_error", "enum"):
        message = f"expected {err.get('ctx', {}).get('expected', 'one of the allowed values')}, got {given!r}"
    elif kind == "union_tag_invalid":
        message = f"expected type {err.get('ctx', {}).get('expected_tags', '')}, got {err.get('ctx', {}).get('tag')!r}"
    else:
        message = err["msg"].removeprefix("Value error, ")
        if not isinstance(given, (dict, list)) and given is not None:
            message += f" (got {given!r})"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return located.error(loc, message + more)


def _branch_message(err: Any) -> str:
    if err["type"] in ("literal_error", "enum"):
        return f"expected {err.get('ctx', {}).get('expected', 'an allowed value')}"
    return err["msg"].removeprefix("Value error, ")


def _yaml_path(loc: tuple[Any, ...], data: Any, missing: bool = False) -> KeyPath:
    """pydantic's error location as a path in the YAML: union tags (e.g. 'hf_dataset') are not keys there."""
    path: list[str | int] = []
    current = data
    for position, part in enumerate(loc):
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and part < len(current)
        if in_dict or in_list:
            path.append(part)
            current = current[part]
        elif missing and position == len(loc) - 1 and isinstance(part, (str, int)):
            path.append(part)  # a missing key: named, though it has no line of its own
    return tuple(path)


def _allowed_keys(loc: tuple[Any, ...], model: type[BaseModel]) -> list[str]:
    """The keys the model accepts at `loc`, for an 'unknown key' message."""
    annotation: Any = model
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if part not in annotation.model_fields:
                return []
            annotation = annotation.model_fields[part].annotation
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        elif get_origin(annotation) in (Union, UnionType):
            members = [m for m in get_args(annotation) if isinstance(m, type) and issubclass(m, BaseModel)]
            tagged = [m for m in members for tag in ("type", "kind")
                      if tag in m.model_fields and part in get_args(m.model_fields[tag].annotation)]
            if not tagged:
                return []
            annotation = tagged[0]
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _unwrap(annotation: Any) -> Any:
    """Annotated[X, ...] -> X; X | None -> X (a union of models is kept)."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation = get_args(annotation)[0]
            continue
        if get_origin(annotation) in (Union, UnionType):
            members = [m for m in get_args(annotation) if m is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _check_references(spec: Spec, located: LocatedYaml, require_fingerprints: bool) -> None:
    """Checks across keys that pydantic's per-field validation cannot see; each names its own line."""
    for source_name, source in spec.sources.items():
        for split_name in source.split_names:
            ref = source.file_for(split_name)
            for text in (ref.mirror, ref.repo_path, *(ref.contents or {})):
                if text is not None and not _relative_inside(text):
                    raise located.error(("sources", source_name, *source.mirror_key(split_name)),
                                        f"{text!r} must be a relative path inside the source's folder")
                long = [part for part in PurePosixPath(text or "").parts if len(part.encode()) > MAX_PATH_PART]
                if long:
                    raise located.error(("sources", source_name, *source.mirror_key(split_name)),
                                        f"path component of {len(long[0].encode())} bytes; a file system takes "
                                        f"at most {MAX_PATH_PART}")
    for source_name, source in spec.sources.items():
        _check_layout(source, ("sources", source_name, "mirror") if isinstance(source, HubDataset)
                      else ("sources", source_name), located)
    for name, split in spec.splits.items():
        if split.source not in spec.sources:
            raise located.error(("splits", name, "source"),
                                f"unknown source {split.source!r}; expected one of: {', '.join(spec.sources)}")
        source = spec.sources[split.source]
        key = "source_split" if split.source_split is not None else "source_splits"
        for position, source_split in enumerate(split.source_split_names):
            if source_split not in source.split_names:
                raise located.error(("splits", name, key) + ((position,) if key == "source_splits" else ()),
                                    f"source {split.source!r} has no split {source_split!r}; "
                                    f"it has: {', '.join(source.split_names)}")
        if len(set(split.source_split_names)) != len(split.source_split_names):
            raise located.error(("splits", name, key), "a source split is listed twice")
        pinned = all(source.file_for(part).pinned for part in split.source_split_names)
        if require_fingerprints and split.evaluate and split.fingerprint is None and not pinned:
            raise located.error(("splits", name),
                                "an evaluated split needs a fingerprint (run `specrun fingerprint SPEC`) "
                                "or a file pinned by sha256")
    if not spec.evaluated_splits:
        raise located.error(("splits",), "no split is evaluated (every split has `evaluate: false`); "
                                         "a spec scores at least one split")
    for name, selection in spec.subset.splits.items():
        if name not in spec.splits:
            raise located.error(("subset", "splits", name),
                                f"unknown split; expected one of: {', '.join(spec.splits)}")
        if selection != "all" and not spec.splits[name].evaluate:
            raise located.error(("subset", "splits", name),
                                f"split {name!r} is not evaluated, so it is never loaded and a count would "
                                "never be checked; write `all`")
    for name in spec.evaluated_splits:
        if name not in spec.subset.splits:
            raise located.error(("subset", "splits"), f"no selection for evaluated split {name!r} (all or a count)")
    for name, protocol in spec.protocols.items():
        kind = registry.PROTOCOLS[protocol.kind]  # options were typed and checked by the spec model itself
        needed = kind.item_fields
        for split_name in spec.evaluated_splits:
            source_name = spec.splits[split_name].source
            missing = [field for field in needed if field not in spec.sources[source_name].columns]
            if missing:
                raise located.error(("sources", source_name, "columns"),
                                    f"protocol {name!r} ({protocol.kind}) needs item field(s) "
                                    f"{', '.join(missing)}; map each to a column")
    used_protocols = set()
    for name, metric in spec.metrics.items():
        if metric.protocol not in spec.protocols:
            raise located.error(("metrics", name, "protocol"),
                                f"unknown protocol {metric.protocol!r}; expected one of: {', '.join(spec.protocols)}")
        if metric.metric not in registry.METRICS:
            raise located.error(("metrics", name, "metric"),
                                f"unknown metric {metric.metric!r}"
                                f"{registry.did_you_mean(metric.metric, list(registry.METRICS))}; expected one of: "
                                f"{', '.join(registry.METRICS)}")
        kind = spec.protocols[metric.protocol].kind
        outputs = registry.PROTOCOLS[kind].outputs
        missing = [need for need in registry.METRICS[metric.metric].inputs if need not in outputs]
        if missing:
            raise located.error(("metrics", name, "metric"),
                                f"metric {metric.metric!r} needs {', '.join(missing)}, "
                                f"which protocol kind {kind!r} does not produce")
        used_protocols.add(metric.protocol)
    for name in spec.protocols:
        if name not in used_protocols:
            raise located.error(("protocols", name), "no metric uses this protocol")
    for field in spec.card.examples.columns:
        known = {"id", *(f for s in spec.sources.values() for f in s.columns)}
        if field not in known:
            raise located.error(("card", "examples", "columns", field),
                                f"unknown item field; expected one of: {', '.join(sorted(known))}")


DELIMITED = ("tsv", "csv")


def _check_layout(source: HubDataset | GitSource, key: KeyPath, located: LocatedYaml) -> None:
    """The format is registered; options are those of that format."""
    if isinstance(source, HubDataset) and source.mirror is None:
        return
    layout = source.layout
    formats = registry.readers()
    if layout.format not in formats:
        raise located.error((*key, "format"), f"unknown format {layout.format!r}; expected one of: "
                                              f"{', '.join(formats)} (plugins add more: `specrun list --formats`)")
    for option in ("optional_names", "names"):
        if getattr(layout, option) and layout.format not in (*DELIMITED, "xls"):
            raise located.error((*key, option), f"`{option}` is an option of tsv/csv, not of {layout.format}")
    if layout.extra_fields != "error" and layout.format not in DELIMITED:
        raise located.error((*key, "extra_fields"), f"`extra_fields` is an option of tsv/csv, not of {layout.format}")
    if layout.optional_names and not layout.names:
        raise located.error((*key, "optional_names"), "optional trailing fields need `names` for the required "
                                                      "columns (a header row cannot name fields some rows lack)")
    entry = formats[layout.format]
    if layout.options and entry.options is None:
        raise located.error((*key, "options"), f"format {layout.format} takes no `options`")
    if entry.options is not None:
        try:
            entry.options.model_validate(layout.options)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            raise located.error((*key, "options", *err["loc"]), err["msg"]) from None


def _relative_inside(text: str) -> bool:
    return not (text.startswith(("/", "\\")) or ".." in PurePosixPath(text).parts or ":" in text or "\\" in text)


def write_fingerprints(path: Path, fingerprints: dict[str, str]) -> list[str]:
    """Set `splits.<name>.fingerprint` in the spec file, keeping its comments, order and layout (ruamel.yaml's
    round-trip mode; PyYAML would drop every comment). Returns the splits whose value changed."""
    import io

    from ruamel.yaml import YAML

    from specrun.core.files import write_atomic

    yaml_rt = YAML()  # round-trip: comments and key order survive
    yaml_rt.preserve_quotes = True
    yaml_rt.width = 4096  # never re-wrap the author's lines
    text = path.read_text(encoding="utf-8-sig")
    document = yaml_rt.load(text)
    changed = []
    for name, value in fingerprints.items():
        split = document["splits"][name]
        if split.get("fingerprint") != value:
            split["fingerprint"] = value
            changed.append(name)
    if changed:
        buffer = io.StringIO()
        yaml_rt.dump(document, buffer)
        write_atomic(path, buffer.getvalue())
    return changed


def json_schema() -> dict[str, Any]:
    schema = spec_model().model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/specrun/specrun/schema/spec.schema.json"
    return schema


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(schema_text())
