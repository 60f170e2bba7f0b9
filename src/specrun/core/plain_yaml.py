"""YAML that is not a spec (a card's front matter, a file written here and read back): yaml.safe_load's values,
parsed by libyaml where PyYAML was built with it (its wheels are). The constructor is the safe one either way; only
the parsing is in C, about ten times faster than safe_load's pure-Python parser. Specs keep their line numbers and
stricter checks in `specrun.yamlsafe`, which composes with the same loader."""

from __future__ import annotations

from typing import Any

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_plain(text: str) -> Any:
    """yaml.safe_load(text), parsed by libyaml where PyYAML has it. Every failure is a yaml.YAMLError, which the
    callers turn into one line: the constructor's own ValueError (an integer of over 4,300 digits) and a lone
    surrogate's UnicodeEncodeError included, and the pure-Python parser's RecursionError on deep nesting."""
    try:
        return yaml.load(text, Loader=LOADER)  # a safe loader: CSafeLoader or SafeLoader
    except (ValueError, RecursionError) as exc:  # (UnicodeError is a ValueError)
        raise yaml.YAMLError(f"{type(exc).__name__}: {exc}") from None
