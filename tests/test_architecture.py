"""The house follows the flow (README "Layout"), checked by walking every module's imports, those inside functions
included: no module imports a later stage, there is no import cycle (same rank included), a registry is read only
where its provider may be imported, nothing outside the bottom layer writes into it, and every name below exists.
A new kind of thing registers from one file."""

from __future__ import annotations

import ast
import functools
import importlib
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from specrun.core.plain_yaml import load_plain

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "specrun"
pytestmark = pytest.mark.xdist_group("architecture")  # one worker parses every module (`parsed`), not both

# The flow, bottom first: a module may import its own rank or a lower one, never a higher one. The kind packages
# (search, readers, protocols, metrics) sit just above the bottom layer: they define what a kind of thing is and
# import nothing but `core` (and `search`), so any stage may read their entries through a registry.
RANKS = {
    "core": 0,
    "search": 1,
    "readers": 2, "protocols": 2, "metrics": 2,
    "yamlsafe": 3, "spec": 3,
    # one subject across the flow, ranked module by module: MTEB's vocabularies and score mapping are the spec's,
    # its result files, export and catalogue sit with the other stages that read many runs
    "mteb.vocabulary": 3, "mteb.score_ref": 3,
    "plan": 4,
    "data": 5,
    "encoders": 6,
    "evaluation": 7,
    "results": 8,
    "mteb": 9,
    # a suite file and suite.json's model are read by the board (below the runner); a suite's run is above it
    "suites.model": 9, "suites.results": 9,
    "prompt_sets": 4,
    "reports": 10, "publish": 10, "board": 10, "outputs": 10,
    "runner": 11,
    "suites": 12,
    "cli": 13, "__main__": 14, "__init__": 0,
}
# each registry, and the package that fills it: reading a registry imports its provider
REGISTRY_PROVIDERS = {"PROTOCOLS": "protocols", "METRICS": "metrics", "READERS": "readers", "readers": "readers",
                      "register_reader": "readers", "ADAPTERS": "encoders", "FIELD_KINDS": "core"}


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per process: the parametrised checks read every module each (2,441
    parses in a quick loop, half of this file's time). The trees are only read."""
    return ast.parse(path.read_text(encoding="utf-8"))


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("specrun", *parts))


def stage_of(module: str) -> str:
    """specrun.data.items -> data; specrun.cli -> cli; specrun -> __init__; specrun.mteb.vocabulary ->
    mteb.vocabulary (a module ranked on its own in RANKS)."""
    parts = module.split(".")
    if len(parts) > 2 and ".".join(parts[1:3]) in RANKS:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else "__init__"


def modules_of(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def imports_of(path: Path, known: dict[str, Path], package: Path = PACKAGE) -> set[str]:
    """The specrun modules `path` imports (a name imported from a package is its submodule when one exists)."""
    tree = parsed(path)
    own = module_name(path, package)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("specrun")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = own if is_package else own.rsplit(".", 1)[0]
                anchor = anchor.rsplit(".", node.level - 1)[0] if node.level > 1 else anchor
                base = f"{anchor}.{base}" if base else anchor
            if not base.startswith("specrun"):
                continue
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in known else base)
    return {name for name in found if name != own}


def registry_reads(path: Path) -> set[str]:
    """The registries a module touches by name (PROTOCOLS, METRICS, ...)."""
    tree = parsed(path)
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return names & set(REGISTRY_PROVIDERS)


