"""A local copy of a hub dataset repo as `datasets` reads it: the README's `configs:` front matter names, per
config, the data files of each split (parquet or JSON Lines). Shared by folder formats that read several configs of
one repo at once (MTEB's retrieval layout), where `datasets.load_dataset` would read one config whole into Arrow."""

from __future__ import annotations

import glob
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from specrun.core.errors import DataError, first_line
from specrun.core.files import open_regular
from specrun.core.plain_yaml import load_plain
from specrun.readers.jsonl import jsonl_lines
from specrun.readers.parquet import read_parquet

SUFFIXES = (".parquet", ".jsonl")


@dataclass(frozen=True)
class Snapshot:
    """The repo folder and its configs: config name -> split -> data files (relative patterns, as written)."""

    root: Path
    configs: dict[str, dict[str, list[str]]]

    def split_of(self, config: str, split: str) -> str:
        """The split read for `split`: itself, or the config's only split (MTEB's single-split fallback: a corpus
        kept once under `test` serves every evaluated split); several others are one line."""
        splits = self.configs[config]
        if split in splits:
            return split
        if len(splits) == 1:
            return next(iter(splits))
        raise DataError(f"config {config!r} has no split {split!r} (it has {', '.join(map(repr, splits))})",
                        file=str(self.root / "README.md"))

    def files(self, config: str, split: str) -> list[Path]:
        """The files of a config's split (or its fallback) as `datasets` resolves its patterns in the repo (its
        own `resolve_pattern`: the same files in the same order, hidden names left out), each a regular file of
        the copy itself: nothing resolving outside it, under a linked folder or below a dot-name (the pins of a
        copy leave those out: data/hub_files.mirror_files)."""
        found: list[Path] = []
        for pattern in self.configs[config][self.split_of(config, split)]:
            for match in self._matches(config, pattern):
                open_regular(match, f"config {config!r}'s file {pattern}")
                if match.suffix not in SUFFIXES:
                    raise DataError(f"config {config!r}: {match.name} is neither .parquet nor .jsonl (decompress a "
                                    ".jsonl.gz; other formats are not read)", file=str(match))
                found.append(match)
        return found

    def _matches(self, config: str, pattern: str) -> list[Path]:
        from datasets.data_files import resolve_pattern

        where = f"config {config!r}: {pattern!r}"
        if not pattern_inside_repo(pattern):
            raise DataError(f"{where} is not a path inside the dataset repo (relative, no '..', no URL or '::' "
                            "hop)", file=str(self.readme))
        base = self.root.absolute()  # `datasets` gives absolute paths
        try:  # the folder's own name taken literally ('[' or '*' in it is no pattern)
            matches = [Path(name) for name in resolve_pattern(pattern, base_path=glob.escape(str(base)))]
        except FileNotFoundError:
            raise DataError(f"{where}: no file matches it", file=str(self.root)) from None
        except Exception as exc:  # fsspec's refusals of a pattern it cannot glob
            raise DataError(f"{where}: {first_line(exc)}", file=str(self.readme)) from None
        root = self.root.resolve()
        found = []
        for match in matches:
            inside = match.relative_to(base) if match.is_relative_to(base) else None
            if inside is None or not match.resolve().is_relative_to(root):
                raise DataError(f"{where} reads {match}, which lies outside the dataset folder", file=str(self.root))
            if any(part.startswith(".") for part in inside.parts):
                raise DataError(f"{where} reads {inside.as_posix()}, below a dot-name (which a copy's pins leave "
                                "out); rename it", file=str(self.root))
            if (root / inside.parent).resolve() != root / inside.parent:
                raise DataError(f"{where} reads {inside.as_posix()} through a linked folder; a copy of the repo "
                                "holds its folders themselves", file=str(self.root))
            found.append(self.root / inside)
        return found

    @property
    def readme(self) -> Path:
        return self.root / "README.md"


def pattern_inside_repo(pattern: str) -> bool:
    """A pattern `datasets` resolves inside the folder alone: relative, no '..' part, and neither a URL (fsspec
    would open it: zip://, hf://, file://) nor a '::' hop into an archive, which it resolves before any check."""
    return not ("\x00" in pattern or pattern.startswith(("/", "\\")) or ".." in pattern.split("/")
                or "://" in pattern or "::" in pattern or ":" in pattern.split("/")[0])


def _data_files(value: Any, config: str, readme: Path) -> dict[str, list[str]]:
    """`data_files` in any of the card's forms: a pattern, a list of patterns (split `train`), a mapping of split
    to pattern(s), or a list of {split, path} with a pattern or a list of them."""
    def patterns(path: Any) -> list[str]:
        paths = [path] if isinstance(path, str) else path
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
            raise DataError(f"config {config!r}: a data_files path must be a pattern or a list of them",
                            file=str(readme))
        return paths

    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return {"train": patterns(value)}
    if isinstance(value, dict):  # split -> pattern(s)
        # a huge number as a split's name (YAML's 0x... forms pass Python's digit limit) fails str() otherwise
        if any(isinstance(split, int) and split.bit_length() > 64 for split in value):
            raise DataError(f"config {config!r}: a data_files split name is a huge number", file=str(readme))
        return {str(split): patterns(path) for split, path in value.items()}
    out: dict[str, list[str]] = {}
    for entry in value if isinstance(value, list) else [None]:
        if not isinstance(entry, dict) or not isinstance(entry.get("split"), str) or "path" not in entry:
            raise DataError(f"config {config!r}: data_files must list {{split, path}} entries", file=str(readme))
        out.setdefault(entry["split"], []).extend(patterns(entry["path"]))
    return out


def read_snapshot(root: Path) -> Snapshot:
    """The configs of README.md's front matter; a README without them is one line."""
    readme = root / "README.md"
    open_regular(readme, "README.md (the dataset card with `configs:`)")
    if not readme.resolve().is_relative_to(root.resolve()):
        raise DataError(f"is a link to {readme.resolve()}, outside the dataset folder", file=str(readme))
    raw = readme.read_bytes()
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 (byte {exc.start})", file=str(readme)) from None
    lines = text.splitlines()
    end = next((i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---"), None) \
        if lines and lines[0].strip() == "---" else None
    if end is None:
        raise DataError("has no front matter between '---' lines; it must name the `configs:`", file=str(readme))
    try:
        front = load_plain("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise DataError(f"front matter is not YAML: {first_line(exc)}", file=str(readme)) from None
    configs = front.get("configs") if isinstance(front, dict) else None
    if not isinstance(configs, list) or not configs:
        raise DataError("front matter has no `configs:` list", file=str(readme))
    out: dict[str, dict[str, list[str]]] = {}
    for config in configs:
        name = config.get("config_name", "default") if isinstance(config, dict) else None
        if not isinstance(name, str) or "data_files" not in config:
            raise DataError("each config needs a `config_name` and `data_files`", file=str(readme))
        if name in out:
            raise DataError(f"config {name!r} is given twice", file=str(readme))
        out[name] = _data_files(config["data_files"], name, readme)
    return Snapshot(root, out)


def records(files: list[Path]) -> Iterator[tuple[Path, int, Any]]:
    """(file, line or row number from 1, record) of each file in turn, streamed (parquet a batch at a time)."""
    for file in files:
        if file.suffix == ".parquet":
            for number, row in enumerate(read_parquet(file, None, ""), start=1):
                yield file, number, row
        else:
            for number, record in jsonl_lines(file):
                yield file, number, record
