"""Data stage: resolve each source split at its pinned revision (local mirror, git file, or hub dataset), verify
it, map rows to items, give ids, check the content fingerprint and select the subset with the spec's seed.

- `_sources`: where a source split's rows come from (mirror, download, archive member, hub through datasets);
- `readers`: one function per file format, registered with its metadata (plugins via entry points);
- `items`: rows to items (value maps, conversion, ids), fingerprint, subset.
A split may read several source splits (files), concatenated in the declared order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from specrun.core.corpus import SharedCorpus
from specrun.core.errors import MissingDataError, SpecrunError
from specrun.core.types import Item, View
from specrun.core.workspace import Workspace
from specrun.data._sources import DATA_DIR_ENV, read_source_split, resolve_data_dir
from specrun.data.items import RawRow, WhereFilter, exploded, fingerprint, map_items, select
from specrun.data.sample import rare_dropped, sampled, text_split
from specrun.plan import Plan, PlannedSplit
from specrun.spec import HubDataset, reads_repo_copy

__all__ = ["DATA_DIR_ENV", "Loaded", "SplitData", "check_scorable", "example_items", "fingerprint", "limit_hint",
           "limited", "load_data", "load_split", "load_splits", "resolve_data_dir"]


@dataclass(frozen=True)
class SplitData:
    """The items of one split after mapping, and what identifies them."""

    name: str
    source: str
    origin: str  # the file(s) read, or hub id@revision; several are joined by '; '
    items: list[Item]  # selected subset, in source order
    n_source: int  # items in the split before the subset
    fingerprint: str  # of all mapped items of the split, before the subset
    files: dict[str, str] = field(default_factory=dict)  # file inside its source -> sha256 of the bytes read


def _rows(plan: Plan, split: PlannedSplit, data_dir: Path | None,
          workspace: Workspace | None) -> tuple[list[RawRow], list[str], int, dict[str, str]]:
    """Every kept row of the split's source split(s), in order (a `sample`'s, after `explode` and `where`), with
    the number its id is made of; the origins, the rows read, and the sha256 of each file read."""
    width = split.source.declared.ids.width
    kept: list[RawRow] = []
    origins: list[str] = []
    files: dict[str, str] = {}
    read = offset = source_rows = 0
    where = WhereFilter(split.where, plan, split.name)
    class_label = True  # the sampled column is a ClassLabel of every part read
    for source_split in split.source_splits:
        part = read_source_split(plan, split.source, source_split, data_dir, workspace)
        class_label = class_label and split.sample is not None and split.sample.stratify in part.class_labels
        origins.append(part.origin)
        if part.file and part.sha256:
            files[part.file] = part.sha256
        files.update(part.pinned)
        rows = exploded(part.rows, split.explode, part.origin, plan, split.name, split.explode_row,
                        source_rows) if split.explode else part.rows
        source_rows += len(part.rows)
        if split.steps is not None and split.steps.split_text:
            rows = text_split(rows, split.steps.split_text, part.origin, plan, split.name)
        for index, row in enumerate(rows):
            if where.keeps(row, part.origin, index + 1):
                number = f"{index + offset:0{width}d}" if split.ids == "running" else \
                    f"{source_split}-{index:0{width}d}"
                kept.append(RawRow(origin=part.origin, number=index + 1, id_number=number, row=row))
        offset += len(rows)
        read += len(rows)
    if read:
        where.check(len(kept))
    if split.steps is not None and split.steps.drop_rare is not None:
        kept = rare_dropped(kept, split.steps.drop_rare, plan, split.name)
    if split.sample is not None:
        kept = sampled(kept, split.sample, class_label, plan, split.name)
    return kept, origins, read, files


def load_split(plan: Plan, split_name: str, data_dir: Path | None, *, check: bool = True,
               workspace: Workspace | None = None) -> SplitData:
    """One split's items, checked against the plan (fingerprint, subset); downloads go to the workspace."""
    split = plan.split(split_name)
    source = split.source.declared
    copy_only = reads_repo_copy(source) and not source.files
    if copy_only and data_dir is None:
        raise plan.error(("sources", split.source.name, "mirror"),
                         f"reads a copy of the dataset repo {split.source.declared.path} from a local folder only "
                         f"(no `files` pins to download at the commit): put the copy in DIR/{split.source.name}/, "
                         "pass --data-dir DIR and pin it with `specrun fingerprint SPEC --data-dir DIR --write`")
    local = None if data_dir is None else data_dir / split.source.name
    if local is not None and _hub_read(split) and not local.exists() and not local.is_symlink():
        raise MissingDataError(f"no local copy of the hub dataset {source.path} (the copy of its repo goes in "
                               f"{local}/, as `specrun fingerprint` pins it)", file=str(local))
    if check and split.fingerprint is None and data_dir is not None and _hub_read(split):
        some = f" --subsets {plan.loaded.subset}" if plan.loaded.subset is not None else ""  # a copy of some
        take = (f"run `specrun fingerprint SPEC --data-dir DIR{some} --write` to accept this copy" if copy_only else
                f"run `specrun fingerprint SPEC{some} --write`, without --data-dir to take it from the hub, or with "
                "it to accept this copy")
        raise plan.error(("splits", split_name),
                         f"has no fingerprint, and a local copy of the hub dataset in {data_dir / split.source.name} "
                         f"is checked only against one (the hub's commit pins the hub alone): {take}")
    rows, origins, read, files = _rows(plan, split, data_dir, workspace)
    origin = "; ".join(origins)
    items = map_items(rows, plan, split.source)
    if not items:
        raise plan.error(("splits", split_name), f"split is empty: {origin} has no rows"
                         + (" that match `where`" if split.where and read else ""))
    found = fingerprint(items)
    if check and split.fingerprint is not None and split.fingerprint != found:
        raise plan.error(("splits", split_name, "fingerprint"),
                         f"data does not match the spec: spec says {split.fingerprint}, {origin} gives {found}")
    if split.selection != "all" and split.selection > len(items):
        raise plan.error(("subset", "splits", split_name),
                         f"asks for {split.selection} items but {origin} has {len(items)}")
    selected = select(items, split.selection, plan.seed)
    return SplitData(name=split_name, source=split.source.name, origin=origin, items=selected,
                     n_source=len(items), fingerprint=found, files=files)


