"""--prompt-set: every variant in one run equals a separate run with its flags (scores, predictions, folder), the
table's spread is compare's paired interval of the best and worst variant, the model is loaded once and each
(role, prompt) encoded once, and a bad prompt-set file or a conflicting flag is one line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from specrun.results import Results
from tests.conftest import SPECS, assert_one_line_error, run_cli, run_ok
from tests.protocols.test_corpus_retrieval import DOCS, GRADED, corpus_spec, make_graded_beir

BIOSSES = str(SPECS / "biosses.yaml")
VARIANTS = {"plain": {}, "medical": {"prompt": "medical sentence: "},
            "asymmetric": {"query_prompt": "question about java: ", "document_prompt": "answer: "}}
SYMMETRIC = {"plain": {}, "medical": {"prompt": "medical sentence: "}, "terse": {"prompt": "s: "}}


def write_set(tmp_path: Path, variants: dict) -> Path:
    path = tmp_path / "prompts.yaml"
    path.write_text(yaml.safe_dump({"variants": variants}, sort_keys=False), encoding="utf-8")
    return path


def flags_of(variant: dict) -> list[str]:
    flags = []
    for key, value in variant.items():
        flags += ["--no-model-prompts"] if key == "model_prompts" and value is False else [
            f"--{key.replace('_', '-')}", value]
    return flags


def outcome(results_path: Path) -> tuple[dict, str]:
    results = Results.model_validate_json(results_path.read_text())
    predictions = (results_path.parent / results.predictions.file).read_bytes()
    return results.model_dump(mode="json")["scores"], hashlib.sha256(predictions).hexdigest()


@pytest.mark.parametrize("adapter", ["hashing", pytest.param("auto", marks=pytest.mark.slow)])  # auto: the model
@pytest.mark.parametrize("spec", ["biosses", "corpus"])
def test_each_variant_equals_a_separate_run(spec: str, adapter: str, tmp_path: Path, data_dir: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    if spec == "biosses":
        path, data = BIOSSES, data_dir
    else:
        data = tmp_path / "data"
        make_graded_beir(data)
        path = str(corpus_spec(tmp_path, data))
        capsys.readouterr()  # what fingerprint printed
    common = [path, "-q", "--adapter", adapter, "--data-dir", str(data)]
    variants = VARIANTS if spec == "corpus" else SYMMETRIC  # a query prompt reaches no text of an STS spec
    prompt_set = write_set(tmp_path, variants)
    code, out, err = run_cli([*common, "--output", str(tmp_path / "set"), "--cache-dir", str(tmp_path / "c1"),
                              "--prompt-set", str(prompt_set)], capsys)
    assert code == 0, err
    written = [Path(line) for line in out.split()]
    assert len(written) == len(variants)
    for name, variant in variants.items():
        alone = run_ok([*common, "--output", str(tmp_path / name), "--no-cache", *flags_of(variant)], capsys)
        alone_path = next((tmp_path / name).rglob("results.json"))
        together = tmp_path / "set" / alone_path.relative_to(tmp_path / name)  # the same folder name
        assert together in written, name
        assert outcome(together) == outcome(alone_path), name
        assert Results.model_validate_json(together.read_text()).provenance.model.prompts == \
            alone.provenance.model.prompts
    summary = json.loads(next((tmp_path / "set").rglob("prompt-set.json")).read_text())
    assert list(summary["variants"]) == list(variants)
    for row in summary["metrics"]:
        values = {name: score["value"] for name, score in row["scores"].items()}
        best, worst = max(values, key=values.get), min(values, key=values.get)  # every metric here: higher
        assert (row["best"], row["worst"]) == (best, worst)
        assert row["best_minus_worst"]["value"] == pytest.approx(values[best] - values[worst], abs=1e-12)
        # the paired interval is compare's on the two variants' folders
        folder = next((tmp_path / "set").rglob("prompt-set.json")).parent
        code, text, err = run_cli(["compare", str(folder / summary["variants"][best]["results"]),
                                   str(folder / summary["variants"][worst]["results"])], capsys)
        assert code == 0, err
        line = next(line for line in text.splitlines() if f"| {row['split']} | {row['metric']} |" in line)
        interval = f"[{row['best_minus_worst']['ci_low']:+.4f}, {row['best_minus_worst']['ci_high']:+.4f}]"
        assert interval in line, (line, interval)
    table = next((tmp_path / "set").rglob("prompt-set.md")).read_text()
    assert f"| split | metric | {' | '.join(variants)} | best − worst |" in table


def test_each_role_and_prompt_is_encoded_once_across_variants(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Variants that share a role's prompt share its vectors: the documents with no prompt are encoded once for
    the two variants that leave them alone; the model is loaded once for all three."""
    from specrun.encoders import cached

    opened: list[object] = []
    real = cached.open_executor
    monkeypatch.setattr(cached, "open_executor", lambda *a, **k: opened.append(a) or real(*a, **k))
    data = tmp_path / "data"
    make_graded_beir(data)
    path = corpus_spec(tmp_path, data)
    capsys.readouterr()
    variants = {"plain": {}, "queries": {"query_prompt": "q: "}, "both": {"query_prompt": "q: ",
                                                                       "document_prompt": "d: "}}
    code, out, err = run_cli([str(path), "-q", "--adapter", "hashing", "--data-dir", str(data), "--output",
                              str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "--prompt-set",
                              str(write_set(tmp_path, variants))], capsys)
    assert code == 0, err
    encoded = sum(Results.model_validate_json(Path(p).read_text()).texts.encoded for p in out.split())
    queries, docs = len({text for text, _ in GRADED.values()}), len(set(DOCS))
    assert encoded == 2 * queries + 2 * docs  # (query, ''), (query, 'q: '), (document, ''), (document, 'd: ')
    keys = list((tmp_path / "c").glob("embeddings/*/key.json"))
    assert len(keys) == 4
    assert len(opened) == 1


