"""`specrun new KIND NAME --data FILE...`: a minimal valid spec for a protocol kind, written from data files at
hand. What specrun can know is filled in (the format from the extension, each file's sha256, the columns whose
names are the kind's item fields, the fingerprints, the metrics the kind feeds); what only the author knows (where
the data comes from, its licence, the card's prose) is a placeholder marked `TODO`, so the spec validates and runs
at once and the marks say what is left to write."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from specrun.core.errors import SpecrunError, UsageError

TODO = "TODO"
PLACEHOLDER_REVISION = "0" * 40  # a well-formed commit hash that names no commit: the TODO beside it says so
FIELD_KINDS_READ = ("text", "number", "label", "binary", "label_path")  # one column each (a label path: a plain
# label); list-valued fields need a reader's help


def _q(value: str) -> str:
    """A YAML scalar that reads back as exactly this text (JSON's double-quoted string is YAML)."""
    return json.dumps(value, ensure_ascii=False)


def _split_name(path: Path) -> str:
    name = re.sub(r"[^a-z0-9_.-]+", "-", path.stem.lower()).strip("-._") or "split"
    return name[:64]


def _columns_of(path: Path, fmt: str, split: str) -> list[str]:
    """The file's column names, read as the run will read it (its reader, default options)."""
    from specrun.core.contracts import ReadLayout
    from specrun.core.registry import READERS

    rows = READERS[fmt].read(path, ReadLayout(format=fmt), split)
    for row in rows:
        return list(row)
    raise SpecrunError("no rows: a spec needs data to describe", file=str(path))


def formats_by_extension() -> dict[str, list[str]]:
    """File-name ending -> the registered formats that declare it (their `extensions`), endings in sorted order."""
    from specrun.core.registry import READERS

    found: dict[str, list[str]] = {}
    for entry in READERS.values():
        for extension in entry.extensions:
            found.setdefault(extension, []).append(entry.name)
    return dict(sorted(found.items()))


def _format_of(files: list[Path]) -> str:
    """The one format of the data files, told by their extensions as the readers declare them."""
    known = formats_by_extension()
    formats = {tuple(known.get(path.suffix.lower(), ())) for path in files}
    if () in formats or len(formats) != 1:
        raise UsageError(f"--data: expected files of one format, by extension {', '.join(known)}; got "
                         f"{', '.join(path.name for path in files)}")
    (names,) = formats
    if len(names) > 1:
        raise UsageError(f"--data: {files[0].suffix.lower()} is read by formats {', '.join(names)}; write the "
                         "source by hand with the one you mean (docs/readers.md)")
    return names[0]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _given_columns(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field or not column:
            raise UsageError(f"--column {pair}: expected FIELD=COLUMN, e.g. text1=sentence1")
        out[field] = column
    return out


def _metrics(kind: str) -> list[tuple[str, Any]]:
    """The metrics a new spec of this kind scores: the first two its example names, else the first two it feeds
    in the registry's order (its headline metrics, e.g. pearson and spearman, accuracy and f1_macro)."""
    from specrun.core.registry import METRICS, PROTOCOLS

    entry = PROTOCOLS[kind]
    names = list(entry.example().metrics) or [name for name, m in METRICS.items()
                                              if set(m.inputs) <= set(entry.info.outputs)]
    return [(name, METRICS[name]) for name in names[:2]]


def spec_text(kind: str, name: str, files: list[Path], given: dict[str, str]) -> tuple[str, list[str], list[str]]:
    """The spec's YAML, with the item fields guessed from the header and those left as placeholders."""
    from specrun.core.registry import PROTOCOLS

    entry = PROTOCOLS[kind]
    fields = entry.info.item_fields
    unknown = [field for field in given if field not in fields]
    if unknown:  # a typo would leave the field a TODO with nothing said of the flag
        raise UsageError(f"--column {unknown[0]}={given[unknown[0]]}: kind {kind} has no field {unknown[0]!r}; "
                         f"its fields: {', '.join(fields)}; nothing was written")
    unread = [f for f, k in fields.items() if k not in FIELD_KINDS_READ]
    if unread:
        raise UsageError(f"kind {kind}: fields {', '.join(unread)} are lists or corpora, which `new` cannot map "
                         "from a column; write the source by hand (docs/kinds.md, docs/readers.md)")
    required = [option for option, info in entry.Options.model_fields.items() if info.is_required()]
    guessable = [option for option in required if option in entry.info.split_options]
    if len(required) > len(guessable):
        raise UsageError(f"kind {kind} needs options {', '.join(o for o in required if o not in guessable)}, "
                         "which `new` cannot guess; write them by hand (docs/kinds.md)")
    fmt = _format_of(files)
    splits = [_split_name(path) for path in files]
    if len(set(splits)) != len(splits):
        raise UsageError(f"--data: two files give the same split name ({', '.join(splits)}); rename one")
    fit = None
    if guessable:
        if len(files) < 2:
            raise UsageError(f"kind {kind} fits on a split ({guessable[0]}): give two files, e.g. --data "
                             "train.tsv test.tsv (the one named train, else the first, is fitted on)")
        fit = next((s for s in splits if s.startswith("train")), splits[0])
    header = _columns_of(files[0], fmt, splits[0])
    by_name = {column.lower(): column for column in header}
    columns, guessed, missing = {}, [], []
    for field in fields:
        if field in given:
            columns[field] = given[field]
        elif field.lower() in by_name:
            columns[field] = by_name[field.lower()]
            guessed.append(field)
        else:
            columns[field] = f"{TODO}-{field}"
            missing.append(field)
    rows = max(1, *(sum(1 for _ in _rows(path, fmt, split)) for path, split in zip(files, splits, strict=True)))
    return _render(kind, name, fmt, files, splits, fit, guessable, columns, rows), guessed, missing


def _rows(path: Path, fmt: str, split: str) -> Any:
    from specrun.core.contracts import ReadLayout
    from specrun.core.registry import READERS

    return READERS[fmt].read(path, ReadLayout(format=fmt), split)


def _render(kind: str, name: str, fmt: str, files: list[Path], splits: list[str], fit: str | None,
            split_options: list[str], columns: dict[str, str], rows: int) -> str:
    """The spec's YAML, what `new` knows filled in and the rest marked TODO."""
    source = files[0].parent.name
    lines = [f"# Written by `specrun new {kind} {name}`: every TODO is the author's to fill in (docs/spec.md).",
             f"id: {name}", f"title: {_q(f'{TODO}: the card heading of {name}')}",
             "# metadata: {languages: [xxx-Xxxx], domains: [...], annotations_creators: ..., sample_creation: ...,",
             "#            date: [YYYY-MM-DD, YYYY-MM-DD], reference: URL}  (optional; MTEB's words: docs/spec.md)",
             "", "licence:", f"  data: {_q(f'{TODO}: the data licence id')}", "  publication: unconfirmed",
             f"  notice: {_q(f'{TODO}: what publication needs (shown at the top of the card while unconfirmed)')}",
             ""]
    lines += [*_source_lines(source, name, fmt, files, splits, columns, rows), "", "splits:"]
    for split in splits:
        lines += [f"  {split}:", f"    source: {source}", f"    source_split: {split}"]
        if split == fit:
            lines.append("    evaluate: false  # fitted on, never scored")
    lines += ["", "subset:", "  seed: 0  # seeds the subset draw and the bootstrap", "  splits:"]
    lines += [f"    {split}: all" for split in splits]
    lines += ["", "protocols:", f"  {kind}:", f"    kind: {kind}",
              f"    label: {_q(f'{TODO}: the protocol on the card')}", "    capability: embed.text.pooled",
              f"    description: {_q(f'{TODO}: how the model is asked (the card paragraph)')}"]
    if fit is not None:
        lines += ["    options:"] + [f"      {option}: {fit}" for option in split_options]
    lines += ["", "metrics:  # the kind feeds others too: `specrun list --metrics`, docs/kinds.md"]
    for metric, entry in _metrics(kind):
        low, high = (-1.0, 1.0) if entry.must_vary else (0.0, 1.0)
        lines += [f"  {metric}:", f"    metric: {metric}", f"    protocol: {kind}",
                  f"    label: {_q(f'{TODO}: how the card names {metric}')}", f"    direction: {entry.direction}",
                  f"    range: [{low}, {high}]  # {TODO}: check"]
    lines += ["", "uncertainty:", "  method: bootstrap", "  interval: auto", "  resamples: 1000", "  confidence: 0.95",
              "", *_card_lines(columns)]
    return "\n".join(lines) + "\n"


def _source_lines(source: str, name: str, fmt: str, files: list[Path], splits: list[str], columns: dict[str, str],
                  rows: int) -> list[str]:
    """The one source: where the files come from is the author's to write (TODO), what they hold is read here."""
    lines = ["sources:", f"  {source}:", "    type: git_file",
             f"    path: {TODO}/{TODO}  # {TODO}: the repository (owner/name) the files come from",
             f"    revision: {_q(PLACEHOLDER_REVISION)}  # {TODO}: its full commit hash",
             f"    licence: {_q(f'{TODO}: the data licence id')}",
             f"    fetch: false  # only the copy in <data-dir>/{source}/ is read until path and revision are real",
             f"    format: {fmt}", "    files:"]
    for path, split in zip(files, splits, strict=True):
        lines += [f"      {split}:", f"        path: {_q(path.name)}  # {TODO}: its path in the repository",
                  f"        sha256: {_sha256(path)}"]
    lines.append("    columns:  # item field -> column" + (
        f"; {TODO}: the fields not found in the header" if any(c.startswith(f"{TODO}-") for c in columns.values())
        else ""))
    lines += [f"      {field}: {_q(column)}" for field, column in columns.items()]
    lines += ["    ids:", f"      prefix: {name}-", f"      width: {len(str(rows - 1))}"]
    return lines


def _card_lines(columns: dict[str, str]) -> list[str]:
    """The card: each paragraph a TODO, its examples showing the id and every item field."""
    lines = ["card:  # optional for a local spec: without it no card is rendered and publishing is refused"]
    lines += [f"  {key}: {_q(f'{TODO}: {what}')}" for key, what in (
        ("what_is_measured", "what a good score means"), ("data", "where the data comes from and how it was made"),
        ("items", "which items are evaluated"), ("uncertainty", "what the interval resamples"),
        ("caveats", "what the numbers do not say"))]
    shown = {"id": "item_id", **{f: f for f in columns}}
    lines += ["  examples:", "    count: 3", f"    heading: {_q(f'{TODO}: a line above the example rows')}",
              "    columns:"] + [f"      {field}: {_q(header)}" for field, header in shown.items()]
    return lines


def cmd_new(args: argparse.Namespace, console: Console) -> int:
    """Write the spec where no file is: an existing one is refused; the fingerprints are computed before the spec
    appears (from a temporary file beside it, then linked into place), so nothing half-made is left under the
    name."""
    from specrun.core.registry import PROTOCOLS, did_you_mean

    if args.kind not in PROTOCOLS:
        raise UsageError(f"unknown protocol kind {args.kind!r}{did_you_mean(args.kind, list(PROTOCOLS))}; "
                         f"expected one of {', '.join(PROTOCOLS)}")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,63}", args.name):
        raise UsageError(f"NAME {args.name!r}: expected a lower-case name of letters, digits, '_', '.', '-'")
    files = _data_files(args.data)
    target = Path(args.output) if args.output else Path("specs") / f"{args.name}.yaml"
    if target.exists() or target.is_symlink():
        raise UsageError(f"{target}: exists; `new` never overwrites a spec (choose another NAME or -o PATH)")
    text, guessed, missing = spec_text(args.kind, args.name, files, _given_columns(args.column or []))
    data_dir = _write_new(target, text, files, missing)
    if guessed:
        print(f"specrun: columns guessed from the header by name: {', '.join(guessed)}", file=sys.stderr)
    if missing:
        print(f"specrun: fields not found in the header: {', '.join(missing)}: set them under `columns` (or "
              "--column FIELD=COLUMN), then run `specrun fingerprint --write`", file=sys.stderr)
    print(f"specrun: wrote {target}; run it with --data-dir {data_dir}; fill in every TODO before publishing",
          file=sys.stderr)
    print(target)
    return 0


def _data_files(paths: list[str]) -> list[Path]:
    """The --data files: each one there, all in one folder whose name (lower-case) names the source."""
    files = [Path(path) for path in paths]
    for path in files:
        if not path.is_file():
            raise UsageError(f"--data {path}: no such file")
    folders = {path.resolve().parent for path in files}
    source = files[0].resolve().parent.name
    if len(folders) != 1 or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,63}", source):
        raise UsageError("--data: put the files in one folder with a lower-case name (it names the source: "
                         f"<data-dir>/NAME/FILE), got {', '.join(str(p.parent) for p in files)}")
    return files