def writes_into_core(path: Path) -> list[str]:
    """Assignments, item writes and mutating calls on names imported from the bottom layer, outside its registries'
    checked `register` (e.g. `FIELD_KINDS.setdefault(...)`, `types.X = ...`)."""
    tree = parsed(path)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("specrun.core", "specrun.types",
                                                                                "specrun.registry")):
            imported |= {alias.asname or alias.name for alias in node.names}
        if isinstance(node, ast.ImportFrom) and node.module == "specrun":
            imported |= {alias.asname or alias.name for alias in node.names
                         if alias.name in ("types", "registry", "core")}
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target) in imported:
                found.append(f"line {node.lineno}: assigns into {ast.unparse(target)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "setdefault", "update", "__setitem__", "pop", "clear") and _root(node.func.value) in imported:
            found.append(f"line {node.lineno}: {ast.unparse(node.func)}(...)")
    return found


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = iter(range(sys.maxsize))

    def visit(node: str) -> None:
        index[node] = low[node] = next(counter)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules_of(package)
    return {name: imports_of(path, known, package) & set(known) for name, path in known.items()}


MODULES = modules_of()


def test_every_rank_names_a_real_stage_and_every_stage_has_a_rank() -> None:
    stages = {stage_of(name) for name in MODULES}
    assert not stages - set(RANKS), f"place these in RANKS (README 'Layout'): {sorted(stages - set(RANKS))}"
    assert not set(RANKS) - stages, f"stale names in RANKS: {sorted(set(RANKS) - stages)}"
    assert set(REGISTRY_PROVIDERS.values()) <= stages


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_stage_imports_a_later_stage(module: str) -> None:
    own = stage_of(module)
    later = sorted(name for name in imports_of(MODULES[module], MODULES)
                   if stage_of(name) != own and RANKS.get(stage_of(name), 99) > RANKS[own])
    assert not later, f"{module} (rank {RANKS[own]}) imports later stages: {later}"


@pytest.mark.parametrize("module", sorted(name for name in MODULES if name != "specrun.core.registry"))
def test_registries_are_read_only_where_their_provider_may_be_imported(module: str) -> None:
    own = stage_of(module)
    against = sorted(name for name in registry_reads(MODULES[module])
                     if RANKS[REGISTRY_PROVIDERS[name]] > RANKS[own])
    assert not against, f"{module} (rank {RANKS[own]}) reads registries filled by later stages: {against}"


@pytest.mark.parametrize("module", sorted(name for name in MODULES if stage_of(name) != "core"))
def test_nothing_outside_the_bottom_layer_writes_into_it(module: str) -> None:
    assert not writes_into_core(MODULES[module]), f"{module}: {writes_into_core(MODULES[module])}"


def test_no_import_cycles_same_rank_included() -> None:
    assert not cycles(import_graph()), f"import cycles: {cycles(import_graph())}"


def test_the_bottom_layer_imports_no_stage() -> None:
    for module, path in MODULES.items():
        if stage_of(module) == "core":
            outside = sorted(name for name in imports_of(path, MODULES) if stage_of(name) != "core")
            assert not outside, f"{module} imports {outside}"


# A module does one job and a function one step: past these, split it. An exception names the module (or
# module:function) and says why it stays whole; the list is short on purpose.
MODULE_LINES = 400
FUNCTION_LINES = 60
LONG_MODULES: dict[str, str] = {}
LONG_FUNCTIONS: dict[str, str] = {}


def long_parts(package: Path = PACKAGE) -> tuple[dict[str, int], dict[str, int]]:
    """Modules over MODULE_LINES lines and functions (methods included) over FUNCTION_LINES, by name."""
    modules, functions = {}, {}
    for path in sorted(package.rglob("*.py")):
        name = str(path.relative_to(package))
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MODULE_LINES:
            modules[name] = len(text.splitlines())
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    functions[f"{name}:{node.name}"] = length
    return modules, functions


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: Path, attributes: bool = False) -> list[str]:
    """Names with a leading underscore imported from another specrun module (a module's private name is its own:
    used elsewhere, it is API and is named as such); with `attributes`, also read off an imported specrun module
    (`task_facts._load()`). A module private by name (`board._ranking`) is its package's to import."""
    tree = parsed(path)
    found, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("specrun"):
            found += [f"line {node.lineno}: {node.module}.{alias.name}" for alias in node.names
                      if _private(alias.name) and not (PACKAGE.parent / (node.module or "").replace(".", "/")
                                                       / f"{alias.name}.py").is_file()]
            modules |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            modules |= {alias.asname for alias in node.names if alias.asname and alias.name.startswith("specrun")}
    if attributes:
        found += [f"line {node.lineno}: {node.value.id}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in modules and _private(node.attr)]
    return found


# a file whose every `from specrun... import` line names no private name and neither opens a parenthesis nor
# continues on the next line imports none: no need to parse it (the tests are 1.4 MB, most of this check's time)
MAY_IMPORT_PRIVATE = re.compile(r"from specrun[\w.]* import [^\n]*(\(|\\$|\b_[A-Za-z])", re.MULTILINE)


def test_no_private_name_is_imported_across_modules() -> None:
    """src and bench read no private name off another module either; a test may (fault injection patches one)."""
    tests = Path(__file__).resolve().parent
    bench = tests.parent / "bench"
    checked = [*PACKAGE.rglob("*.py"), *bench.glob("*.py"),
               *(path for path in tests.rglob("*.py") if MAY_IMPORT_PRIVATE.search(path.read_text(encoding="utf-8")))]
    offenders = {str(path): found for path in checked
                 if (found := private_imports(path, attributes=tests not in path.parents))}
    assert not offenders, f"private names imported across modules (make them public, or keep them home): {offenders}"


def test_every_package_names_its_api() -> None:
    """Each package's __init__ says what it offers (`__all__`), and every name listed is there."""
    missing, broken = [], []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        tree = parsed(init)
        names = [node for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)]
        if init.parent == PACKAGE:
            continue  # the top level's API is its version and `python -m specrun`
        if not names:
            missing.append(str(init.relative_to(PACKAGE)))
            continue
        module = importlib.import_module(module_name(init))
        broken += [f"{module.__name__}.{name}" for name in module.__all__ if not hasattr(module, name)
                   and not (init.parent / f"{name}.py").is_file() and not (init.parent / name).is_dir()]
    assert not missing, f"packages without __all__: {missing}"
    assert not broken, f"names in __all__ that the package lacks: {broken}"


