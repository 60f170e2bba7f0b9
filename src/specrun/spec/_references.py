"""Checks across keys that pydantic's per-field validation cannot see: files inside the mirror, splits and
sources that exist, fingerprints, metrics that a protocol feeds, a format's own keys and options."""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import ValidationError

from specrun.core import registry
from specrun.mteb.score_ref import MtebRef
from specrun.spec.model import MAX_PATH_PART, GitSource, HubDataset, Source, Spec
from specrun.yamlsafe import KeyPath, LocatedYaml


def check_references(spec: Spec, located: LocatedYaml, require_fingerprints: bool) -> None:
    """Checks across keys that pydantic's per-field validation cannot see; each names its own line."""
    _check_sources(spec, located)
    _check_splits(spec, located, require_fingerprints)
    _check_subset(spec, located)
    _check_protocols(spec, located, require_fingerprints)
    _check_metrics(spec, located)
    _check_card(spec, located)


def _check_sources(spec: Spec, located: LocatedYaml) -> None:
    """Paths inside the source's folder and short enough, formats and their options, pinned members, values maps
    of mapped columns."""
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
        _check_pinned_members(source_name, source, located)
        for column in source.values or {}:
            if column not in source.columns.values():
                mapped = ", ".join(sorted(set(source.columns.values())))
                raise located.error(("sources", source_name, "values", column),
                                    f"column {column!r} is not mapped by `columns`, so this map would never apply; "
                                    f"`values` takes a mapped column: {mapped}")


def _check_splits(spec: Spec, located: LocatedYaml, require_fingerprints: bool) -> None:
    """Each split's source and source splits exist, once each; an evaluated split is fingerprinted or pinned."""
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
        if split.explode_row is not None and not split.explode:
            raise located.error(("splits", name, "explode_row"), "needs `explode`: it numbers the rows whose "
                                                                 "lists become several")
        pinned = _pinned(source, split.source_split_names)
        if require_fingerprints and split.evaluate and split.fingerprint is None and not pinned:
            raise located.error(("splits", name),
                                "an evaluated split needs a fingerprint (run `specrun fingerprint SPEC`) "
                                "or a file pinned by sha256")
    if not spec.evaluated_splits:
        raise located.error(("splits",), "no split is evaluated (every split has `evaluate: false`); "
                                         "a spec scores at least one split")


def _pinned(source: Source, source_splits: list[str]) -> bool:
    """Every file the split reads is pinned by sha256, or the split is a hub dataset's repo at its commit, read
    by `datasets` (no `mirror`) or by a folder format from a copy of the repo: the commit pins what the hub serves.
    A local copy of it is checked only by a fingerprint, which the data stage then requires (data.load_split)."""
    if isinstance(source, HubDataset) and (source.mirror is None or reads_repo_copy(source)):
        return True
    return all(source.file_for(part).pinned for part in source_splits)


def reads_repo_copy(source: Source) -> bool:
    """A hub dataset whose `mirror` is a folder format: it reads a copy of the dataset repo (its card's
    `configs:`), never one file per split, and `files` beside it pins that copy (data/hub_files.mirror_files)."""
    if not isinstance(source, HubDataset) or source.mirror is None:
        return False
    entry = registry.READERS.get(source.mirror.format)
    return entry is not None and entry.folder


def _check_subset(spec: Spec, located: LocatedYaml) -> None:
    """A selection for every evaluated split, and only for splits that exist and are evaluated."""
    for name, selection in spec.subset.splits.items():
        if name not in spec.splits:
            raise located.error(("subset", "splits", name),
                                f"unknown split; expected one of: {', '.join(spec.splits)}")
        if selection != "all" and not spec.splits[name].evaluate:
            raise located.error(("subset", "splits", name),
                                f"split {name!r} is not evaluated, so no subset of it is drawn and a count would "
                                "never be checked; write `all`")
    for name in spec.evaluated_splits:
        if name not in spec.subset.splits:
            raise located.error(("subset", "splits"), f"no selection for evaluated split {name!r} (all or a count)")