def _write_new(target: Path, text: str, files: list[Path], missing: list[str]) -> Path:
    """The spec written whole or not at all: fingerprinted (when every field has its column) in a temporary file
    beside target, then linked into place, which never overwrites. Returns the data folder the files lie in."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".new-{os.getpid()}-{target.name}")  # still a .yaml file: read as a spec
    temporary.write_text(text, encoding="utf-8")
    try:
        data_dir = files[0].resolve().parent.parent
        if not missing:
            temporary.write_text(_with_fingerprints(text, _fingerprints(temporary, data_dir)), encoding="utf-8")
        os.link(temporary, target)  # fails if the name appeared meanwhile: never overwrites
    except FileExistsError:
        raise UsageError(f"{target}: exists; `new` never overwrites a spec") from None
    except SpecrunError as exc:  # named by the spec it would be, not by the temporary file deleted below
        if exc.file != str(temporary):
            raise
        raise type(exc)(f"{exc.message}; {target} was not written", file=str(target), line=exc.line,
                        key=exc.key) from None
    finally:
        temporary.unlink(missing_ok=True)
    return data_dir


def _fingerprints(path: Path, data_dir: Path) -> dict[str, str]:
    """The fingerprint of each split read, computed as `specrun fingerprint` computes it (the file read through
    the plan and the data stage, so a column that does not hold its field's kind is one line here)."""
    from specrun.data import load_split
    from specrun.plan import make_plan
    from specrun.spec import load_spec

    plan = make_plan(load_spec(path, require_fingerprints=False))
    return {split.name: load_split(plan, split.name, data_dir, check=False).fingerprint
            for split in (*plan.splits, *plan.support_splits)}


def _with_fingerprints(text: str, found: dict[str, str]) -> str:
    """The spec with `fingerprint:` under each split's `source_split` (this file's own layout, so the line goes
    where an author would put it)."""
    out, split = [], None
    for line in text.splitlines():
        out.append(line)
        if re.fullmatch(r"  [a-z0-9][a-z0-9_.-]*:", line):
            split = line.strip()[:-1]
        elif line.startswith("    source_split: ") and split in found:
            out.append(f"    fingerprint: {found[split]}")
    return "\n".join(out) + "\n"
