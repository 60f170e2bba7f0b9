"""The command line's grammar: one parser per command; the run command's (its flags made from the fields they
set, in groups) is `run_flags`."""

from __future__ import annotations

import argparse
import re
import typing
from typing import Any

from specrun import __version__
from specrun.cli._importing import add_import_parser
from specrun.cli.run_flags import add_cache, add_data_dir, add_published, add_run_parser, names
from specrun.core.errors import UsageError
from specrun.core.registry import did_you_mean

DEBUG_ENV = "SPECRUN_DEBUG"


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        choice = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)", message)
        if choice:  # name the closest choice too (argparse does so only from Python 3.14)
            known = [name.strip(" '") for name in choice.group(2).split(",")]
            message = message.replace(choice.group(0), choice.group(0) + did_you_mean(choice.group(1), known))
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="specrun",
        description="Evaluate sentence-embedding models on benchmarks declared in YAML. "
                    "`specrun SPEC...` is short for `specrun run SPEC...`.")
    parser.add_argument("--version", action="version", version=f"specrun {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help=f"on an error, show Python's traceback instead of one line (for bug reports; also "
                             f"{DEBUG_ENV}=1); may stand anywhere on the command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for add in (_run, _validate, _verify, _show, _card, _list, _new, _leaderboard, _compare, _check_published, _export,
                _publish, _publish_benchmark, _fingerprint, add_import_parser):
        add(sub)
    return parser


def _run(sub: Any) -> None:
    add_run_parser(sub, "for a suite: each member's published MTEB value beside ours in its table and suite.md (from "
                        "its spec metric's `mteb` counterpart), never in the aggregates' intervals")


def _validate(sub: Any) -> None:
    validate = sub.add_parser("validate", help="check spec files against the schema and their own references")
    validate.add_argument("specs", nargs="+", metavar="SPEC")


def _verify(sub: Any) -> None:
    verify = sub.add_parser("verify", help="check runs: every score recomputed from its predictions, the spec by "
                                           "sha256, and with the data the units and gold values re-read from it")
    verify.add_argument("results", nargs="+", metavar="RESULTS", help="results.json files, or runs' folders")
    verify.add_argument("--spec", metavar="SPEC", help="the spec the runs used (default: found by sha256)")
    verify.add_argument("--no-data", action="store_true",
                        help="check the result sets alone (consistency), without re-reading their data")
    add_data_dir(verify)
    add_cache(verify)


def _show(sub: Any) -> None:
    show = sub.add_parser("show", help="print the spec as validated (YAML): its `extends` chain merged")
    show.add_argument("spec", metavar="SPEC")


def _card(sub: Any) -> None:
    card = sub.add_parser("card", help="render a benchmark card (with --results: the results report)")
    card.add_argument("spec", metavar="SPEC")
    card.add_argument("--results", metavar="FILE",
                      help="results.json of a run on this very spec (same sha256); its scores are checked "
                           "against the predictions it pins")
    card.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    card.add_argument("--subset", metavar="NAME", help="a spec with `subsets`: the card of this subset (its data "
                                                       "and overrides; with --results, the run's own subset)")
    card.add_argument("--html", action="store_true",
                      help="write HTML (the Markdown rendered as CommonMark with tables, in a minimal page)")
    add_data_dir(card)
    add_cache(card)


