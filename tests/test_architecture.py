"""The house follows the flow: no stage imports a later one (README "Layout"), checked by walking every module's
imports, those inside functions included; a new kind of thing registers from one file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "specrun"

# the flow, bottom first: a module may import its own rank or a lower one, never a higher one
RANKS = {
    "errors": 0, "types": 0, "registry": 0, "files": 0, "workspace": 0, "options": 0, "network": 0,
    "yamlsafe": 1, "spec": 1,
    "plan": 2,
    "data": 3,
    "protocols": 4, "corpus": 4,
    "cache": 5, "encoders": 5, "embedding": 5, "store": 5, "executors": 5,
    "metrics": 6, "evaluation": 6, "corpus_metrics": 6,
    "results": 7,
    "verify": 8, "compare": 8,
    "reports": 9, "plots": 9, "hub": 9, "leaderboard": 9, "outputs": 9,
    "runner": 10,
    "cli": 11, "__main__": 12, "__init__": 0,
}


def stage_of(module: str) -> str:
    """specrun.data.items -> data; specrun.cli -> cli."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    package = "specrun." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("specrun")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = package.rsplit(".", node.level)[0]
                found.add(f"{base}.{node.module}" if node.module else base)
            elif node.module and node.module.startswith("specrun"):
                names = [f"{node.module}.{alias.name}" for alias in node.names]
                found |= {name for name in names if stage_of(name) in RANKS and node.module == "specrun"}
                if node.module != "specrun":
                    found.add(node.module)
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_stage_imports_a_later_stage(path: Path) -> None:
    module = "specrun." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    own = stage_of(module)
    assert own in RANKS, f"{module}: place its stage in RANKS (README 'Layout')"
    later = sorted(name for name in imports_of(path)
                   if stage_of(name) != own and RANKS.get(stage_of(name), 99) > RANKS[own])
    assert not later, f"{module} (rank {RANKS[own]}) imports later stages: {later}"


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


def test_toy_protocol_metric_and_reader_registered_from_a_test(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np
    from pydantic import BaseModel, ConfigDict

    from specrun import registry
    from specrun.data import load_split
    from specrun.metrics import Metric
    from specrun.spec import load_spec
    from specrun.types import Item, Outputs
    from tests.conftest import run_ok

    class ToyOptions(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        scale: float = 1.0

    class ToyProtocol:
        """Toy: a per-text score, the scaled norm of half the vector."""

        item_fields = {"text": "text", "target": "number"}  # noqa: RUF012
        outputs = ("score", "target")
        unit = "texts"
        Options = ToyOptions
        plot = None
        hub_task = "feature-extraction"
        caption = ""

        def validate_items(self, items: list[Item], options: ToyOptions, origin: str) -> None:
            return None

        def texts(self, items: list[Item], options: ToyOptions) -> list[str]:
            return [item.fields["text"] for item in items]

        def run(self, items: list[Item], embed: object, options: ToyOptions) -> Outputs:
            vectors = embed([item.fields["text"] for item in items])  # type: ignore[operator]
            half = vectors[:, : vectors.shape[1] // 2]
            return Outputs(unit=self.unit, ids=[item.id for item in items], arrays={
                "score": options.scale * np.linalg.norm(half, axis=1),
                "target": np.array([item.fields["target"] for item in items])})

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

    texts = ["a cat", "the quick brown fox jumps", "hello", "a very long sentence about embeddings and such",
             "two words", "one", "several short words here", "and finally the last and longest line of them all"]
    (tmp_path / "data" / "toy").mkdir(parents=True)
    (tmp_path / "data" / "toy" / "toy.txt").write_text(
        "# text;length\n" + "".join(f"{t};{len(t.split())}\n" for t in texts), encoding="utf-8")
    registry.PROTOCOLS.register("toy_norm", ToyProtocol())
    registry.METRICS.register("toy_sign_agreement", Metric(("score", "target"), sign_agreement))
    registry.register_reader(registry.ReaderEntry("semicolons", read_semicolons, options=SemicolonOptions))
    try:
        spec = tmp_path / "toy.yaml"
        spec.write_text(TOY_SPEC.replace('"FINGERPRINT"', "sha256:" + "0" * 64), encoding="utf-8")
        found = load_split(load_spec(spec), "test", tmp_path / "data", check=False).fingerprint
        spec.write_text(TOY_SPEC.replace('"FINGERPRINT"', found), encoding="utf-8")
        results = run_ok([str(spec), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing", "--output",
                          str(tmp_path / "out")], capsys)
        score = results.scores["test"]["agreement"]
        assert score.n == len(texts) and 0.0 <= score.ci_low <= score.value <= score.ci_high <= 1.0
        from specrun.encoders import HashingAdapter  # the same vectors, computed by hand

        vectors = HashingAdapter(None, ["cpu"], None, None, None).encode_group(texts, 32)  # type: ignore[arg-type]
        norms = 2.0 * np.linalg.norm(vectors[:, : vectors.shape[1] // 2], axis=1)
        lengths = np.array([len(t.split()) for t in texts], dtype=float)
        expected = np.mean((norms > np.median(norms)) == (lengths > np.median(lengths)))
        assert score.value == pytest.approx(expected, abs=1e-6)
        assert results.provenance.uncertainty.unit == {"norms": "texts"}
    finally:
        registry.PROTOCOLS.unregister("toy_norm")
        registry.METRICS.unregister("toy_sign_agreement")
        registry.READERS.unregister("semicolons")


def test_model_provenance_is_the_encoder_description_field_for_field() -> None:
    """results.ModelProvenance is built from encoders.describe(); one fact, one set of names."""
    from dataclasses import fields

    from specrun.encoders import EncoderInfo, ModelRef
    from specrun.results import ModelProvenance

    described = [f.name for f in fields(ModelRef)] + [f.name for f in fields(EncoderInfo)]
    assert list(ModelProvenance.model_fields) == described


def test_cli_defaults_are_the_run_defaults() -> None:
    """One defaults object: what `specrun run` assumes is what the runner assumes."""
    from dataclasses import fields

    from specrun.cli import build_parser
    from specrun.options import DEFAULTS

    args = build_parser().parse_args(["run", "x.yaml"])
    for option in fields(DEFAULTS):
        assert getattr(args, option.name) == getattr(DEFAULTS, option.name), option.name