def test_modules_and_functions_are_short() -> None:
    modules, functions = long_parts()
    assert {name: n for name, n in modules.items() if name not in LONG_MODULES} == {}
    assert {name: n for name, n in functions.items() if name not in LONG_FUNCTIONS} == {}
    stale = [name for name in (*LONG_MODULES, *LONG_FUNCTIONS) if name not in {**modules, **functions}]
    assert stale == [], "an exception no longer needed: take it off the list"


RUN_LINES = 30  # `runner._run`: the flow in one screen (issue 47 item 1; 47 lines before the encoder session)


def test_the_run_reads_as_the_flow_and_the_encoder_stage_never_sees_the_run_options() -> None:
    """`runner._run` stays one screen: the encoder session (encoders.session), the data stage and the writers own
    the rest, so a run-wide setting does not lengthen it; the encoder stage is handed the parts of the options it
    reads (`EncoderSettings`, `Execution`), never `RunOptions` whole."""
    tree = parsed(MODULES["specrun.runner"])
    run = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "_run")
    assert run.end_lineno is not None and run.end_lineno - run.lineno + 1 <= RUN_LINES
    readers = [name for name, path in MODULES.items()
               if stage_of(name) in ("encoders", "evaluation") and "RunOptions" in names_in(path)]
    assert readers == []