@pytest.mark.parametrize(("content", "message"), [
    ("variants:\n  a: {}\n", "variants: Dictionary should have at least 2 items"),
    ("variants:\n  a: {}\n  b: {quer_prompt: x}\n", "prompts.yaml:3: variants.b.quer_prompt"),
    ("variants:\n  a: {}\n  A: {}\n", "variants.A"),
    ("variants:\n  a: {}\n  b: {model_prompts: true}\n", "prompt variants 'a' and 'b' are the same settings"),
    ("- a\n", "expected a mapping with `variants`"),
    ("variants:\n  a: {}\n  b: {prompt: x, prompt_name: y}\n", "prompts.yaml:3: variants.b.prompt_name: prompt and"),
    ("variants:\n  a: {}\n  b:\n    instruction_template: 'no slot'\n",
     "prompts.yaml:4: variants.b.instruction_template: must hold {instruction}"),
    ("variants:\n  a: {}\n  b: {prompt_name: query}\n", "prompts.yaml, variant b: a prompt given by name"),
    ("variants:\n  a: {}\n  b: {query_prompt: 'q: '}\n", "prompts.yaml, variant b: --query-prompt reaches no text"),
])
def test_a_bad_prompt_set_is_one_line(content: str, message: str, tmp_path: Path, data_dir: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "prompts.yaml"
    path.write_text(content)
    code, _, err = run_cli([BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--no-cache",
                            "--output", str(tmp_path / "o"), "--prompt-set", str(path)], capsys)
    assert_one_line_error(code, err, contains=message)
    assert not (tmp_path / "o").exists()


def test_a_variant_sets_exactly_the_prompt_flags() -> None:
    from specrun.core.settings import PROMPT_FLAGS, EncoderSettings
    from specrun.prompt_sets import PromptVariant

    assert tuple(PromptVariant.model_fields) == PROMPT_FLAGS
    assert set(PROMPT_FLAGS) <= set(EncoderSettings.model_fields)
    for name in PROMPT_FLAGS:  # the same defaults: a variant that leaves a flag out is the flag's default
        assert PromptVariant.model_fields[name].default == EncoderSettings.model_fields[name].default


@pytest.mark.parametrize("flags", [["--query-prompt", "q: "], ["--no-model-prompts"], ["--name", "x"]])
def test_a_prompt_flag_beside_a_prompt_set_is_refused(flags: list[str], tmp_path: Path, data_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([BIOSSES, "-q", "--adapter", "hashing", "--data-dir", str(data_dir), "--no-cache",
                            "--output", str(tmp_path / "o"), "--prompt-set", str(write_set(tmp_path, VARIANTS)),
                            *flags], capsys)
    line = assert_one_line_error(code, err)
    assert flags[0] in line
