"""Per-file sha256 pins of a hub dataset read by `datasets` (`files:` of an hf_dataset source): which data files a
copy of the dataset repo gives `datasets` for the spec's config and splits (resolved by `datasets`' own pattern
rules, so a pin covers exactly what is read), their digests for `fingerprint --write`, their check before a copy
is read, and the pinned files fetched from the hub at the commit so an online read is checked the same way. A
source with `mirror` files is read by its format, not by `datasets`: its pins cover what that format may read from
<data-dir>/<source>/ (`mirror_files`), checked the same way before the format reads a byte (`verify_mirror`).

The hub stores a data file with Git LFS, and the LFS object id is the sha256 of the file's bytes: a pin equals
the `lfs.sha256` the hub lists for the file at that commit, and a file downloaded from the hub checks against it."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specrun.core.errors import DataError, OfflineError, SpecError, first_line
from specrun.core.files import RACY_NS, memo_sha256
from specrun.core.workspace import Workspace
from specrun.plan import Plan, PlannedSource
from specrun.readers.hub_snapshot import pattern_inside_repo
from specrun.spec import HubDataset

CARD = "README.md"  # the dataset card: says which files a config reads, is no data itself
INFOS = "dataset_infos.json"  # the older card of features and splits, which `datasets` still reads
OVERRIDE = ".huggingface.yaml"  # `datasets` merges its `configs:` over the card's


def read_files(source: HubDataset, local: Path, splits: list[str] | None = None) -> dict[str, Path]:
    """Path inside the repo -> file, for each data file `datasets` reads from the copy `local` for the source's
    config (the README's `configs:`, or the spec's `data_files`, or `datasets`' inferred layout without either)
    and the spec's splits (or those named)."""
    from datasets.data_files import DataFilesDict, get_data_patterns, sanitize_patterns

    root = local.resolve()
    for told in (root / CARD, root / INFOS):  # what `datasets` reads of the copy besides its data files
        if told.is_file() and not told.resolve().is_relative_to(root):
            raise DataError(f"is a link to {told.resolve()}, outside the copy of the dataset repo", file=str(told))
    if (root / OVERRIDE).exists() or (root / OVERRIDE).is_symlink():
        raise DataError(f"`datasets` takes this file's `configs:` over the card's, and specrun pins and checks what "
                        f"the card says: remove it, or move its configs into {CARD}", file=str(local / OVERRIDE))
    try:
        base, patterns = (root, sanitize_patterns(dict(source.data_files))) if source.data_files \
            else _config_patterns(source, root)
        for pattern in [] if patterns is None else [p for split in patterns.values() for p in split]:
            if not pattern_inside_repo(pattern):  # fsspec would open a URL or an archive hop before any check
                raise DataError(f"data_files pattern {pattern!r} is not a path inside the dataset repo (relative, "
                                "no '..', no URL or '::' hop)", file=str(local if source.data_files else local / CARD))
        if patterns is None:
            patterns = get_data_patterns(str(base))
        found = DataFilesDict.from_patterns(patterns, base_path=str(base), allowed_extensions=_extensions())
    except DataError:
        raise
    except Exception as exc:  # datasets' own refusals: no file matches a pattern, an empty folder
        raise DataError(f"cannot tell which files `datasets` reads for config {source.config or 'default'}: "
                        f"{first_line(exc)}", file=str(local)) from None
    for split, names in found.items():  # `datasets` prepares every split of the config, not only those asked
        for name in names:
            path = Path(name)
            if not path.is_relative_to(root) or not path.resolve().is_relative_to(root):
                raise DataError(f"split {split} reads {name}, outside the copy of the dataset repo (a link out of "
                                "it included)", file=str(local))
    out: dict[str, Path] = {}
    for split in source.split_names if splits is None else splits:
        for name in found.get(split, []):
            relative = Path(name).relative_to(root).as_posix()
            if relative != CARD:
                out[relative] = local / relative
    return dict(sorted(out.items()))


def _extensions() -> list[str] | None:
    """The file extensions `datasets` resolves a local folder's patterns with (None, every one, where this
    version of `datasets` keeps them elsewhere)."""
    import datasets.load

    return getattr(datasets.load, "_ALL_ALLOWED_EXTENSIONS", None)


def _config_patterns(source: HubDataset, root: Path) -> tuple[Path, Any]:
    """The folder and the data_files patterns of the source's config in the README's `configs:` (None: the
    card names no configs, so `datasets` infers the layout from the folder)."""
    from datasets.data_files import sanitize_patterns
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    readme = root / CARD
    card = DatasetCard.load(readme).data if readme.is_file() else DatasetCardData()
    configs = MetadataConfigs.from_dataset_card_data(card)
    if not configs:
        return root, None
    name = source.config or configs.get_default_config_name()
    if name not in configs:
        raise DataError(f"the card's `configs:` has no config {name!r} (it has {', '.join(map(repr, configs))})",
                        file=str(readme))
    params = configs[name]
    base = root / params["data_dir"] if params.get("data_dir") else root
    data_files = params.get("data_files")
    return base, sanitize_patterns(data_files) if data_files is not None else None


def file_pins(source: HubDataset, local: Path, memo_dir: Path | None) -> dict[str, str]:
    """Path inside the repo -> sha256, for each data file read from the copy: what `fingerprint --write` pins."""
    return {relative: memo_sha256(path, memo_dir) for relative, path in read_files(source, local).items()}


_VERIFIED: set[tuple[Any, ...]] = set()  # copies this process checked, by their pinned files' state
_FETCHED: dict[tuple[str, str, str, tuple[str, ...]], Path] = {}  # downloads made: by folder, repo, commit, files


def pinned_copy(plan: Plan, name: str, source: HubDataset, local: Path | None, workspace: Workspace) -> Path:
    """The copy to read a pinned source from (`local`, else its pinned files downloaded), checked against the
    pins; each copy is checked once per process while its pinned files keep their state (size, times, inode)."""
    assert source.files is not None
    if local is None:
        downloads = workspace.downloads()
        key = (str(downloads), source.path, source.revision, tuple(sorted(source.files)))
        known = _FETCHED.get(key)
        if known is None or not known.is_dir():  # downloaded and checked (the check once, in checked_download)
            folder = _download_folder(source, downloads, "hf_dataset")
            _FETCHED[key] = checked_download(source, folder, workspace.memo, lambda: fetch_pinned(source, folder),
                                             lambda: _checked_copy(plan, name, source, folder, workspace.memo))
            return folder
        local = known
    if local.is_dir():  # else `datasets` says it is no folder
        _checked_copy(plan, name, source, local, workspace.memo)
    return local


def _checked_copy(plan: Plan, name: str, source: HubDataset, local: Path, memo_dir: Path | None) -> None:
    """verify_copy, once per state of the copy's pinned files (remembered once it is older than RACY_NS); a copy
    already checked in that state has only its files read checked again (the card may have changed)."""
    assert source.files is not None
    state = _state(local, source.files)
    if state is None or state not in _VERIFIED:
        verify_copy(plan, name, source, local, memo_dir)
        if state is not None and time.time_ns() - max(state[-1]) > RACY_NS:
            _VERIFIED.add(state)
    else:
        _check_read(plan, name, source, local, memo_dir)


def checked_download(source: HubDataset, folder: Path, memo_dir: Path | None, fetch: Callable[[], object],
                     check: Callable[[], None]) -> Path:
    """A pinned source's files downloaded into `folder` and checked; where the copy fails (a pinned file
    missing or other than its pin, a card `datasets` cannot read), the card and each pinned file that differs from
    its pin are downloaded afresh (`force_download`: past any file hf kept, its own cache included), and only a
    copy that still fails is refused. Nothing else in the folder, which other pin sets of the repo at the commit
    share, is touched. Without this a download cut short was refused on every run until deleted by hand."""
    try:
        fetch()
        check()
        return folder
    except OfflineError:
        raise
    except (SpecError, DataError):
        stale = [CARD, *(relative for relative, pin in sorted((source.files or {}).items())
                         if not (folder / relative).is_file() or memo_sha256(folder / relative, memo_dir) != pin)]
    print(f"specrun: note: {source.path}@{source.revision[:12]}: the downloaded copy fails its pins; downloading "
          f"{', '.join(stale)} afresh", file=sys.stderr)
    for relative in stale:
        _download(source, relative, folder, force=True)
    fetch()
    check()
    return folder


def _state(local: Path, files: dict[str, str]) -> tuple[Any, ...] | None:
    """The copy, its pins and each pinned file's state, the latest change last (None: a pinned file is missing)."""
    try:
        stats = [(local / relative).stat() for relative in sorted(files)]
    except OSError:
        return None
    return (str(local.resolve()), tuple(sorted(files.items())),
            tuple((s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for s in stats),
            tuple(max(s.st_mtime_ns, s.st_ctime_ns) for s in stats))


def verify_copy(plan: Plan, name: str, source: HubDataset, local: Path, memo_dir: Path | None) -> None:
    """Every pinned file of the copy against its pin, then the files read against those pinned: a changed,
    missing or unpinned file is one line naming it, its pinned and its found sha256, before anything is read."""
    assert source.files is not None
    for relative, expected in source.files.items():
        path = local / relative
        if not path.is_file():
            raise _refused(plan, name, source, local, relative, expected, "no such file in the copy")
        found = memo_sha256(path, memo_dir)
        if found != expected:
            raise _refused(plan, name, source, local, relative, expected, found)
    _check_read(plan, name, source, local, memo_dir)


def _check_read(plan: Plan, name: str, source: HubDataset, local: Path, memo_dir: Path | None) -> None:
    """The files the config's splits read are exactly those pinned (the card may have changed, a file been
    added)."""
    assert source.files is not None
    read = read_files(source, local)
    for relative, path in read.items():
        if relative not in source.files:
            raise _refused(plan, name, source, local, relative, "none (not pinned, but the config's splits read it)",
                           memo_sha256(path, memo_dir))
    for relative, expected in source.files.items():
        if relative not in read:
            raise _refused(plan, name, source, local, relative, expected,
                           "a file the config's splits no longer read (the card changed?)")


def _refused(plan: Plan, name: str, source: HubDataset, local: Path, relative: str, expected: str,
             found: str) -> Exception:
    """One line: the file, its pinned and its found sha256, at the pin's key (or `files` for a file unpinned)."""
    key = ("sources", name, "files", relative) if relative in (source.files or {}) else ("sources", name, "files")
    return plan.error(key, f"{local / relative}: expected sha256 {expected}, found {found}; if this copy is the "
                           "one meant, remove `files:` and run `specrun fingerprint SPEC --data-dir D --write`")


def mirror_files(planned: PlannedSource, local: Path) -> dict[str, Path]:
    """Path inside the source's folder `local` -> file, for each file a `mirror` source's folder format may read
    (a copy of a hub repo read through its card's `configs:`, as `mteb_retrieval` does): every regular file below
    each split's folder, the card README.md included (it decides which files each config reads), except below a
    dot-name (`.cache`, `.git`, `.gitattributes`: no config reads them). Every file rather than each config's own:
    a file added under a config's folder may be matched by its pattern, and pins that cover the whole copy cannot
    miss one. (A file format's split file is not pinned here: spec/references refuses `files` beside it.)"""
    source = planned.declared
    assert isinstance(source, HubDataset) and source.mirror is not None and planned.reader is not None
    out: dict[str, Path] = {}
    for split in source.split_names:
        target = local / source.mirror.files[split]
        for folder, subfolders, names in os.walk(target):  # symlinked folders are not followed
            subfolders[:] = [name for name in subfolders if not name.startswith(".")]
            for name in names:
                path = Path(folder) / name
                if not name.startswith(".") and path.is_file():
                    out[path.relative_to(local).as_posix()] = local / path.relative_to(local)
    return dict(sorted(out.items()))


def mirror_pins(planned: PlannedSource, local: Path, memo_dir: Path | None) -> dict[str, str]:
    """Path inside the source's folder -> sha256, for each file its format may read: what `fingerprint --write`
    pins for a `mirror` source."""
    return {relative: memo_sha256(path, memo_dir) for relative, path in mirror_files(planned, local).items()}


def verify_mirror(plan: Plan, planned: PlannedSource, data_dir: Path, memo_dir: Path | None) -> None:
    """A pinned `mirror` source's folder before its format reads a byte: every file it may read pinned, every pin
    a file it may read, each with its pinned sha256 (hashed once per process while the files keep their state). A
    split's file or folder missing altogether is left to the mirror's own missing-data error."""
    source = planned.declared
    assert isinstance(source, HubDataset) and source.mirror is not None and source.files is not None
    local = data_dir / planned.name
    if not all((local / source.mirror.files[split]).exists() for split in source.split_names):
        return
    covered = mirror_files(planned, local)
    for relative, path in covered.items():
        if relative not in source.files:
            raise _refused(plan, planned.name, source, local, relative,
                           f"none (not pinned, but format {source.mirror.format} may read it)",
                           memo_sha256(path, memo_dir))
    state = _state(local, source.files)
    if state is not None and state in _VERIFIED:
        return
    for relative, expected in source.files.items():
        if not (local / relative).is_file():
            raise _refused(plan, planned.name, source, local, relative, expected, "no such file in the copy")
        if relative not in covered:
            raise _refused(plan, planned.name, source, local, relative, expected,
                           f"a file format {source.mirror.format} does not read (a dot-name, or outside the "
                           "splits' files)")
        found = memo_sha256(local / relative, memo_dir)
        if found != expected:
            raise _refused(plan, planned.name, source, local, relative, expected, found)
    if state is not None and time.time_ns() - max(state[-1]) > RACY_NS:
        _VERIFIED.add(state)


def _download_folder(source: HubDataset, downloads: Path, kind: str) -> Path:
    """Where a pinned source's files of the repo at the commit are downloaded (`kind`: the way they are read),
    once the hub is known to be reachable: unreachable is one line naming the local-copy way out."""
    from specrun.core.network import hub_unreachable, quiet_hub_logging

    assert source.files is not None
    quiet_hub_logging()
    reason = hub_unreachable()
    if reason is not None:
        raise OfflineError(f"cannot reach the Hugging Face hub {reason} for {source.path}@{source.revision[:12]}; "
                           "pass --data-dir DIR (or set SPECRUN_DATA_DIR) to use a local copy")
    return downloads / kind / source.path.replace("/", "__") / source.revision


def mirror_folder(source: HubDataset, name: str, downloads: Path) -> Path:
    """Where a pinned `mirror` source read online is downloaded: <folder>/<name>/, its files as in the repo; the
    hub known reachable."""
    return _download_folder(source, downloads, "hf_dataset_mirror") / name


def fetch_mirror(source: HubDataset, local: Path) -> None:
    """A pinned `mirror` source read online: its pinned files (every file its format may read, the card included)
    of the repo at the commit, downloaded into `local` (`mirror_folder`), whose parent is then read as the data
    folder, verified and read by its format as a local copy is (a file already there is checked again)."""
    print(f"specrun: note: {source.path}@{source.revision[:12]}: downloading its {len(source.files or {})} pinned "
          f"file(s) to {local}, checked against `files:` before they are read", file=sys.stderr)
    for relative in sorted(source.files or {}):
        _download(source, relative, local)


def fetch_pinned(source: HubDataset, folder: Path) -> None:
    """The card, every pinned file and the config's other files (its other splits, which `datasets` prepares
    too: read, never turned into items) of the repo at the commit, downloaded into `folder` (a folder of their
    own, `_download_folder`), to be verified and read as a local copy (a file already there is checked again,
    never trusted)."""
    print(f"specrun: note: {source.path}@{source.revision[:12]}: downloading its {len(source.files or {})} pinned "
          f"file(s) to {folder}, checked against `files:` before `datasets` reads them there", file=sys.stderr)
    _download(source, CARD, folder)
    for relative in sorted(set(source.files or {}) | set(config_files_on_hub(source, folder))):
        _download(source, relative, folder)


def _download(source: HubDataset, relative: str, folder: Path, force: bool = False) -> None:
    """One file of the repo at the commit into `folder` (a missing card is no error: the spec's data_files);
    `force`: downloaded afresh even where hf holds a copy it trusts."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        hf_hub_download(source.path, relative, repo_type="dataset", revision=source.revision, local_dir=folder,
                        **({"force_download": True} if force else {}))
    except EntryNotFoundError:
        if relative != CARD:
            raise DataError(f"{source.path}@{source.revision[:12]} has no file {relative}") from None
    except Exception as exc:  # connection and HTTP errors, OSError on the cache
        raise OfflineError(f"cannot download {source.path}@{source.revision[:12]}:{relative} ({first_line(exc)}); "
                           "pass --data-dir DIR to use a local copy") from None


def config_files_on_hub(source: HubDataset, folder: Path) -> list[str]:
    """The repo paths of every file the config's splits name on the hub at the commit (the card's patterns, read
    from the card downloaded into `folder`, or the spec's data_files, resolved by `datasets` against the hub)."""
    from datasets.data_files import DataFilesDict, sanitize_patterns

    root = folder.resolve()
    hub = f"hf://datasets/{source.path}@{source.revision}"
    try:
        base, patterns = (root, sanitize_patterns(dict(source.data_files))) if source.data_files \
            else _config_patterns(source, root)
        if patterns is None:
            raise DataError(f"{source.path}@{source.revision[:12]}: its card names no `configs:`; pinned files are "
                            "read online only through a card's configs or the spec's data_files: pass --data-dir "
                            "with a copy of the repo")
        below = base.relative_to(root).as_posix()
        found = DataFilesDict.from_patterns(patterns, base_path=hub if below == "." else f"{hub}/{below}",
                                            allowed_extensions=_extensions())
    except DataError:
        raise
    except Exception as exc:  # no file matches a pattern on the hub; the listing failed
        raise OfflineError(f"cannot list the files of {source.path}@{source.revision[:12]} for config "
                           f"{source.config or 'default'} ({first_line(exc)}); pass --data-dir DIR to use a local "
                           "copy") from None
    return sorted({hub_repo_path(name, source) for names in found.values() for name in names})


def hub_repo_path(name: str, source: HubDataset) -> str:
    """`hf://datasets/OWNER/NAME@REVISION/PATH` (or without the revision) -> PATH."""
    for head in (f"{source.path}@{source.revision}/", f"hf://datasets/{source.path}/"):
        if head in name:
            return name.split(head, 1)[1]
    raise DataError(f"`datasets` resolved {name!r}, not a file of {source.path}@{source.revision[:12]}")