def _hub_read(split: PlannedSplit) -> bool:
    """The split is a hub dataset read by `datasets` (no `mirror` files), or a copy of its repo read by a folder
    format without `files` pins: pinned by its commit on the hub only."""
    source = split.source.declared
    return isinstance(source, HubDataset) and (source.mirror is None or (reads_repo_copy(source) and not source.files))


def check_scorable(plan: Plan, splits: Mapping[str, SplitData]) -> None:
    """Every protocol's `validate_items` on each evaluated split, with the items of the splits it fits on: the
    one place a kind refuses data, before anything is encoded."""
    for split in plan.splits:
        data = splits[split.name]
        for protocol in plan.protocols:
            support = {name: splits[name].items for name in protocol.support}
            with SpecrunError.named(f"{plan.id}, split {split.name}, protocol {protocol.name}"):
                protocol.entry.validate_items(data.items, protocol.options, data.origin, support)


def load_splits(plan: Plan, data_dir: Path | None, *, check: bool = True, workspace: Workspace | None = None,
                limit: int | None = None) -> dict[str, SplitData]:
    """The evaluated splits and the splits protocols fit on, each checked whole against the plan (pins,
    fingerprint, subset), cut to their first `limit` items (--limit: fitted-on splits too, a smoke run is quick),
    then refused by the protocols where they cannot score them (`check_scorable`)."""
    splits = {split.name: limited(load_split(plan, split.name, data_dir, check=check, workspace=workspace), limit)
              for split in (*plan.splits, *plan.support_splits)}
    with limit_hint(limit):
        check_scorable(plan, splits)
    return splits


@contextmanager
def limit_hint(limit: int | None) -> Iterator[None]:
    """A protocol's refusal of a --limit run's items (one label, a constant score) says that only the first N were
    read: the full split may be fine."""
    try:
        yield
    except SpecrunError as exc:
        if limit is None:
            raise
        raise type(exc)(f"{exc.message} (--limit {limit}: the first {limit} items only; a larger --limit may hold "
                        "more)", file=exc.file, line=exc.line, key=exc.key) from None


def limited(split: SplitData, limit: int | None) -> SplitData:
    """A split's first `limit` items (a smoke run); its fingerprint and n_source stay those of the whole split."""
    return split if limit is None else dataclasses.replace(split, items=split.items[:limit])


def example_items(plan: Plan, data_dir: Path | None, workspace: Workspace | None = None) -> list[Item]:
    """The items a card quotes: the first evaluated split's, loaded (and checked) only when it shows examples."""
    if plan.spec.card is None or not plan.spec.card.examples.count:
        return []
    return load_split(plan, plan.splits[0].name, data_dir, workspace=workspace).items


@dataclass(frozen=True)
class Loaded:
    """One plan with its data: the splits' items and every text its protocols ask for, with its view
    (duplicates included)."""

    plan: Plan
    splits: dict[str, SplitData]
    texts: list[tuple[View, str]]
    corpora: list[tuple[View, SharedCorpus]] = field(default_factory=list)  # embedded from digests, not listed


def load_data(plan: Plan, data_dir: Path | None, workspace: Workspace) -> Loaded:
    """The evaluated splits and the splits protocols fit on (checked alike), and every text the protocols ask for.
    With --limit, each split's first N items (fitted-on splits too: a smoke run is quick) once it is read and
    checked whole (pins, fingerprint, subset)."""
    splits = load_splits(plan, data_dir, workspace=workspace, limit=plan.limit)
    texts: list[tuple[View, str]] = []
    corpora: list[tuple[View, SharedCorpus]] = []
    for split in plan.splits:
        for protocol in plan.protocols:
            support = {name: splits[name].items for name in protocol.support}
            with SpecrunError.named(f"{plan.id}, split {split.name}, protocol {protocol.name}"), limit_hint(plan.limit):
                items = splits[split.name].items
                texts.extend((protocol.view(text_field), text) for text_field, text in
                             protocol.entry.texts(items, protocol.options, support))
                corpora.extend((protocol.view(text_field), corpus) for text_field, corpus in
                               protocol.entry.corpora(items, protocol.options))
    return Loaded(plan=plan, splits=splits, texts=texts, corpora=corpora)