def _list(sub: Any) -> None:
    listing = sub.add_parser("list", help="show the specs in a folder: protocols, splits, metrics, licence")
    listing.add_argument("folder", nargs="?", default="specs", metavar="DIR", help="(default: specs)")
    listing.add_argument("--formats", action="store_true",
                         help="list the file formats instead: specrun's own and those of installed plugins")
    listing.add_argument("--metrics", action="store_true",
                         help="list the registered metrics instead: inputs, direction, and the interval method "
                              "`uncertainty.interval: auto` gives each")
    listing.add_argument("--mteb", action="store_true",
                         help="list MTEB's active text tasks per type instead (with --type: of that type; --benchmark "
                              "NAME: its members; --language: in it, as MTEB codes it (jpn, jpn-Jpan); --domain: in "
                              "it): how many `specrun import mteb` converts, and how many each missing piece blocks")
    listing.add_argument("--benchmark", metavar="NAME", help="with --mteb: a named benchmark's members, as it "
                                                             "takes them (e.g. \"MTEB(eng, v2)\")")
    listing.add_argument("--tasks", action="store_true",
                         help="with --mteb: each task by name, whether it imports and what blocks it, instead of "
                              "the counts")
    listing.add_argument("--language", metavar="LANG",
                         help="only specs in this language: ISO 639-3 (jpn), with its script (jpn-Jpan), or as the "
                              "spec's `language` key writes it (ja); suites with such a member")
    listing.add_argument("--type", metavar="TYPE",
                         help="only specs of this task type (MTEB's: sts, retrieval, classification, ...; or a "
                              "protocol kind), derived from their protocols' kinds; suites with such a member")
    listing.add_argument("--domain", metavar="DOMAIN",
                         help="only specs whose metadata names this domain (MTEB's: medical, news, ...); suites with "
                              "such a member")


def _new(sub: Any) -> None:
    new = sub.add_parser("new", help="write a minimal valid spec for a protocol kind from data files: sha256 pins, "
                                     "columns found by name, fingerprints; the card and provenance as TODO marks")
    new.add_argument("kind", metavar="KIND", help="a protocol kind (docs/kinds.md), e.g. sts, classification")
    new.add_argument("name", metavar="NAME", help="the spec's id (lower case; names the file specs/NAME.yaml)")
    new.add_argument("--data", nargs="+", required=True, metavar="FILE",
                     help="the data file(s), their format told by the extension its reader declares (`specrun list "
                          "--formats`: .tsv, .csv, .jsonl, ...), one split each (named by the file), in "
                          "one folder named for the source (<data-dir>/SOURCE/FILE); a kind that fits on a split "
                          "fits on the file named train (else the first)")
    new.add_argument("--column", action="append", metavar="FIELD=COLUMN",
                     help="map an item field to a column (default: the column of the field's own name)")
    new.add_argument("-o", "--output", metavar="PATH", help="where to write the spec (default: specs/NAME.yaml); "
                                                            "an existing file is refused")


def _leaderboard(sub: Any) -> None:
    board = sub.add_parser("leaderboard", help="rank many runs (models x specs) with rank intervals from a joint "
                                               "paired bootstrap: leaderboard.md, .json and a self-contained .html")
    board.add_argument("results", nargs="+", metavar="RESULTS",
                       help="results.json files, or folders searched for them; or suite runs (suite.json, or "
                            "folders with one below): then each suite's models by its aggregates and Borda count")
    board.add_argument("-o", "--output", metavar="DIR", required=True, help="folder for the leaderboard files")
    board.add_argument("--title", metavar="TEXT", help="the page's title (default: specrun leaderboard)")
    board.add_argument("--resample-specs", action="store_true",
                       help="also resample the specs themselves in the across-spec bootstrap (default: units only)")
    board.add_argument("--prompt-variants", choices=("each", "worst", "mean"), default="each",
                       help="each: every prompt variant of a model is its own row; worst / mean: a model's runs "
                            "that differ in prompts only (a --prompt-set) are one row, scored in every resample by "
                            "its worst variant or the mean of them (default: each)")
    add_published(board, "every model in DIR with a board's `mteb` counterpart score, ranked with ours (a published "
                          "row is a point: a rank, no interval; ours get a rank interval among them); suite runs: "
                          "MTEB's Mean(Task), Mean(TaskType) and Borda over the models with every member")
    board.add_argument("--published-only", choices=("all", "comparable"), default="all",
                       help="with --published: comparable leaves rows flagged as not comparable (another dataset "
                            "revision, an mteb version whose numbers differ, an external/ source) out of the "
                            "ranking, still listed (default: all)")


