"""The commands: each reads its parsed flags, calls the stage that does the work, and prints what it made; every
error is left to `main`, which turns it into one line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from specrun.cli._exchange import cmd_check_published, cmd_export, run_files
from specrun.cli._importing import cmd_import
from specrun.cli._listing import cmd_list
from specrun.cli._new import cmd_new
from specrun.cli._paths import output_file, output_folder
from specrun.cli.fingerprint import cmd_fingerprint
from specrun.cli.run_flags import run_options
from specrun.core.errors import SpecrunError, UsageError

if TYPE_CHECKING:
    from specrun.core.options import RunOptions
    from specrun.core.workspace import Workspace
    from specrun.publish import HubCheck
    from specrun.spec import LoadedSpec


def workspace_of(args: argparse.Namespace) -> Workspace:
    from specrun.core.workspace import Workspace

    return Workspace.resolve(getattr(args, "cache_dir", None), getattr(args, "no_cache", False))


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    from specrun.reports import choice_notes, outside_notes
    from specrun.runner import run
    from specrun.suites import is_suite_file

    options = run_options(args)
    suites = [path for path in args.specs if is_suite_file(path)]
    if suites:
        return _run_suite(args.specs, suites, options, console, args.published)
    if args.published:
        raise UsageError("--published is for a suite run (a spec's run: `specrun check-published RESULTS "
                         "--published DIR`)")
    outputs = run(args.specs, options, console)
    try:  # the results are on disk from here on: an interrupt must not say otherwise
        limited = f" (limited to {options.limit} items per split: a smoke run)" if options.limit else ""
        table = Table(title=f"specrun results{limited}")
        columns = ("spec", *(("run",) if options.prompt_set else ()), "split", "metric", "value", "CI", "n")
        for column in columns:
            table.add_column(column, justify="right" if column in ("value", "n") else "left")
        for out in outputs:
            run_name = (out.results_path.parent.name,) if options.prompt_set else ()  # which variant
            for split, scores in out.results.scores.items():
                for metric, score in scores.items():  # a method other than percentile named beside its interval
                    method = "" if score.interval == "percentile" else f" {score.interval}"
                    table.add_row(out.results.spec_id, *run_name, split, metric, f"{score.value:.4f}",
                                  f"[{score.ci_low:.4f}, {score.ci_high:.4f}]{method}", str(score.n))
        console.print(table)
        for out in outputs:
            for note in (*choice_notes(out.results), *outside_notes(out.results)):
                print(f"specrun: note: {out.results.spec_id} {note}", file=sys.stderr)
            if not out.has_card:
                print(f"specrun: note: {out.results.spec_id} has no `card`: {out.report_path.name} has no card "
                      "sections", file=sys.stderr)
        for out in outputs:
            print(out.results_path)
    except KeyboardInterrupt:
        print(f"specrun: interrupted; the results were already written whole to "
              f"{', '.join(str(out.results_path.parent) for out in outputs)}", file=sys.stderr)
        return 130
    return 0


def _run_suite(paths: list[str], suites: list[str], options: RunOptions, console: Console,
               published_dir: str | None = None) -> int:
    """`specrun suites/NAME.yaml`: the members' table, then the aggregates; suite.json's path on stdout. With
    --published, a published column (no interval: "published", never in the aggregates' intervals)."""
    from specrun.core.types import AGGREGATE_LABELS
    from specrun.suites import run_suite
    from specrun.suites.published import published_mean

    if len(paths) != 1:
        raise UsageError(f"{suites[0]} is a suite: run it on its own (one suite, no specs beside it)")
    if options.subsets is not None:
        raise UsageError(f"--subsets is for a spec's run: {suites[0]} is a suite, whose members name their own "
                         "`subset`")
    published = None
    if published_dir is not None:  # checked before anything runs
        from specrun.mteb.results import PublishedDir

        published = PublishedDir(Path(published_dir))
    output = run_suite(suites[0], options, console, published)
    results = output.results
    beside = {p.index: p for p in output.published or []}
    limited = f" (limited to {options.limit} items per split: a smoke run)" if options.limit else ""
    table = Table(title=f"suite {results.suite_id}{limited}")
    columns = ("member", "task type", "metric", "value", "CI", "n", *(("published",) if published else ()))
    for column in columns:
        table.add_column(column, justify="right" if column in ("value", "n", "published") else "left")
    for m in results.members:
        shown = ("missing", "", "") if m.value is None else (f"{m.value:.4f}", f"[{m.ci_low:.4f}, {m.ci_high:.4f}]",
                                                              str(m.n))
        found = beside[m.index].found if m.index in beside else None
        extra = (("—" if found is None or found.value is None else f"{found.value.value:.4f}"),) if published else ()
        table.add_row(f"{m.spec_id} {m.split}", m.task_type, m.metric, *shown, *extra)
    for a in results.aggregates:
        partial = f" (partial, {a.members} of {len(results.members)})" if a.partial else ""
        mean = published_mean(list(beside.values())) if published and a.name == "mean_task" else None
        extra = (("—" if mean is None else f"{mean:.4f}"),) if published else ()
        table.add_row(AGGREGATE_LABELS[a.name] + partial, "", "", f"{a.value:.4f}",
                      f"[{a.ci_low:.4f}, {a.ci_high:.4f}]", "", *extra)
    console.print(table)
    print(output.path)
    return 0


def cmd_validate(args: argparse.Namespace, console: Console) -> int:
    from specrun.spec import load_spec
    from specrun.suites import is_suite_file, load_suite

    for path in args.specs:
        if is_suite_file(path):
            suite = load_suite(path)
            console.print(f"{path}: ok (suite {suite.suite.id}, {len(suite.members)} members)")
            continue
        loaded = load_spec(path)
        console.print(f"{path}: ok ({loaded.spec.id})")
    return 0


def cmd_verify(args: argparse.Namespace, console: Console) -> int:
    """Each run proved consistent and, unless --no-data, made from its data; one line each, or one error."""
    from specrun.data import resolve_data_dir
    from specrun.results.rederive import rederive
    from specrun.results.verify import verified_with_spec

    if args.no_data and args.data_dir is not None:
        raise UsageError("--data-dir is where --no-data would not look: give one or the other")
    for path in run_files(args.results):
        verified, loaded = verified_with_spec(path, args.spec)
        scores = sum(len(scores) for scores in verified.results.scores.values())
        line = f"{path}: consistent ({scores} scores recomputed from the predictions; spec {loaded.display})"
        if not args.no_data:
            found = rederive(verified, loaded, resolve_data_dir(args.data_dir), workspace_of(args))
            line += (f"; made from its data ({found.items} items re-read, {found.units} units among them, "
                     f"{found.gold} gold values equal to the data's)")
        print(line)
    return 0


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    """The spec as the model validates it: its `extends` chain merged, in the order the keys were written."""
    import yaml

    from specrun.spec import load_spec

    loaded = load_spec(args.spec, require_fingerprints=False)
    sys.stdout.write(yaml.safe_dump(loaded.located.data, sort_keys=False, allow_unicode=True, width=4096))
    return 0


def _card_spec(loaded: LoadedSpec, args: argparse.Namespace) -> LoadedSpec:
    """The spec a card is of: a subset's (named, or the one a subset run's results are of) where the spec has
    subsets, its data and overrides merged; the spec itself otherwise."""
    from specrun.results import read_results
    from specrun.spec import subset_specs

    name = args.subset
    if name is None and args.results and loaded.spec.subsets:
        run_id = read_results(Path(args.results)).spec_id
        name = run_id.removeprefix(f"{loaded.spec.id}.") if run_id.startswith(f"{loaded.spec.id}.") else None
    return subset_specs(loaded, [name])[0] if name is not None else loaded


def cmd_card(args: argparse.Namespace, console: Console) -> int:
    from specrun.core.files import write_atomic
    from specrun.data import example_items, resolve_data_dir
    from specrun.plan import make_plan
    from specrun.reports import render_card
    from specrun.results.verify import check_against_spec, load_verified
    from specrun.spec import load_spec

    output = output_file(args.output)
    if args.results:  # a run's folder, as every other reader of runs takes it
        args.results = str(run_files([args.results])[0])
    loaded = _card_spec(load_spec(args.spec), args)
    plan = make_plan(loaded)
    if loaded.spec.card is None and not args.results:
        print(f"specrun: {args.spec} has no `card`: no card rendered", file=sys.stderr)
        return 0
    results = None
    if args.results:
        verified = load_verified(args.results)
        if verified.results.spec_id != loaded.spec.id:
            raise SpecrunError(f"results are for spec {verified.results.spec_id!r}, not {loaded.spec.id!r}",
                               file=args.results)
        check_against_spec(verified, loaded)
        results = verified.results
    if results is not None and results.card_examples is not None:
        from specrun.core.types import Item

        items = [Item(id=row.id, fields=dict(row.fields)) for row in results.card_examples]  # the run's own rows
    else:
        items = example_items(plan, resolve_data_dir(args.data_dir), workspace_of(args))
    text = render_card(loaded.spec, items, results)
    if loaded.spec.card is None:
        print(f"specrun: {args.spec} has no `card`: the report has no card sections", file=sys.stderr)
    if args.html:  # the same Markdown rendered (CommonMark + GFM tables) in a minimal page
        from specrun.publish import guess_language
        from specrun.reports import render_html

        # <html lang> takes one tag: a spec of several languages (a bitext pair) is read as its first
        text = render_html(text, loaded.spec.title, (guess_language(loaded.spec, items) or "en").split(",")[0])
        if results is not None:  # the plots travel inside the page: it may be written anywhere
            from specrun.reports import embed_plots

            text = embed_plots(text, Path(args.results).parent, list(results.plots.values()))
    if output:
        write_atomic(output, text)
        print(args.output)
    else:
        sys.stdout.write(text)
    return 0


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    from specrun.board.compare import compare, markdown
    from specrun.core.files import write_atomic

    output = output_file(args.output)
    args.a, args.b = (str(path) for path in run_files([args.a, args.b], suites=True))  # a run's folder, as elsewhere
    published = None
    if args.published:
        from specrun.mteb.results import PublishedDir

        published = PublishedDir(Path(args.published))
    from specrun.board.suites.runs import is_suite_json

    if is_suite_json(Path(args.a)) or is_suite_json(Path(args.b)):
        return _compare_suites(args, output)
    a, b, differences = compare(Path(args.a), Path(args.b))
    text = markdown(a, b, differences)
    if published is not None:
        from specrun.board.compare import published_markdown

        text += published_markdown(a, b, Path(args.a), Path(args.b), published)
    if output:
        write_atomic(output, text)
    sys.stdout.write(text)
    return 0


def _compare_suites(args: argparse.Namespace, output: Path | None) -> int:
    """Two suite.json (dispatched on their `format`): the paired aggregate and member differences."""
    from specrun.board.suites.compare import compare_suites, suite_compare_markdown
    from specrun.board.suites.runs import is_suite_json
    from specrun.core.files import write_atomic

    for path in (args.a, args.b):
        if not is_suite_json(Path(path)):
            raise SpecrunError("a suite run compares only with a suite run (suite.json); this is not one", file=path)
    if args.published:
        raise SpecrunError("--published is not supported for suites; compare the members' runs with it")
    text = suite_compare_markdown(compare_suites(Path(args.a), Path(args.b)))
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
    folder = output_folder(output)
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
    from specrun.data import example_items, load_splits, resolve_data_dir
    from specrun.plan import make_plan
    from specrun.publish import Confirmation, benchmark_publication, card_gate, data_withheld, licence_gate
    from specrun.spec import load_spec

    loaded = load_spec(args.spec)
    plan, spec = make_plan(loaded), loaded.spec
    card_gate(spec, f"spec {args.spec}")  # before the licence gate: the dataset card is made from it
    confirmation = Confirmation(args.confirm_licence) if args.confirm_licence else None
    if args.push:  # before any data is read or the hub is asked; a dry run shows the files, then refuses
        licence_gate(spec.licence.publication, spec.licence.data, f"{args.spec} ({spec.id})", confirmation)
    data_dir, workspace = resolve_data_dir(args.data_dir), workspace_of(args)
    splits = None
    if data_withheld(spec) is None:  # the evaluated splits and the ones protocols fit on go up as Parquet
        splits = {name: split.items for name, split in load_splits(plan, data_dir, workspace=workspace).items()}
        examples = splits[plan.splits[0].name]
    else:
        examples = example_items(plan, data_dir, workspace)
    files, check = benchmark_publication(spec, splits, examples, confirmation, args.evaluation_framework, args.spec,
                                         push=args.push)
    _publish(files, args.repo, "dataset", args.push, args.output, f"specrun benchmark {loaded.spec.id}", check,
             args.create_pr)
    return 0


def cmd_leaderboard(args: argparse.Namespace, console: Console) -> int:
    from specrun.board.leaderboard import build_leaderboard, said_mode
    from specrun.board.suites.leaderboard import build_suite_leaderboard, suite_inputs

    suites = said_mode(args.results, suite_inputs([Path(p) for p in args.results]))  # a suite board is said
    if suites is not None:
        if args.prompt_variants != "each" or args.resample_specs:
            raise SpecrunError("--prompt-variants and --resample-specs are not supported for suite runs")
        for path in build_suite_leaderboard(suites, Path(args.output), title=args.title,
                                            published=Path(args.published) if args.published else None,
                                            published_only=args.published_only):
            print(path)
        return 0
    for path in build_leaderboard([Path(p) for p in args.results], Path(args.output), title=args.title,
                                  console=console, resample_specs=args.resample_specs,
                                  prompt_variants=args.prompt_variants,
                                  published=Path(args.published) if args.published else None,
                                  published_only=args.published_only):
        print(path)
    return 0


# the one command table: the parser's subcommands and the dispatch both read it
COMMAND_FUNCTIONS = {"run": cmd_run, "validate": cmd_validate, "verify": cmd_verify, "show": cmd_show, "card": cmd_card,
                     "fingerprint": cmd_fingerprint, "list": cmd_list, "new": cmd_new, "compare": cmd_compare,
                     "publish": cmd_publish, "publish-benchmark": cmd_publish_benchmark, "leaderboard": cmd_leaderboard,
                     "check-published": cmd_check_published, "export": cmd_export, "import": cmd_import}