def _check_protocols(spec: Spec, located: LocatedYaml, require_fingerprints: bool) -> None:
    """The splits a protocol fits on exist, are not evaluated and are pinned; its roles name text fields; every
    item field it reads is mapped."""
    for name, protocol in spec.protocols.items():
        kind = registry.PROTOCOLS[protocol.kind]  # options were typed and checked by the spec model itself
        if protocol.similarity != "model" and protocol.similarity not in kind.info.similarities:  # as make_plan
            raise located.error(("protocols", name, "similarity"),
                                f"protocol kind {protocol.kind} compares vectors by "
                                f"{', '.join(kind.info.similarities)} only, not {protocol.similarity}")
        for option in kind.info.split_options:
            named = getattr(protocol.options, option)
            if named is not None and named not in spec.splits:
                raise located.error(("protocols", name, "options", option),
                                    f"unknown split {named!r}; expected one of: {', '.join(spec.splits)}")
            if named is not None and spec.splits[named].evaluate:
                raise located.error(("protocols", name, "options", option),
                                    f"split {named!r} is evaluated, so the protocol would fit on the items it "
                                    f"scores; name a split with `evaluate: false`")
        for field in protocol.roles:
            if field not in kind.info.text_fields:
                raise located.error(("protocols", name, "roles", field),
                                    f"not a text field of kind {protocol.kind}; expected one of: "
                                    f"{', '.join(kind.info.text_fields)}")
        support = kind.support_splits(protocol.options)
        for split_name in support:
            split = spec.splits[split_name]
            pinned = _pinned(spec.sources[split.source], split.source_split_names)
            if require_fingerprints and split.fingerprint is None and not pinned:
                raise located.error(("splits", split_name),
                                    f"protocol {name!r} fits on this split, so it needs a fingerprint (run "
                                    "`specrun fingerprint SPEC`) or a file pinned by sha256")
        needed = kind.info.item_fields
        for split_name in dict.fromkeys([*spec.evaluated_splits, *support]):
            source_name = spec.splits[split_name].source
            missing = [field for field in needed if field not in spec.sources[source_name].columns]
            if missing:
                raise located.error(("sources", source_name, "columns"),
                                    f"protocol {name!r} ({protocol.kind}) needs item field(s) "
                                    f"{', '.join(missing)}; map each to a column")


def _check_metrics(spec: Spec, located: LocatedYaml) -> None:
    """Each metric is registered and fed by its protocol's kind; every protocol is used by a metric."""
    used_protocols = set()
    for name, metric in spec.metrics.items():
        if metric.protocol not in spec.protocols:
            raise located.error(("metrics", name, "protocol"),
                                f"unknown protocol {metric.protocol!r}; expected one of: {', '.join(spec.protocols)}")
        kind = spec.protocols[metric.protocol].kind
        outputs = registry.PROTOCOLS[kind].info.outputs
        if metric.metric not in registry.METRICS:
            fed = [other for other, entry in registry.METRICS.items() if set(entry.inputs) <= set(outputs)]
            raise located.error(("metrics", name, "metric"),
                                f"unknown metric {metric.metric!r}"
                                f"{registry.did_you_mean(metric.metric, fed or list(registry.METRICS))}; expected "
                                f"one of: {', '.join(fed)} (the metrics protocol kind {kind} feeds)")
        missing = [need for need in registry.METRICS[metric.metric].inputs if need not in outputs]
        if missing:
            raise located.error(("metrics", name, "metric"),
                                f"metric {metric.metric!r} needs {', '.join(missing)}, "
                                f"which protocol kind {kind!r} does not produce")
        registered = registry.METRICS[metric.metric].direction
        if metric.direction != registered:  # else a leaderboard would rank the worse model first
            raise located.error(("metrics", name, "direction"),
                                f"{metric.metric} is {registered} is better (its registry entry); the spec says "
                                f"{metric.direction}: write `direction: {registered}`")
        used_protocols.add(metric.protocol)
    _check_mteb(spec, located)
    for name in spec.protocols:
        if name not in used_protocols:
            raise located.error(("protocols", name), "no metric uses this protocol")


def _check_mteb(spec: Spec, located: LocatedYaml) -> None:
    """An `mteb` counterpart names one evaluated split, and no two metrics claim one MTEB score (an export would
    write both into one place)."""
    evaluated = spec.evaluated_splits
    claimed: dict[tuple[str, str, str, str], str] = {}
    mains: dict[tuple[str, str, str], str] = {}
    languages: dict[tuple[str, str, str], tuple[str, list[str]]] = {}
    for name, metric in spec.metrics.items():
        ref = metric.mteb
        if ref is None:
            continue
        if ref.spec_split is not None and ref.spec_split not in evaluated:
            raise located.error(("metrics", name, "mteb", "spec_split"),
                                f"{ref.spec_split!r} is not an evaluated split; expected one of: "
                                f"{', '.join(evaluated)}")
        if ref.split is not None and ref.spec_split is None and len(evaluated) != 1:
            raise located.error(("metrics", name, "mteb"),
                                f"the spec evaluates {len(evaluated)} splits ({', '.join(evaluated)}); name the "
                                "one MTEB's split stands for (`spec_split: NAME`), or each (`splits: {NAME: "
                                "MTEB_SPLIT}`)")
        for ours in ref.splits or {}:
            if ours not in evaluated:
                raise located.error(("metrics", name, "mteb", "splits", ours),
                                    f"{ours!r} is not an evaluated split; expected one of: {', '.join(evaluated)}")
        for _, cell in ref.cells(evaluated):
            _claim(cell, name, located, claimed, languages, mains)