def _compare(sub: Any) -> None:
    comparison = sub.add_parser("compare", help="paired comparison of two runs on the same spec and items")
    comparison.add_argument("a", metavar="A", help="results.json of model A, or its run's folder (or its suite.json: "
                                                   "a suite compared)")
    comparison.add_argument("b", metavar="B", help="results.json of model B, or its folder (or its suite.json)")
    comparison.add_argument("-o", "--output", metavar="FILE", help="also write the markdown table to FILE")
    add_published(comparison, "a table of A's and B's published MTEB values beside theirs (never in the paired "
                               "differences)")


def _check_published(sub: Any) -> None:
    check = sub.add_parser("check-published", help="our value, the published MTEB value and the difference, per "
                                                   "metric with an `mteb` counterpart")
    check.add_argument("results", nargs="+", metavar="RESULTS",
                       help="results.json of a run, or the run's folder (or several)")
    check.add_argument("--published", metavar="DIR", required=True,
                       help="a folder in MTEB's results layout: <org>__<model>/<revision>/<TaskName>.json")
    check.add_argument("--spec", metavar="SPEC", help="the spec the run used, when not at its recorded path or in "
                                                      "specs/ (found by sha256)")
    check.add_argument("--tolerance", type=_tolerance, metavar="T",
                       help="exit 1 when some |ours − published| exceeds T (0: exactly equal; a missing value is "
                            "not a failure)")


def _export(sub: Any) -> None:
    export = sub.add_parser("export", help="write runs as result files of another framework (MTEB's results "
                                           "repository layout)")
    export.add_argument("runs", nargs="+", metavar="RUN",
                        help="results.json of a run, or the run's folder (or several)")
    export.add_argument("--format", choices=("mteb",), required=True,
                        help="mteb: <org>__<model>/<revision>/<TaskName>.json, as mteb's TaskResult.from_disk reads "
                             "them, our interval in an extra `specrun` block")
    export.add_argument("-o", "--output", metavar="DIR", required=True, help="folder for the files (all or none)")
    export.add_argument("--spec", metavar="SPEC", help="the spec the runs used, when not at their recorded path or "
                                                       "in specs/")
    export.add_argument("--model-name", metavar="ORG/NAME",
                        help="the name the files give a local model folder's runs (--model DIR names no model); "
                             "recorded beside the run's own in the `specrun` block")


def _publish(sub: Any) -> None:
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


def _publish_benchmark(sub: Any) -> None:
    publish_benchmark = sub.add_parser("publish-benchmark", help="dataset card and eval.yaml of a benchmark; "
                                                                 "a dry run unless --push")
    publish_benchmark.add_argument("spec", metavar="SPEC")
    add_data_dir(publish_benchmark)
    add_cache(publish_benchmark)
    publish_benchmark.add_argument("--evaluation-framework", metavar="NAME", default="specrun",
                                   help="eval.yaml's evaluation_framework; the hub accepts only the frameworks it "
                                        "lists (default: specrun, not listed yet: the dry run says what "
                                        "registering takes)")
    _add_publishing(publish_benchmark, "OWNER/DATASET",
                    "dataset repo to upload README.md, eval.yaml and the evaluated splits (Parquet) to")


def _fingerprint(sub: Any) -> None:
    fingerprint = sub.add_parser("fingerprint", help="print the content fingerprint of each split that is read "
                                                     "(evaluated, or fitted on)")
    fingerprint.add_argument("spec", metavar="SPEC")
    fingerprint.add_argument("--write", action="store_true",
                             help="write the fingerprints into the spec file, keeping its comments and layout")
    fingerprint.add_argument("--subsets", metavar="A,B", type=names,
                             help="of a spec with `subsets`, these only (comma-separated; default: all): a copy "
                                  "that holds some subsets' rows pins those")
    add_data_dir(fingerprint)
    add_cache(fingerprint)


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


def _tolerance(text: str) -> float:
    """A finite number >= 0: 0 asks for exact equality."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value
