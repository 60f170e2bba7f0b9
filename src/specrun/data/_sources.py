"""Sources of the data stage: a source split's rows from the local mirror, a git file at its commit, or a hub
dataset at its revision; archives opened here (a member may be mirrored as the archive or extracted)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from specrun.core.errors import DataError, MissingDataError, OfflineError, first_line
from specrun.core.files import sha256_file
from specrun.core.registry import Rows
from specrun.core.workspace import Workspace
from specrun.data._files import check_sha256, mirror_path, verify
from specrun.plan import Plan, PlannedFile, PlannedSource
from specrun.spec import FileRef, GitSource, HubDataset

DATA_DIR_ENV = "SPECRUN_DATA_DIR"
GIT_RAW_URL = "https://raw.githubusercontent.com/{repo}/{revision}/{path}"

MAX_MEMBER_BYTES = 4 << 30  # an archive member larger than this is refused
RATIO_CHECK_BYTES = 16 << 20  # above this size a member must also compress by at most MAX_RATIO
MAX_RATIO = 200  # text compresses 3-10x; a zip bomb compresses about 1000x


def resolve_data_dir(flag: str | None) -> Path | None:
    value = flag if flag is not None else os.environ.get(DATA_DIR_ENV)
    if not value:
        return None
    path = Path(value)
    if not path.is_dir():
        raise DataError(f"data mirror {value!r} is not a directory (from {'--data-dir' if flag else DATA_DIR_ENV})")
    return path


def _datasets() -> Any:
    """The datasets library, imported on first use and kept quiet (rich shows our own progress)."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    return datasets


def _download(source: GitSource, ref: FileRef, downloads: Path) -> Path:
    """A git file at its commit, downloaded once into the cache and checked against its sha256 by pooch (a file
    already there is re-hashed, never trusted because it exists; a mismatch is downloaded again, then refused)."""
    import logging


    assert ref.repo_path is not None
    logging.getLogger("pooch").setLevel(logging.ERROR)  # rich shows our own progress; pooch's log lines are noise
    folder = downloads / source.path.replace("/", "__") / source.revision
    if ref.contents and ref.sha256 is None:  # a folder: each pinned file of it, into a folder of its own
        target = folder / ref.repo_path.replace("/", "__")
        for name, sha256 in ref.contents.items():
            _retrieve(source, f"{ref.repo_path}/{name}", sha256, target, name)
        return target
    return _retrieve(source, ref.repo_path, ref.sha256, folder, ref.repo_path.replace("/", "__"))


def _retrieve(source: GitSource, repo_path: str, sha256: str | None, folder: Path, name: str) -> Path:
    """One file of the repository at the commit through pooch, checked against its pin."""
    import pooch

    url = GIT_RAW_URL.format(repo=source.path, revision=source.revision, path=repo_path)
    try:
        return Path(pooch.retrieve(url, known_hash=f"sha256:{sha256}" if sha256 else None, fname=name,
                                   path=folder, progressbar=False))
    except ValueError as exc:  # pooch: the downloaded file's hash differs from the pin
        raise DataError(f"{url}: {first_line(exc)}") from None
    except Exception as exc:  # requests' connection and HTTP errors, OSError on the cache
        raise OfflineError(f"cannot download {source.path}@{source.revision[:12]}:{repo_path} "
                           f"({first_line(exc)}); pass --data-dir DIR (or set {DATA_DIR_ENV}) to use a local "
                           "mirror") from None


def member_name(names: list[str], member: str) -> str | None:
    """The archive entry a spec's `member` names: the entry itself, or the one entry ending in '/' + member
    (several such entries are ambiguous: a DataError naming them)."""
    if member in names:
        return member
    ending = [name for name in names if name.endswith("/" + member)]
    if len(ending) > 1:
        raise DataError(f"member {member!r} is ambiguous: the entries {', '.join(map(repr, ending))} all end in it; "
                        "give the entry's whole path as `member`")
    return ending[0] if ending else None


