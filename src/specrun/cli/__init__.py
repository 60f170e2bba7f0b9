"""Command line: `specrun SPEC... [--model M]` runs; `validate`, `card`, `fingerprint` help write specs; `compare`,
`leaderboard`, `publish` read runs back. The grammar is `_parser`, the commands `_commands`.

Bad input of any kind ends in one line on stderr and exit code 2; a traceback means a bug in specrun.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
from collections.abc import Sequence

from rich.console import Console

from specrun.cli._commands import COMMAND_FUNCTIONS
from specrun.cli._parser import DEBUG_ENV, build_parser
from specrun.cli.run_flags import run_options
from specrun.core.errors import SpecrunError, Terminated, os_error_text
from specrun.core.registry import ADAPTERS

__all__ = ["DEBUG_ENV", "build_parser", "entry", "main", "run_options"]


LOG_WIDTH = 1000  # columns of stderr when it is not a terminal


@functools.cache
def _parser(adapters: tuple[str, ...]) -> argparse.ArgumentParser:
    """One grammar per registry state: a caller running `main` many times (a notebook, the tests) builds it once,
    and again only when an adapter was registered since (`--adapter` lists them)."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # --traceback (anywhere) or SPECRUN_DEBUG=1: re-raise instead of the one line, for bug reports
    debug = "--traceback" in args_list or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    args_list = [arg for arg in args_list if arg != "--traceback"]
    if args_list and args_list[0] not in COMMAND_FUNCTIONS and not args_list[0].startswith("-"):
        args_list.insert(0, "run")
    parser = _parser(tuple(ADAPTERS))
    try:
        args = parser.parse_args(args_list)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        # not a terminal (a log, CI): no width to fit, so tables print names whole instead of cutting them at 80
        console = Console(stderr=True, quiet=getattr(args, "quiet", False),
                          width=None if sys.stderr.isatty() else LOG_WIDTH)
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


def entry() -> None:
    """The process's command (`specrun`, `python -m specrun`): `main`, then exit. Everything the command wrote
    is closed by then; what the garbage collector tracks is frozen, so the interpreter's exit does not walk the
    hundreds of thousands of objects torch and transformers made (0.45 s of a 16 s run, bench/vs_mteb.py).
    atexit handlers and the modules' teardown still run. Not for a library caller, whose process goes on."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()
    raise SystemExit(code)
