"""How far the run's `options` object travels: a static walk, read from the source (no import, no run).

Method. Every module of src/specrun is parsed with `ast`. The walk starts at `specrun.runner.run` with its
parameter `options` tracked, and visits functions depth first, in the order their calls appear:

- in a visited function, a tracked expression is the tracked parameter's name, a local name assigned from it
  (`opts = options`), or `self.X` where `__init__` stored it (`self.options = options`: then every method of that
  class that reads `self.X` is visited too, as the object carries it there);
- a call passing a tracked expression as an argument (positional or by keyword) is followed into the callee when
  the callee can be named statically: a function of the same module, a name imported from a specrun module, a
  class (into its `__init__`, or the class itself for a dataclass: a stay, not followed further), `Cls.method` of
  an imported or local class, `module.function`, or `self.method`. The callee's parameter it lands on (by
  position, `self`/`cls` skipped, or by keyword) is the name tracked there. Calls on other objects (`x.f(options)`)
  are not followed: none carries `options` today (the walk reports them as unresolved);
- a copy (`replace(options, ...)`) is a new object, not followed.

Counts. A *stay* is a function (or dataclass) the object reaches; a *room* is a module holding at least one stay;
a *climb* is a step of the depth-first visit order where the next stay's module has a higher rank
(tests/test_architecture.py RANKS) than the stay before it: the object went down into a lower stage and had to
come back up (return to a caller) before going on, the number of separate descents a reader follows.

    python bench/options_walk.py            # stays / rooms / climbs, and each stay in visit order
    python bench/options_walk.py --quiet    # the three numbers only
    python bench/options_walk.py --parts    # the object and its parts (`options.encoder` passed on counts too)
"""

from __future__ import annotations

import ast
import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "specrun"
sys.path.insert(0, str(ROOT / "tests"))
from test_architecture import RANKS, module_name, stage_of  # noqa: E402


@dataclass
class Module:
    name: str
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # "f" or "Class.method"
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imported: dict[str, str] = field(default_factory=dict)  # local name -> "module:name" or "module:" (a module)


def parse_modules() -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path, PACKAGE)
        module = Module(name, ast.parse(path.read_text(encoding="utf-8")))
        for node in module.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                module.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                module.classes[node.name] = node
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        module.functions[f"{node.name}.{item.name}"] = item
        modules[name] = module
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("specrun"):
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    module.imported[alias.asname or alias.name] = f"{child}:" if child in modules else \
                        f"{node.module}:{alias.name}"
    return modules


def locate(modules: dict[str, Module], module: str, name: str) -> tuple[str, str] | None:
    """Where `name` of `module` is defined, following re-exports through packages' __init__."""
    for _ in range(8):
        found = modules.get(module)
        if found is None:
            return None
        if name in found.functions or name in found.classes:
            return module, name
        target = found.imported.get(name)
        if target is None or target.endswith(":"):
            return None
        module, name = target.split(":")
    return None


def callee(modules: dict[str, Module], here: str, cls: str | None, func: ast.expr) -> tuple[str, str] | None:
    """The (module, qualified name) a call's function names, or None when it cannot be told statically."""
    mod = modules[here]
    if isinstance(func, ast.Name):
        if func.id in mod.functions or func.id in mod.classes:
            return here, func.id
        target = mod.imported.get(func.id)
        if target and not target.endswith(":"):
            return locate(modules, *target.split(":"))
        return None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        base = func.value.id
        if base in ("self", "cls") and cls:
            return (here, f"{cls}.{func.attr}") if f"{cls}.{func.attr}" in mod.functions else None
        where = (here, base) if base in mod.classes else None
        target = mod.imported.get(base)
        if target and target.endswith(":"):
            return locate(modules, target[:-1], func.attr)
        if target:
            where = locate(modules, *target.split(":"))
        if where and f"{where[1]}.{func.attr}" in modules[where[0]].functions:
            return where[0], f"{where[1]}.{func.attr}"
    return None