@contextmanager
def extracted(path: Path, member: str) -> Iterator[Path]:
    """One member of a zip archive, extracted to a temporary folder; sizes bounded (no zip bomb)."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise DataError("not a zip archive", file=str(path)) from None
    with archive, tempfile.TemporaryDirectory() as folder:
        try:
            match = member_name(archive.namelist(), member)
        except DataError as exc:
            raise DataError(exc.message, file=str(path)) from None
        if match is None:
            raise DataError(f"archive has no member {member!r}", file=str(path))
        info = archive.getinfo(match)
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > MAX_MEMBER_BYTES or (info.file_size > RATIO_CHECK_BYTES and ratio > MAX_RATIO):
            raise DataError(f"member {match!r} expands to {info.file_size} bytes ({ratio:.0f}x its compressed size); "
                            f"refusing a member over {MAX_MEMBER_BYTES} bytes or, above {RATIO_CHECK_BYTES}, "
                            f"over {MAX_RATIO}x (a zip bomb?)", file=str(path))
        target = Path(folder) / PurePosixPath(match).name
        written = 0
        try:
            with archive.open(match) as src, target.open("wb") as dst:
                while block := src.read(1 << 20):
                    written += len(block)
                    if written > info.file_size:  # the header lied about the size
                        raise DataError(f"member {match!r} is larger than its header says", file=str(path))
                    dst.write(block)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
            raise DataError(f"member {match!r} cannot be extracted, the archive is damaged ({first_line(exc)}); "
                            "download it again (and pin it with `sha256`)", file=str(path)) from None
        yield target


@contextmanager
def _readable(plan: Plan, planned: PlannedSource, source_split: str, data_dir: Path | None,
              workspace: Workspace | None) -> Iterator[tuple[Path, str]]:
    """The file (or folder) to read for a source split, verified against the spec's pins, and its origin."""
    source, source_name, entry = planned.declared, planned.name, planned.reader
    assert entry is not None
    file = planned.files[source_split]
    ref, key, pins = file.ref, file.key, file.pins
    if data_dir is not None:
        path = mirror_path(data_dir, source_name, ref.mirror, plan, key, must_exist=ref.member is None)
        if ref.member is not None and not path.exists():
            # the mirror may hold the member extracted from the archive, under its own name
            extracted_path = _mirrored_member(plan, source_name, file, data_dir)
            yield extracted_path, str(extracted_path)
            return
    elif not isinstance(source, GitSource):
        raise AssertionError("hub sources without a mirror are read by datasets")
    elif not source.fetch:
        raise OfflineError(f"source {source_name!r} is never downloaded (fetch: false); put your copy in "
                           f"<data-dir>/{source_name}/{ref.mirror} and pass --data-dir DIR")
    else:
        path = _download(source, ref, (workspace or Workspace.resolve()).downloads())
    if path.is_dir() != entry.folder and ref.member is None:
        raise DataError(f"is a folder; format {entry.name} reads a file" if path.is_dir()
                        else f"is a file; format {entry.name} reads a folder", file=str(path))
    verify(path, ref, plan, pins)
    if ref.member is None:
        yield path, str(path)
        return
    with extracted(path, ref.member) as member_path:
        if ref.member_sha256 is not None:
            check_sha256(member_path, ref.member_sha256, plan, (*pins, "member_sha256"))
        yield member_path, f"{path}:{ref.member}"


def _mirrored_member(plan: Plan, source_name: str, file: PlannedFile, data_dir: Path) -> Path:
    """An archive member the mirror holds extracted (the archive is not there), checked against its own pin:
    missing data when it is not there either."""
    ref, key, pins = file.ref, file.key, file.pins
    extracted_path = mirror_path(data_dir, source_name, PurePosixPath(ref.member).name, plan, key,
                                 must_exist=False)
    if not extracted_path.exists():  # missing data, as a missing plain file is (an optional member's)
        at = plan.error(key, f"neither the archive {data_dir / source_name / ref.mirror} nor its member "
                             f"{PurePosixPath(ref.member).name} is in the data mirror")
        raise MissingDataError(at.message, file=at.file, line=at.line, key=at.key)
    if ref.member_sha256 is None:
        raise plan.error(pins, f"the mirror holds the extracted member {extracted_path.name}; pin it with "
                               "`member_sha256` (the archive's `sha256` cannot check it)")
    check_sha256(extracted_path, ref.member_sha256, plan, (*pins, "member_sha256"))
    return extracted_path


