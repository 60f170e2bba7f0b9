"""Where a run writes: ROOT/<spec id>/<model>[+<setting>...] per spec and model configuration (or --name), the
prompt-set table's folder beside its variants', every name within a filesystem's limit."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specrun.core.errors import SpecrunError
from specrun.core.files import folder_safe
from specrun.core.options import RunOptions
from specrun.outputs._preflight import preflight_output_folders

NAME_BYTES = 255  # the longest file name most filesystems take
SUITE_PREFIX = "suite+"  # a suite's folders lie under ROOT/suite+<suite id>/: never a spec's id
PART_CHARS = 40  # the longest readable part of a folder name (a setting, the splits chosen)


def output_folder(options: RunOptions, spec_id: str, model_slug: str) -> Path:
    """ROOT/<spec id>/<model>[+<setting>...] (or --name): one folder per spec, model and chosen settings, written
    as one unit; a run of one model with other settings (a dtype, a prompt, the hashing adapter) never replaces
    its default run. A --limit run's folder ends in +limit-N even under --name: a smoke run never replaces a
    full one."""
    limit = f"+limit-{options.limit}" if options.name and options.limit is not None else ""
    name = options.name + limit if options.name else model_slug + "".join(f"+{p}" for p in settings_parts(options))
    return Path(options.output) / spec_id / within_name_limit(name)


def suite_folder(options: RunOptions, suite_id: str, model_slug: str) -> Path:
    """ROOT/suite+<suite id>/<model>[+<setting>...]: suites have a namespace of their own ('+' is in no spec id),
    so a suite and a spec (or a subsets' parent) of one id never write, and so replace, one folder."""
    name = model_slug + "".join(f"+{p}" for p in settings_parts(options))
    return Path(options.output) / f"{SUITE_PREFIX}{suite_id}" / within_name_limit(name)


def prompt_set_folder(options: RunOptions, spec_id: str, model_slug: str, stem: str) -> Path:
    """ROOT/<spec id>/<model>[+<setting>...]+prompt-set-<file stem>: the variants' table beside their folders."""
    parts = [*settings_parts(options), readable_part(f"prompt-set-{stem}")]
    return Path(options.output) / spec_id / within_name_limit(model_slug + "".join(f"+{part}" for part in parts))


def check_distinct(folders: dict[str, list[Path]]) -> None:
    """Two prompt variants with the same settings would write one folder twice: refused, naming both."""
    seen: dict[Path, str] = {}
    for name, group in folders.items():
        for folder in group:
            if folder in seen:
                raise SpecrunError(f"prompt variants {seen[folder]!r} and {name!r} are the same settings (both "
                                   f"write {folder.name}); keep one")
            seen[folder] = name


def within_name_limit(name: str) -> str:
    """A filesystem's limit on a folder name: beyond it, a prefix told apart by a digest of the whole."""
    if len(name.encode("utf-8")) > NAME_BYTES:
        name = name[:NAME_BYTES - 13] + "~" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    return name


def settings_parts(options: RunOptions) -> list[str]:
    """The settings given away from their defaults that can change a vector, each `name-value` in folder-safe
    characters; a prompt (any text) as the first 8 hex digits of its sha256. Then what changes which items are
    scored (--splits, --limit), so that a run of some splits or a smoke run never replaces the full run. Each part
    is a run's identity: where its readable form loses anything, a digest of the whole keeps it (readable_part)."""
    parts = [f"revision-{_revision(options.model_revision)}"] if options.model_revision else []
    limit = [f"limit-{options.limit}"] if options.limit is not None else []
    chosen = [_splits_part(options.splits)] if options.splits else []
    return [readable_part(part) for part in parts + options.encoder.folder_parts()] + chosen + \
        [readable_part(part) for part in limit]


def _revision(revision: str) -> str:
    """A commit hash by its first 12 hex digits (as git abbreviates); any other revision (a branch, a tag) whole."""
    return revision[:12] if re.fullmatch(r"[0-9a-f]{40}", revision) else revision


def _splits_part(splits: Sequence[str]) -> str:
    """`splits-a-b`: the names joined by '-'; where a name holds '-' itself that join is ambiguous ({a-b} and
    {a, b}), so the part carries a digest of the names joined by ','."""
    names = sorted(splits)
    part = "splits-" + "-".join(names)
    return readable_part(part, whole=",".join(names) if any("-" in name for name in names) else None)


def readable_part(part: str, limit: int = PART_CHARS, whole: str | None = None) -> str:
    """A folder-name part: `part` itself when it is folder-safe and at most `limit` characters; otherwise its
    folder-safe prefix and `~` and the first 8 hex digits of the sha256 of the whole (`whole`, when the part
    itself is an ambiguous rendering of it), so that two settings that differ only beyond the cut, or only in
    characters a folder name cannot hold, never share a folder (and a second run never replaces the first)."""
    safe = folder_safe(part)
    if safe == part and len(part) <= limit and whole is None:
        return part
    digest = hashlib.sha256((part if whole is None else whole).encode("utf-8")).hexdigest()[:8]
    return safe[:limit - 9] + "~" + digest


@dataclass(frozen=True)
class RunFolders:
    """Every folder a run writes, computed once: variant -> spec id -> its folder, and spec id -> the prompt-set
    table's folder (none without --prompt-set)."""

    by_variant: dict[str, dict[str, Path]]
    summaries: dict[str, Path]

    @classmethod
    def of(cls, options: RunOptions, variants: dict[str, RunOptions], spec_ids: list[str], model_slug: str,
           prompt_set_stem: str | None) -> RunFolders:
        """The folders, checked: no two variants write one, and each can be written (preflight)."""
        by_variant = {name: {spec_id: output_folder(opts, spec_id, model_slug) for spec_id in spec_ids}
                      for name, opts in variants.items()}
        summaries = {} if prompt_set_stem is None else {
            spec_id: prompt_set_folder(options, spec_id, model_slug, prompt_set_stem) for spec_id in spec_ids}
        check_distinct({name: list(folders.values()) for name, folders in by_variant.items()})
        preflight_output_folders([folder for folders in by_variant.values() for folder in folders.values()]
                                 + list(summaries.values()))
        return cls(by_variant=by_variant, summaries=summaries)
