"""The `hf_dataset` source: a Hugging Face hub dataset at a commit, read with `datasets`, and the per-file sha256
pins (`files:`) of the data files it reads (or its `mirror` format may read). On the hub a data file is stored with
Git LFS, whose object id (the `oid sha256:` of the pointer file, the `lfs.sha256` the hub's API lists per file) is
the sha256 of the file's bytes: a pin here is that id, so it can be checked against the hub's listing as well as
against a local copy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from specrun.core.types import Strict
from specrun.spec._common import HUB_ID_PATTERN, FileRef, ItemIds, Layout, Name, Revision, Sha256, Text


class Mirror(Layout):
    """Where the data lies in a local mirror: <data-dir>/<source name>/<file>, one file per source split."""

    files: dict[Name, Text] = Field(min_length=1, description="Source split -> path inside the source's folder.")


def _repo_path(value: str) -> str:
    """A path inside the dataset repo as the hub lists it: relative, '/'-separated, no '.' or '..' part (a pin
    must name one file of the copy, never one beside it)."""
    parts = value.split("/")
    if "\\" in value or "\x00" in value or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{value!r} is not a path inside the dataset repo (relative, '/'-separated, no empty, "
                         "'.' or '..' part)")
    return value


RepoPath = Annotated[str, Field(min_length=1), AfterValidator(_repo_path)]


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
    files: dict[RepoPath, Sha256] | None = Field(None, min_length=1, description=(
        "Path inside the dataset repo -> sha256 of each data file the config's splits read (as `datasets` resolves "
        "the README's `configs:` or `data_files`; the hub's LFS id of the file is its sha256). With `mirror` in a "
        "folder format: of every regular file below each split's folder in <data-dir>/<source>/, README.md "
        "included, none below a dot-name. Checked before a copy is read; a file read but not pinned is refused. "
        "`specrun fingerprint --write` fills it from a copy."))
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