def names_in(path: Path) -> set[str]:
    """Every name a module reads or imports."""
    tree = parsed(path)
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} | {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_the_cycle_check_finds_a_cycle() -> None:
    """The checker itself: a two-module cycle and a three-module one are found, a chain is not."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def kind_files(package: str) -> Iterator[Path]:
    yield from sorted((PACKAGE / package).glob("*.py"))


# --- a new protocol, metric and reader, registered from this module alone ----------------------------------------

TOY_SPEC = """\
id: toy
title: Toy lengths
licence: {data: cc0-1.0, publication: confirmed}
sources:
  toy:
    type: git_file
    path: owner/toy
    revision: 0123456789abcdef0123456789abcdef01234567
    licence: cc0-1.0
    format: semicolons
    fetch: false
    options: {marker: "#"}
    files:
      test: {path: toy.txt}
    columns: {text: sentence, target: length}
    ids: {prefix: toy-, width: 2}
splits:
  test: {source: toy, source_split: test, fingerprint: "FINGERPRINT"}
subset: {seed: 3, splits: {test: all}}
protocols:
  norms:
    kind: toy_norm
    label: Norm
    capability: embed.text.pooled
    description: the norm of the first half of each vector against the text's length
    options: {scale: 2.0}
metrics:
  agreement:
    metric: toy_sign_agreement
    protocol: norms
    label: Sign agreement
    direction: higher
    range: [0.0, 1.0]
uncertainty: {method: bootstrap, interval: percentile, resamples: 200, confidence: 0.9}
card:
  what_is_measured: w
  data: d
  items: i
  uncertainty: u
  caveats: c
  examples: {count: 1, heading: Examples, columns: {id: item_id, text: sentence}}
"""


def test_toy_protocol_metric_and_reader_registered_from_a_test(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind, a metric and a reader registered from a test module with no other edit: the kind is one screen
    (Options, info with its fields, outputs and unit, run, example), the grid runs its example and a spec using
    all three runs through the CLI; a text its run embeds that texts() did not announce is one line naming the
    kind and the field, exit 2."""
    import numpy as np
    from pydantic import BaseModel, ConfigDict

    from specrun.core import registry
    from specrun.core.contracts import KindExample, KindInfo, MetricEntry, ProtocolKind, RunContext
    from specrun.core.types import Item, Outputs, Strict
    from specrun.data import load_split
    from tests.conftest import assert_one_line_error, plan_of, run_cli, run_ok
    from tests.protocols.test_kind_grid import run_example

    texts = ["a cat", "the quick brown fox jumps", "hello", "a very long sentence about embeddings and such",
             "two words", "one", "several short words here", "and finally the last and longest line of them all"]

    class ToyOptions(Strict):
        scale: float = 1.0

    class ToyProtocol(ProtocolKind[ToyOptions]):
        """Toy: a per-text score, the scaled norm of half the vector."""

        Options = ToyOptions
        info = KindInfo(item_fields={"text": "text", "target": "number"}, outputs=("score", "target"), unit="texts")

        def run(self, items: Sequence[Item], ctx: RunContext, options: ToyOptions) -> Outputs:
            vectors = ctx.embed([item.fields["text"] for item in items], "text")
            half = vectors[:, : vectors.shape[1] // 2]
            return Outputs(unit=self.info.unit, ids=[item.id for item in items], arrays={
                "score": options.scale * np.linalg.norm(half, axis=1),
                "target": np.array([item.fields["target"] for item in items])})

        def example(self) -> KindExample:
            return KindExample(items=[Item(id=f"t{i}", fields={"text": text, "target": float(len(text.split()))})
                                      for i, text in enumerate(texts)], options={"scale": 2.0})

    def sign_agreement(score: np.ndarray, target: np.ndarray, weights: np.ndarray) -> np.ndarray:
        agree = (score > np.median(score)) == (target > np.median(target))
        return (weights * agree).sum(axis=-1) / weights.sum(axis=-1)

    def read_semicolons(path: Path, layout: object, split: str) -> list[dict[str, str]]:
        marker = layout.options["marker"]  # type: ignore[attr-defined]
        return [dict(zip(("sentence", "length"), line.split(";"), strict=True))
                for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith(marker)]

    class SemicolonOptions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        marker: str

    (tmp_path / "data" / "toy").mkdir(parents=True)
    (tmp_path / "data" / "toy" / "toy.txt").write_text(
        "# text;length\n" + "".join(f"{t};{len(t.split())}\n" for t in texts), encoding="utf-8")
    registry.PROTOCOLS.register("toy_norm", ToyProtocol())
    registry.METRICS.register("toy_sign_agreement", MetricEntry(("score", "target"), sign_agreement))
    registry.register_reader(registry.ReaderEntry("semicolons", read_semicolons, options=SemicolonOptions))
    try:
        outputs, _ = run_example("toy_norm")  # the per-kind grid runs its example, as it runs every kind's
        assert len(outputs.ids) == len(texts)
        spec = tmp_path / "toy.yaml"
        spec.write_text(TOY_SPEC.replace('"FINGERPRINT"', "sha256:" + "0" * 64), encoding="utf-8")
        found = load_split(plan_of(spec), "test", tmp_path / "data", check=False).fingerprint
        spec.write_text(TOY_SPEC.replace('"FINGERPRINT"', found), encoding="utf-8")
        results = run_ok([str(spec), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing", "--output",
                          str(tmp_path / "out")], capsys)
        score = results.scores["test"]["agreement"]
        assert score.n == len(texts) and 0.0 <= score.ci_low <= score.value <= score.ci_high <= 1.0
        from specrun.core.settings import EncoderSettings
        from specrun.encoders.adapters import HashingAdapter  # the same vectors, computed by hand

        adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
        vectors = adapter.encode_group(texts, 32)
        norms = 2.0 * np.linalg.norm(vectors[:, : vectors.shape[1] // 2], axis=1)
        lengths = np.array([len(t.split()) for t in texts], dtype=float)
        expected = np.mean((norms > np.median(norms)) == (lengths > np.median(lengths)))
        assert score.value == pytest.approx(expected, abs=1e-6)
        assert results.provenance.uncertainty.unit == {"norms": "texts"}

        def shouting(self: ToyProtocol, items: Sequence[Item], ctx: RunContext, options: ToyOptions) -> Outputs:
            ctx.embed([item.fields["text"].upper() for item in items], "text")  # texts() never announced these
            raise AssertionError("not reached: the embed refuses first")

        monkeypatch.setattr(ToyProtocol, "run", shouting)
        code, _, err = run_cli([str(spec), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing",
                                "--output", str(tmp_path / "loud")], capsys)
        line = assert_one_line_error(code, err, contains="protocol kind toy_norm embedded a text of field 'text'")
        assert "texts() did not announce" in line
    finally:
        registry.PROTOCOLS.unregister("toy_norm")
        registry.METRICS.unregister("toy_sign_agreement")
        registry.READERS.unregister("semicolons")


def test_model_provenance_is_the_encoder_description_field_for_field() -> None:
    """results.ModelProvenance records the model, every setting and what the adapter reports: one set of names."""
    from dataclasses import fields

    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import EncoderInfo
    from specrun.encoders.models import ModelRef
    from specrun.results import ModelProvenance

    info = EncoderInfo(settings=EncoderSettings(), pooling="mean", normalize=False, device="cpu")
    described = {f.name for f in fields(ModelRef) if f.metadata.get("recorded", True)} | set(info.record())
    # besides the description: the prompt each of the spec's views got and the reranker's record (the runner adds
    # them per spec)
    assert set(ModelProvenance.model_fields) == described | {"prompts", "reranker_model"}
    assert set(EncoderSettings.model_fields) <= set(ModelProvenance.model_fields)


def test_cli_defaults_are_the_run_defaults() -> None:
    """One defaults object: what `specrun run` assumes is what the runner assumes, every setting included."""
    from dataclasses import fields

    from specrun.cli import build_parser, run_options
    from specrun.core.options import DEFAULTS

    args = build_parser().parse_args(["run", "x.yaml"])
    assert run_options(args) == DEFAULTS
    for option in fields(DEFAULTS):
        assert option.name == "encoder" or getattr(args, option.name) == getattr(DEFAULTS, option.name), option.name


def test_a_new_setting_is_one_field_and_its_flag() -> None:
    """What a vector-changing setting reaches through EncoderSettings alone: its flag (name, type, default, help),
    the cache key, the folder name, the provenance, the run labels and the leaderboard's model entry (a
    hypothetical `layer`, and a hypothetical choice)."""
    import argparse
    from typing import Literal

    from pydantic import create_model

    from specrun.cli.run_flags import add_setting_flags
    from specrun.core.settings import EncoderSettings, setting

    Extended = create_model("Extended", __base__=EncoderSettings,
                            layer=(int | None, setting(None, "pool hidden layer L", metavar="L")),
                            norm=(Literal["l2", "none"], setting("l2", "how vectors are normalised")))
    parser = argparse.ArgumentParser()
    add_setting_flags(parser, Extended)
    args = parser.parse_args(["--layer", "4", "--norm", "none"])
    settings = Extended(**{name: getattr(args, name) for name in Extended.model_fields})
    assert (settings.layer, settings.norm) == (4, "none")
    assert "pool hidden layer L" in parser.format_help() and "{l2,none}" in parser.format_help()
    assert settings.cache_fields()["layer"] == 4
    assert "layer-4" in settings.folder_parts() and "norm-none" in settings.folder_parts()
    assert settings.record()["layer"] == 4 and "layer" in Extended.identity_fields()
    assert not settings.agrees_with(settings.with_values(layer=3))


def test_the_package_source_names_no_benchmark() -> None:
    """A benchmark is YAML only: no spec id or source name of specs/ appears in the package's code or templates."""

    names = set()
    for spec in sorted((PACKAGE.parent.parent / "specs").glob("*.yaml")):
        document = load_plain(spec.read_text(encoding="utf-8"))
        names.add(document["id"])
        names.update(document["sources"])
    found = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".j2", ".json") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8").lower()
        found += [f"{path.relative_to(PACKAGE)}: {name}" for name in sorted(names) if name.lower() in text]
    assert not found, found
