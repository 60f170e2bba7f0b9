"""pydantic's validation errors in the spec's own words: one line naming the file, the line, the key path and what
was expected."""

from __future__ import annotations

from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from specrun.core import registry
from specrun.core.errors import SpecError
from specrun.spec._compat import TOP_LEVEL_READER_OPTIONS
from specrun.spec.model import PATTERN_MEANING
from specrun.yamlsafe import KeyPath, LocatedYaml

# What a key accepts, in the spec's own words, for values of the wrong shape where pydantic's sentence would not
# tell the author what to write instead.
KEY_HINTS = {
    "source_split": "a split reads one source split (a name); to combine files, use `source_splits: [A, B]`",
    "source_splits": "a list of two or more source split names, read in that order as one split",
    "member": "the name of one file inside the zip archive (e.g. data/test.csv)",
    "member_sha256": "the sha256 (64 hex digits) of the member once extracted",
    "where": "column: value (a value, a list of values, or {not: value or list})",
    "explode": "a list of column names whose cells hold lists",
    "sample": "{n: rows kept, stratify: column, seed: number, method: mteb_stratified}",
    "values": "column: {value in the data: value to use}, e.g. label: {entailment: 2, neutral: 1}",
    "files": "source split: file (`path`, `sha256`, optional `member`, `member_sha256`, `mirror`)",
}
_SHAPE_ERRORS = ("string_type", "list_type", "dict_type", "model_type", "model_attributes_type", "int_type",
                 "too_short")


def first_error(exc: ValidationError, located: LocatedYaml, model: type[BaseModel]) -> SpecError:
    """pydantic's first error (or the misspelt key behind a missing one) as one line at its place in the YAML."""
    errors = exc.errors(include_url=False)
    err = errors[0]
    if err["type"] == "missing":  # a misspelt key (`subsett`) is the cause of the missing one beside it
        parent = tuple(err["loc"])[:-1]
        err = next((e for e in errors if e["type"] == "extra_forbidden" and tuple(e["loc"])[:-1] == parent), err)
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
    if kind == "union_tag_not_found":  # e.g. an override (`extends`, a subset) of a protocol the parent lacks
        tag = str(err.get("ctx", {}).get("discriminator", "")).strip("'")
        known = f"; expected one of: {', '.join(registry.PROTOCOLS)}" if tag == "kind" else ""
        return located.error(loc, f"required key `{tag}` is missing (nothing to inherit it from: a new entry is "
                                  f"written whole){known}")
    if kind == "extra_forbidden" and _given_twice(loc, located.data):
        return located.error(loc, "given twice: here and under the source's `options`; keep the one in `options`")
    message = _message(err, loc, model)
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return located.error(loc, message + more)


def _message(err: Any, loc: KeyPath, model: type[BaseModel]) -> str:
    """What one error says, by its kind, in the spec's words (first_error adds how many others there are)."""
    kind = err["type"]
    given = err.get("input")
    raw_loc = tuple(err["loc"])
    if kind == "extra_forbidden":
        what = "option" if "options" in loc[:-1] else "key"
        allowed = _allowed_keys(raw_loc[:-1], model)
        message = (f"unknown {what}{registry.did_you_mean(str(loc[-1]), list(allowed))}; expected one of: "
                   f"{', '.join(allowed)}")
    elif kind == "missing":
        message = "required key is missing"
    elif kind == "string_pattern_mismatch":
        pattern = err.get("ctx", {}).get("pattern", "")
        message = f"expected {PATTERN_MEANING.get(pattern, 'text matching ' + pattern)}, got {given!r}"
    elif kind in ("literal_error", "enum"):
        message = f"expected {err.get('ctx', {}).get('expected', 'one of the allowed values')}, got {given!r}"
    elif kind == "union_tag_invalid":
        message = f"expected type {err.get('ctx', {}).get('expected_tags', '')}, got {err.get('ctx', {}).get('tag')!r}"
    else:
        message = err["msg"].removeprefix("Value error, ")
        if not isinstance(given, (dict, list)) and given is not None:
            message += f" (got {given!r})"
        if kind == "string_type" and isinstance(given, (int, float, bool)):
            message += "; YAML read the unquoted value as a number or boolean: quote it"
    return message


def _given_twice(loc: KeyPath, data: Any) -> bool:
    """A reader option at a source's top level that its `options` also holds (the only one not moved there)."""
    parent: Any = data
    for part in loc[:-1]:
        parent = parent[part]
    options = parent.get("options") if isinstance(parent, dict) else None
    return bool(loc) and loc[-1] in TOP_LEVEL_READER_OPTIONS and isinstance(options, dict) and loc[-1] in options


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
