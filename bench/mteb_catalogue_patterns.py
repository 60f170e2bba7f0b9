"""The whole-statement patterns of MTEB's clustering transforms that bench/mteb_catalogue.py reads (its own
module: the generator's line limit): attributes a transform assigns, splits joined in a loop, solo labels dropped,
a label text split by a mapped function, a train_test_split draw; matched on ast.unparse's normalised text."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import Any


def _literal(node: ast.AST, scope: dict[str, Any]) -> Any:
    from mteb_catalogue import literal  # the generator's reading of an argument (imported late: it imports us)

    return literal(node, scope)


def call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "?"


# the patterns of MTEB's clustering transforms, matched on ast.unparse's normalised text of the statements
SOLO_PATTERN = re.compile(
    r"(\w+), (\w+) = np\.unique\((\w+), return_counts=True\)\n(\w+) = np\.where\(\2 == 1\)\n"
    r"(\w+) = \1\[\4\]\nfor (\w+) in \5:\n    (\w+) = \3\.index\(\6\)\n    \3\.pop\(\7\)\n"
    r"    (\w+)\.pop\(\7\)")
JOIN_PATTERN = re.compile(
    r"for (\w+) in \[((?:'\w+', )*'\w+')\]:\n    (\w+)\.extend\(self\.dataset\[\w+\]\[\1\]\['(\w+)'\]\)\n"
    r"    (\w+)\.extend\(self\.dataset\[\w+\]\[\1\]\['(\w+)'\]\)")
SPLIT_TEXT_PATTERN = re.compile(
    r"def \w+\((\w+)(?:: dict)?\)(?: -> dict)?:\n    \1\['(\w+)'\] = \1\['\2'\]\.split\(('[^']*')\)"
    r"(?:\[:(\d+)\])?\n    return \1")
TRAIN_TEST_PATTERN = re.compile(
    r"self\.dataset\['(\w+)'\] = self\.dataset\['\1'\]\.train_test_split\(test_size=(\w+), "
    r"seed=([\w.]+)\)\['test'\]")


def from_dict_columns(body: list[ast.stmt]) -> dict[str, str]:
    """Variable -> column of the `Dataset.from_dict({...})` calls: the column a list built in a loop becomes."""
    found = {}
    for node in (n for statement in body for n in ast.walk(statement)):
        if isinstance(node, ast.Call) and call_name(node) == "from_dict" and node.args \
                and isinstance(node.args[0], ast.Dict):
            found.update({value.id: key.value for key, value in zip(node.args[0].keys, node.args[0].values,
                                                                     strict=True)
                          if isinstance(key, ast.Constant) and isinstance(value, ast.Name)})
    return found


def read_patterns(body: list[ast.stmt], scope: dict[str, Any], found: dict[str, Any]) -> set[int]:
    """The whole-statement patterns into `found`; the ids of the nodes they account for (not read again)."""
    skipped: set[int] = set()
    columns = from_dict_columns(body)
    for node in (n for statement in body for n in ast.walk(statement)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) \
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self" \
                and node.targets[0].attr != "dataset":
            found["sets"][node.targets[0].attr] = _literal(node.value, scope)
            skipped |= {id(n) for n in ast.walk(node)}
        if not isinstance(getattr(node, "body", None), list):
            continue
        text = "\n".join(ast.unparse(statement) for statement in node.body)
        for match in SOLO_PATTERN.finditer(text):
            if match[3] in columns and match[8] in columns:
                found["solo_dropped"].add(columns[match[3]])
                skipped |= _nodes_of(node.body, ("unique", "where", "index", "pop"))
        for match in JOIN_PATTERN.finditer(text):
            if match[3] in columns and match[5] in columns and not found["joined_splits"]:
                found["joined_splits"] = list(ast.literal_eval(f"[{match[2]}]"))
                found["renames"].update({match[4]: columns[match[3]], match[6]: columns[match[5]]})
                skipped |= _nodes_of(node.body, ("extend",))
    for statement in body:
        text = ast.unparse(statement)
        if (match := TRAIN_TEST_PATTERN.fullmatch(text)) is not None:
            size, seed = (_literal(ast.parse(part, mode="eval").body, scope) for part in (match[2], match[3]))
            found["train_test_split"].append({"split": match[1], "test_size": size, "seed": seed})
            skipped |= {id(n) for n in ast.walk(statement)}
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and call_name(node) == "map" and len(node.args) == 1 \
                    and isinstance(node.args[0], ast.Name) and not node.keywords:
                split = _split_text(scope.get(node.args[0].id))
                if split is not None:
                    found["split_text"][split[0]] = split[1]
                    skipped.add(id(node))
    return skipped


def _nodes_of(body: list[ast.stmt], names: tuple[str, ...]) -> set[int]:
    return {id(n) for statement in body for n in ast.walk(statement)
            if isinstance(n, ast.Call) and call_name(n) in names}


def _split_text(func: Any) -> tuple[str, dict[str, Any]] | None:
    """A module function mapped over the rows that only splits one text column: (column, {sep, max_parts})."""
    if not inspect.isfunction(func):
        return None
    try:
        text = ast.unparse(ast.parse(textwrap.dedent(inspect.getsource(func))))
    except (OSError, TypeError, SyntaxError):
        return None
    match = SPLIT_TEXT_PATTERN.fullmatch(text)
    if match is None:
        return None
    return match[2], {"sep": ast.literal_eval(match[3]), "max_parts": int(match[4]) if match[4] else None}


def hook_calls(cls: type, names: list[str]) -> dict[str, list[str]]:
    """For each overridden method, the names it calls (sorted): what lets an importer accept a hook that only adds
    scores of a known kind (a Retrieval task's task_specific_scores calling recall_cap, say) and refuse others."""
    found: dict[str, list[str]] = {}
    for name in names:
        func = inspect.getattr_static(cls, name, None)
        func = getattr(func, "__func__", func)  # a staticmethod's or classmethod's function
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
        except (OSError, TypeError, SyntaxError):
            found[name] = ["<no source>"]
            continue
        found[name] = sorted({call_name(node) for node in ast.walk(tree) if isinstance(node, ast.Call)})
    return found