@dataclass(frozen=True)
class SourceRows:
    rows: Rows
    origin: str  # where they came from: a file, archive:member, or hub id@revision (for messages)
    file: str | None  # the file's name inside its source (never a local path), when one file was read
    sha256: str | None  # of the bytes read (the member's, for an archive member), when one file was read
    class_labels: frozenset[str] = frozenset()  # columns `datasets` holds as ClassLabel (their cells are its ids)
    pinned: Mapping[str, str] = dataclasses.field(default_factory=dict)  # a pinned hub copy: each file -> its pin


def read_source_split(plan: Plan, planned: PlannedSource, source_split: str, data_dir: Path | None,
                      workspace: Workspace | None = None) -> SourceRows:
    """The rows of one source split, where they came from, and the sha256 of the file read (for provenance)."""
    source = planned.declared
    if isinstance(source, HubDataset) and source.mirror is not None and source.files:
        from specrun.data.hub_files import checked_download, fetch_mirror, mirror_folder, verify_mirror

        workspace = workspace or Workspace.resolve()  # pinned mirror files: checked before the format reads a byte
        memo = workspace.memo
        if data_dir is None:
            local = mirror_folder(source, planned.name, workspace.downloads())
            data_dir = checked_download(source, local, memo, lambda: fetch_mirror(source, local),
                                        lambda: verify_mirror(plan, planned, local.parent, memo)).parent
        else:
            verify_mirror(plan, planned, data_dir, memo)
    if isinstance(source, HubDataset) and (source.mirror is None or data_dir is None):
        local = data_dir / planned.name if data_dir and not source.mirror else None
        read_from = local
        if source.files:  # pinned per file: checked before `datasets` reads a byte, online from a pinned download
            from specrun.data.hub_files import pinned_copy

            read_from = pinned_copy(plan, planned.name, source, local, workspace or Workspace.resolve())
        rows, origin, class_labels, read = _read_hub(source, source_split, read_from)
        if read_from is not None and local is None:  # the pinned download: read as a copy, yet from the hub
            origin = origin.replace(str(read_from), f"{source.path}@{source.revision}", 1)
        # a pinned copy: the files `datasets` read for this split, each checked against its pin before the read
        pinned = {name: source.files[name] for name in read} if source.files else {}
        return SourceRows(rows, origin, None, None, class_labels, pinned)
    read = _read_file_split(plan, planned, source_split, data_dir, workspace)
    if isinstance(source, HubDataset) and source.files:  # a folder format's pinned copy: every file, each checked
        # (verify_mirror) before the format read those of the split's configs, which it does not name back
        read = dataclasses.replace(read, pinned=dict(source.files))
    return read


def _read_file_split(plan: Plan, planned: PlannedSource, source_split: str, data_dir: Path | None,
                     workspace: Workspace | None) -> SourceRows:
    """A source split read from its file (mirrored, downloaded, or an archive's member) by its format's reader,
    whose every failure is one DataError line naming the file."""
    source = planned.declared
    layout = source.layout
    ref = planned.files[source_split].ref
    assert planned.reader is not None
    with _readable(plan, planned, source_split, data_dir, workspace) as (path, origin):
        entry = planned.reader
        named = f"format {entry.name}" + (f" (from {entry.provider})" if entry.provider != "specrun" else "")
        try:
            rows = checked_rows(entry.read(path, planned.layout, source_split), named, origin)
        except DataError:
            raise
        except SystemExit as exc:  # a plugin that exits would end the run with its code and no output
            raise DataError(f"{named} called exit({exc.code!r}) while reading; a reader raises an error instead",
                            file=origin) from None
        except Exception as exc:  # pyarrow, xlrd and plugins each raise their own parse errors
            raise DataError(f"cannot read as {layout.format}: {first_line(exc)}", file=origin) from None
        if path.is_dir():
            return SourceRows(rows, origin, None, None)
        name = ref.repo_path or ref.mirror
        if ref.member:
            name += f":{ref.member}"
        digest = ref.member_sha256 if ref.member else ref.sha256  # already checked against the file when pinned
        return SourceRows(rows, origin, name, digest or sha256_file(path))