Entry = tuple[str, str, str]  # MTEB task, split, subset: one entry of a result file


def _claim(ref: MtebRef, name: str, located: LocatedYaml, claimed: dict[tuple[str, str, str, str], str],
           languages: dict[Entry, tuple[str, list[str]]], mains: dict[Entry, str]) -> None:
    """One MTEB score claimed by one metric on one split: no other may write it, its entry's languages agree, and
    an entry has one main score."""
    split = ref.split or ""
    where = (ref.task, split, ref.subset, ref.score)
    if where in claimed:
        raise located.error(("metrics", name, "mteb"),
                            f"metric {claimed[where]!r} already maps to MTEB {ref.task} {split} {ref.subset} "
                            f"{ref.score}")
    claimed[where] = name
    entry = (ref.task, split, ref.subset)
    if ref.languages and languages.setdefault(entry, (name, ref.languages))[1] != ref.languages:
        other, theirs = languages[entry]
        raise located.error(("metrics", name, "mteb", "languages"),
                            f"{ref.languages} differ from the {theirs} metric {other!r} gives MTEB {ref.task} "
                            f"{split} {ref.subset}")
    if ref.main and entry in mains:
        raise located.error(("metrics", name, "mteb", "main"),
                            f"metric {mains[entry]!r} is already the main score of MTEB {ref.task} {split} "
                            f"{ref.subset}")
    if ref.main:
        mains[entry] = name


def _check_card(spec: Spec, located: LocatedYaml) -> None:
    if spec.card is None:  # a local spec without a card: nothing to check
        return
    for field in spec.card.examples.columns:
        known = {"id", *(f for s in spec.sources.values() for f in s.columns)}
        if field not in known:
            raise located.error(("card", "examples", "columns", field),
                                f"unknown item field; expected one of: {', '.join(sorted(known))}")


def _check_layout(source: HubDataset | GitSource, key: KeyPath, located: LocatedYaml) -> None:
    """The format is registered; its options are those its reader's own model accepts."""
    if isinstance(source, HubDataset) and source.mirror is None:
        return
    layout = source.layout
    formats = registry.READERS
    if layout.format not in formats:
        raise located.error((*key, "format"), f"unknown format {layout.format!r}; expected one of: "
                                              f"{', '.join(formats)} (plugins add more: `specrun list --formats`)")
    entry = formats[layout.format]
    if entry.options is None:
        if layout.options:
            raise located.error((*key, "options", next(iter(layout.options))),
                                f"format {layout.format} takes no options")
        return
    try:
        entry.options.model_validate(dict(layout.options))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = (f"not an option of format {layout.format}; expected one of: "
                       f"{', '.join(entry.options.model_fields)}")
        raise located.error((*key, "options", *err["loc"]), message) from None


def _check_pinned_members(source_name: str, source: HubDataset | GitSource, located: LocatedYaml) -> None:
    """A folder format that names the files it reads reads only pinned ones, where the folder's contents are
    pinned: an unpinned file beside pinned ones would be read unverified. A hub source's `files` beside `mirror`
    pins a folder format's copy of the repo (data/hub_files.mirror_files); a file format's split file it does not."""
    if isinstance(source, HubDataset) and source.mirror is None:
        return
    entry = registry.READERS.get(source.layout.format)
    if isinstance(source, HubDataset) and source.files and entry is not None and not entry.folder:
        raise located.error(("sources", source_name, "files"), f"`files` beside `mirror` pins the copy of the repo "
                                                               f"a folder format reads; format {entry.name} reads one "
                                                               "file per split: drop `files`")
    if entry is None or entry.files_read is None:
        return
    options = dict(source.layout.options)
    for split_name in source.split_names:
        ref = source.file_for(split_name)
        if ref.contents is None:
            continue
        for name in entry.files_read(options, split_name):
            if name not in ref.contents:
                raise located.error(("sources", source_name, "files", split_name, "contents"),
                                    f"format {source.layout.format} reads {name!r}, which `contents` does not "
                                    f"pin; add its sha256 (pinned: {', '.join(ref.contents)})")


def _relative_inside(text: str) -> bool:
    return not (text.startswith(("/", "\\")) or ".." in PurePosixPath(text).parts or ":" in text or "\\" in text)
