"""`specrun fingerprint SPEC [--write]`: the content fingerprint of each split that is read (evaluated, or fitted
on), and of each subset's splits for a spec with `subsets` (each subset reads its own data: its fingerprints go
under `subsets.NAME.splits`, which merge onto the spec's splits as every subset key does)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from specrun.core.errors import SpecError
from specrun.core.workspace import Workspace


def cmd_fingerprint(args: argparse.Namespace, console: Console) -> int:
    from specrun.data import resolve_data_dir

    workspace = Workspace.resolve(getattr(args, "cache_dir", None), getattr(args, "no_cache", False))
    changed = pin_spec(Path(args.spec), resolve_data_dir(args.data_dir), workspace, write=args.write,
                       subsets=getattr(args, "subsets", None))
    if args.write:
        print(f"{args.spec}: " + (f"updated {', '.join(changed)}" if changed else "already up to date"),
              file=sys.stderr)
    return 0


def pin_spec(path: Path, data_dir: Path | None, workspace: Workspace, *, write: bool, echo: bool = True,
             subsets: tuple[str, ...] | None = None) -> list[str]:
    """Every read split's fingerprint (each subset's for a spec with subsets, or those named), printed when
    `echo`, and written into the spec file when `write` (what changed is returned): `specrun fingerprint`, and
    `import --data-dir`."""
    from specrun.spec import load_spec, subset_specs

    loaded = load_spec(path, require_fingerprints=False)
    if write and loaded.extends:  # which file of the chain should hold a fingerprint is the author's call
        raise SpecError(f"fingerprint --write edits one file, and this spec extends {', '.join(loaded.extends)}; "
                        "run it without --write and put each printed fingerprint under `splits.NAME` of the "
                        "file that should hold it", file=loaded.display, key="extends")
    if subsets and not loaded.spec.subsets:
        raise SpecError("--subsets names subsets of a spec with `subsets`; this spec has none", file=loaded.display)
    if not loaded.spec.subsets:
        found, files = _fingerprints(loaded, data_dir, workspace, "", echo)
        by_subset: dict[str, dict[str, str]] = {}
        subset_files: dict[str, dict[str, dict[str, str]]] = {}
    else:
        found, files, by_subset, subset_files = {}, {}, {}, {}
        for one in subset_specs(loaded, list(subsets) if subsets else None, require_fingerprints=False):
            by_subset[str(one.subset)], subset_files[str(one.subset)] = _fingerprints(
                one, data_dir, workspace, f"{one.subset}/", echo)
    if not write:
        return []
    from specrun.spec import write_fingerprints

    return write_fingerprints(path, found, read_sha256=loaded.sha256, subsets=by_subset,
                              files=shared_pins(files, subset_files))


def shared_pins(files: dict[str, dict[str, str]], subset_files: dict[str, dict[str, dict[str, str]]]
            ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, dict[str, str]]]]:
    """A source's pins that every subset shares (one config read by all, as a `lang` column splits it) go once
    under the spec's own source; only those that differ (a config per subset) go under each subset."""
    names = {name for found in subset_files.values() for name in found}
    for name in names:
        pins = [found.get(name) for found in subset_files.values()]
        if all(one is not None and one == pins[0] for one in pins):
            files[name] = pins[0]  # type: ignore[assignment]
            for found in subset_files.values():
                del found[name]
    return files, subset_files


def _fingerprints(loaded: object, data_dir: Path | None, workspace: Workspace, shown: str,
                  echo: bool = True) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Each split's fingerprint, printed `[SUBSET/]SPLIT: sha256:...`; identity only (a run refuses what it cannot
    score), so the data is read with its checks off (but a source's pinned files are still checked: a pin is
    changed by hand, or removed and written again). With a data folder, each hub source read by `datasets` from
    its copy there also gets its data files' sha256 (its `files:`), printed `[SUBSET/]SOURCE:PATH: sha256`; a hub
    source with `mirror` files in a folder format gets each file it may read there (hub_files.mirror_files)."""
    from specrun.data import load_split
    from specrun.data.hub_files import file_pins, mirror_pins
    from specrun.plan import make_plan
    from specrun.spec import HubDataset

    plan = make_plan(loaded)  # type: ignore[arg-type]
    found, files = {}, {}
    for name in (split.name for split in (*plan.splits, *plan.support_splits)):
        split = load_split(plan, name, data_dir, check=False, workspace=workspace)
        found[name] = split.fingerprint
        if echo:
            print(f"{shown}{name}: {split.fingerprint}  ({split.n_source} items from {split.origin})")
        source = plan.split(name).source
        if data_dir is not None and isinstance(source.declared, HubDataset) and source.name not in files \
                and (source.reader is None or source.reader.folder):  # a file format's mirror file: not pinned
            files[source.name] = file_pins(source.declared, data_dir / source.name, workspace.memo) \
                if source.declared.mirror is None else mirror_pins(source, data_dir / source.name, workspace.memo)
            for relative, digest in files[source.name].items() if echo else ():
                print(f"{shown}{source.name}:{relative}: {digest}")
    return found, files