def checked_rows(returned: Any, named: str, origin: str) -> Rows:
    """What a reader returned as a list of rows: any iterable of dicts with text keys (a generator is read
    through); a dict, a string, or rows that are not dicts are one line naming the reader."""
    def refuse(what: str) -> DataError:
        return DataError(f"{named} returned {what}; a reader returns a list of rows, each a dict of column -> "
                         "value", file=origin)

    if isinstance(returned, (dict, str, bytes)) or not isinstance(returned, Iterable):
        raise refuse(f"an object of type {type(returned).__name__}")
    rows = returned if isinstance(returned, list) else list(returned)
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise refuse(f"row {number} as a {type(row).__name__} ({repr(row)[:40]})")
        if not all(isinstance(key, str) for key in row):
            raise refuse(f"row {number} with a column name that is not text")
    return rows


def _read_hub(source: HubDataset, source_split: str,
              local: Path | None) -> tuple[Rows, str, frozenset[str], dict[str, Path]]:
    """A hub dataset through `datasets`, at its revision; `local` is a copy of the dataset repo in the mirror,
    read with the same config, data files and split, so the offline path is the hub path. Also the copy's files
    read for the split, by their path inside the repo (none from the hub)."""
    datasets = _datasets()
    where = str(local) if local is not None else source.path
    if local is None:
        from specrun.core.network import hub_unreachable, quiet_hub_logging

        quiet_hub_logging()
        reason = hub_unreachable()
        if reason is not None:
            raise OfflineError(f"cannot reach the Hugging Face hub {reason} for {source.path}@"
                               f"{source.revision[:12]}; pass --data-dir DIR (or set {DATA_DIR_ENV}) to use a local "
                               "mirror")
    if local is not None and not local.exists() and not local.is_symlink():  # an optional suite member skips it
        raise MissingDataError("no such folder; a hub source without `mirror` files is read from a local copy of "
                               "the dataset repo in <data-dir>/<source>/", file=where)
    if local is not None and not local.is_dir():
        raise DataError("is not a folder; a hub source without `mirror` files is read from a local copy of the "
                        "dataset repo in <data-dir>/<source>/", file=where)
    read: dict[str, Path] = {}
    if local is not None:  # what `datasets` will read lies inside the copy (no link out of it, in any split)
        from specrun.data.hub_files import read_files

        read = read_files(source, local, [source_split])
    dataset, rows = _load_dataset(datasets, where, source, source_split, local)
    origin = str(local) if local is not None else f"{source.path}@{source.revision}"
    features = getattr(dataset, "features", None) or {}
    class_label = getattr(datasets, "ClassLabel", ())  # a class-encoded column: MTEB samples by its own ids
    class_labels = frozenset(name for name, feature in features.items() if isinstance(feature, class_label))
    return rows, origin + (f" ({source.config})" if source.config else ""), class_labels, read


def _load_dataset(datasets: Any, where: str, source: HubDataset, source_split: str,
                  local: Path | None) -> tuple[Any, Rows]:
    """The split through `datasets` (at the revision, unless read from a local copy) and its rows; a failure is
    one line, an OfflineError when it reads as the network's."""
    arguments: dict[str, Any] = {"name": source.config, "split": source_split}
    if source.data_files:
        arguments["data_files"] = dict(source.data_files)
    if local is None:
        arguments["revision"] = source.revision
    try:
        with ExitStack() as stack:
            if local is not None:  # datasets' cache keys a local folder by name, not content: read it afresh
                arguments["cache_dir"] = stack.enter_context(tempfile.TemporaryDirectory(prefix="specrun-hub-"))
            dataset = datasets.load_dataset(where, **arguments)
            rows = dataset.to_list()
    except Exception as exc:
        text = first_line(exc)
        if local is None and any(word in text.lower() for word in ("connect", "offline", "resolve", "network",
                                                                    "timed out", "couldn't")):
            raise OfflineError(f"cannot reach the Hugging Face hub for {source.path}@{source.revision[:12]} "
                               f"({text}); pass --data-dir DIR (or set {DATA_DIR_ENV}) to use a local mirror") from None
        raise DataError(f"cannot load {where} config {source.config} split {source_split}: {text}"
                        + ("" if local else "; pass --data-dir DIR to use a local mirror")) from None
    return dataset, rows