def landing(modules: dict[str, Module], target: tuple[str, str], call: ast.Call,
            tracked: set[str]) -> tuple[tuple[str, str], str] | None:
    """The function the tracked argument lands in and its parameter name there (None: a dataclass, a stay only)."""
    module, name = target
    mod = modules[module]
    if name in mod.classes:
        if f"{name}.__init__" not in mod.functions:
            return None
        name = f"{name}.__init__"
    node = mod.functions[name]
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    for index, arg in enumerate(call.args):
        if is_tracked(arg, tracked) and index < len(params):
            return (module, name), params[index]
    for keyword in call.keywords:
        if keyword.arg and is_tracked(keyword.value, tracked):
            return (module, name), keyword.arg
    return None


PARTS = "--parts" in sys.argv  # follow `options.encoder`, `options.encoder.precision`, ... as well


def is_tracked(node: ast.expr, tracked: set[str]) -> bool:
    """The tracked object itself, or (--parts) an attribute read off it."""
    if expr_key(node) in tracked:
        return True
    return PARTS and isinstance(node, ast.Attribute) and is_tracked(node.value, tracked)


def expr_key(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


class Walk:
    def __init__(self, modules: dict[str, Module]) -> None:
        self.modules = modules
        self.order: list[tuple[str, str]] = []
        self.seen: set[tuple[str, str]] = set()
        self.unresolved: list[str] = []

    def visit(self, where: tuple[str, str], parameter: str | None) -> None:
        if where in self.seen:
            return
        self.seen.add(where)
        self.order.append(where)
        module, name = where
        mod = self.modules[module]
        if parameter is None or name not in mod.functions:
            return
        node = mod.functions[name]
        cls = name.split(".")[0] if "." in name else None
        tracked = {parameter}
        stored: set[str] = set()
        for sub in ast.walk(node):  # aliases and attributes the object is kept in
            if isinstance(sub, ast.Assign) and is_tracked(sub.value, tracked):
                for target in sub.targets:
                    key = expr_key(target)
                    if key:
                        tracked.add(key)
                        stored |= {key} if key.startswith("self.") else set()
        self.calls(node, module, cls, tracked)
        if cls and stored:  # the object kept on self: every method reading it is a stay
            for qualified in mod.functions:
                if qualified.startswith(f"{cls}.") and (module, qualified) not in self.seen:
                    method = mod.functions[qualified]
                    if any(expr_key(n) in stored for n in ast.walk(method) if isinstance(n, ast.Attribute)):
                        self.visit_method((module, qualified), stored)

    def visit_method(self, where: tuple[str, str], stored: set[str]) -> None:
        self.seen.add(where)
        self.order.append(where)
        module, name = where
        node = self.modules[module].functions[name]
        tracked = set(stored)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign) and is_tracked(sub.value, tracked):
                tracked |= {key for key in map(expr_key, sub.targets) if key}
        self.calls(node, module, name.split(".")[0], tracked)

    def calls(self, node: ast.AST, module: str, cls: str | None, tracked: set[str]) -> None:
        calls = sorted((sub for sub in ast.walk(node) if isinstance(sub, ast.Call)),
                       key=lambda c: (c.lineno, c.col_offset))
        for call in calls:
            passed = [a for a in (*call.args, *(k.value for k in call.keywords)) if is_tracked(a, tracked)]
            if not passed:
                continue
            target = callee(self.modules, module, cls, call.func)
            if target is None:
                self.unresolved.append(f"{module}: {ast.unparse(call.func)}")
                continue
            landed = landing(self.modules, target, call, tracked)
            if landed is None:
                self.visit(target, None)
            else:
                self.visit(*landed)


def rank(module: str) -> int:
    return RANKS[stage_of(module)]


def measure() -> tuple[int, int, int, Walk]:
    walk = Walk(parse_modules())
    walk.visit(("specrun.runner", "run"), "options")
    ranks = [rank(module) for module, _ in walk.order]
    climbs = sum(1 for before, after in itertools.pairwise(ranks) if after > before)
    return len(walk.order), len({module for module, _ in walk.order}), climbs, walk


def main() -> None:
    stays, rooms, climbs, walk = measure()
    if "--quiet" not in sys.argv:
        for module, name in walk.order:
            print(f"  {rank(module):>2} {module}.{name}")
        for line in walk.unresolved:
            print(f"  (not followed) {line}")
    print(f"options walk from runner.run: {stays} stays, {rooms} rooms, {climbs} climbs")


if __name__ == "__main__":
    main()
