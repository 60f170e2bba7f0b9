"""The run command's grammar: every flag made from the field it sets (EncoderSettings' fields, RunOptions' fields),
its help that field's one text, and the flags shown in argument groups (model, settings, execution, selection,
cache); the parsed flags turned back into the run's options."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import re
import typing
from typing import Any

from specrun.core.options import DEFAULTS, RUN_GROUPS, RunOptions
from specrun.core.settings import EncoderSettings

# what each group holds: `specrun run --help` shows the flags in these groups (core.options.RUN_GROUPS' order)
GROUP_TEXTS = {
    "model": "which model is evaluated, and how its output becomes a vector",
    "settings": "what changes a vector or a score: each is recorded, and one away from its default names the "
                "run's folder",
    "execution": "where the run computes, where it writes and what it prints",
    "selection": "which parts of the specs are scored",
    "cache": "where data is read from and what is kept between runs",
}
MODEL_SETTINGS = ("adapter", "trust_remote_code")  # the settings shown with --model; every other is in settings


def with_default(text: str, default: Any) -> str:
    """The help text, with its default added where the text states none (a switch's default goes unsaid)."""
    if default is None or isinstance(default, bool) or "(default" in text:
        return text
    return f"{text} (default: {default:g})" if isinstance(default, float) else f"{text} (default: {default})"


@functools.cache
def option_types() -> dict[str, Any]:
    """Each RunOptions field's type, resolved once (a flag is made per field, and the grammar once per process)."""
    return typing.get_type_hints(RunOptions)


def add_option_flag(parser: Any, name: str, *flags: str) -> None:
    """A flag for a RunOptions field: `--<name>` (or `flags`), its help, metavar and grammar from the field's
    metadata (`core.options._option`), the default from DEFAULTS, the value's check from its type: a switch for
    a bool, a positive integer for an int, a positive number for a float, comma-separated names for a tuple."""
    field = next(f for f in dataclasses.fields(RunOptions) if f.name == name)
    default = getattr(DEFAULTS, name)
    kind = option_types()[name]
    options: dict[str, Any] = {"help": with_default(field.metadata["help"], default)}
    if kind is bool:
        options["action"] = "store_true"
    else:
        options["metavar"] = field.metadata["metavar"]
        types = {kind, *typing.get_args(kind)}
        checker = field.metadata.get("parse")
        options["type"] = (CHECKS[checker] if checker else positive_int if int in types
                           else positive_float if float in types else names if tuple[str, ...] in types else str)
        if "choices" in field.metadata:
            options["choices"] = field.metadata["choices"]
    parser.add_argument(*(flags or (f"--{name.replace('_', '-')}",)), dest=name, default=default, **options)


def add_setting_flags(parser: argparse.ArgumentParser, settings: type[EncoderSettings] = EncoderSettings,
                      groups: dict[str, Any] | None = None) -> None:
    """One flag per EncoderSettings field, from its metadata: `--<name>` (or the field's `flag`), its description
    as the help, metavar and default; choices from its Literal type or the registry it names; a switch for a
    bool; a positive integer for an int. `groups`: field name -> the argument group it is shown in."""
    from specrun.core.registry import ADAPTERS

    registries = {"adapters": ("auto", *ADAPTERS)}
    for name, info in settings.model_fields.items():
        meta = settings.meta(name)
        flag = meta["flag"] or f"--{name.replace('_', '-')}"
        options: dict[str, Any] = {"dest": name, "help": with_default(info.description or "", info.default),
                                   "default": info.default}
        if info.annotation is bool:
            options["action"] = "store_false" if info.default else "store_true"
        elif meta["choices_from"]:
            options["choices"] = registries[meta["choices_from"]]
        elif typing.get_origin(info.annotation) is typing.Literal:
            options["choices"] = typing.get_args(info.annotation)
        else:  # str | None, int, int | None
            options["type"] = positive_int if int in (info.annotation, *typing.get_args(info.annotation)) else str
            options["metavar"] = meta["metavar"]
        (groups or {}).get(name, parser).add_argument(flag, **options)


SHORT_FLAGS = {"output": ("-o", "--output")}  # as every other command names where its files go


def add_run_parser(sub: Any, published_help: str) -> argparse.ArgumentParser:
    """`specrun run`: the specs, then each RunOptions field's flag in its group (the encoder settings' flags
    where the `encoder` field stands), in the order `--help` shows them."""
    run = sub.add_parser("run", help="evaluate a model on one or more specs (the default command)")
    run.add_argument("specs", nargs="+", metavar="SPEC", help="benchmark spec YAML file(s)")
    groups = {title: run.add_argument_group(title, GROUP_TEXTS[title]) for title in RUN_GROUPS}
    for option in dataclasses.fields(RunOptions):
        if option.name == "encoder":
            add_setting_flags(run, groups={name: groups["model"] if name in MODEL_SETTINGS else groups["settings"]
                                           for name in EncoderSettings.model_fields})
        else:
            add_option_flag(groups[option.metadata["group"]], option.name, *SHORT_FLAGS.get(option.name, ()))
    add_published(groups["execution"], published_help)
    groups["execution"].add_argument("-q", "--quiet", action="store_true",
                                     help="no progress or table; print result paths only")
    return run


def run_options(args: argparse.Namespace) -> RunOptions:
    """The parsed flags as the run's options: each flag's destination is the name of its option or setting."""
    settings = EncoderSettings(**{name: getattr(args, name) for name in EncoderSettings.model_fields})
    return RunOptions(encoder=settings, **{option.name: getattr(args, option.name)
                                           for option in dataclasses.fields(RunOptions) if option.name != "encoder"})


def add_published(parser: Any, help_text: str) -> None:
    parser.add_argument("--published", metavar="DIR", help=f"MTEB result files (<org>__<model>/<revision>/"
                                                           f"<TaskName>.json): {help_text}")


def add_cache(parser: Any) -> None:
    add_option_flag(parser, "cache_dir")
    add_option_flag(parser, "no_cache")


def add_data_dir(parser: Any) -> None:
    add_option_flag(parser, "data_dir")


def names(value: str) -> tuple[str, ...]:
    found = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if not found:
        raise argparse.ArgumentTypeError("expected one or more comma-separated names")
    return found


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def folder_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,254}", text):
        raise argparse.ArgumentTypeError(f"expected a folder name of letters, digits, '.', '_', '+', '-' (up to "
                                         f"255, not starting with '.'), got {text!r}")
    return text


CHECKS = {"folder_name": folder_name}  # a RunOptions field's `parse`: a check its type alone does not say
