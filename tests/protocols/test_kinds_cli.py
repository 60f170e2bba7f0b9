"""The kinds with no benchmark in specs/ (reranking, summarization, regression, and the supervised STS probe) end
to end through the CLI from YAML alone, on small JSON Lines files and the hashing adapter: results verify, the
numbers equal the same measures computed from the predictions by scikit-learn, scipy or pytrec_eval; and a fit
split that does not fit the evaluated one is one line, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy import stats

from specrun.core.registry import METRICS
from specrun.results import Results
from specrun.results.verify import load_verified
from tests.conftest import run_cli

WORDS = ["river", "bank", "money", "loan", "water", "fish", "boat", "stream", "credit", "account", "rate",
         "flow", "deposit", "current"]


def sentence(rng: np.random.Generator, n: int = 5) -> str:
    return " ".join(rng.choice(WORDS, n))


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def spec(tmp: Path, kind: str, columns: dict[str, str], metrics: dict[str, str], *, options: dict | None = None,
         fit: bool = False) -> Path:
    files = {"test": "test.jsonl", **({"train": "train.jsonl"} if fit else {})}
    document = {
        "id": f"toy-{kind}", "title": f"Toy {kind}", "licence": {"data": "cc0-1.0", "publication": "confirmed"},
        "sources": {"toy": {"type": "hf_dataset", "path": "toy/toy", "revision": "0" * 40, "licence": "cc0-1.0",
                            "mirror": {"format": "jsonl", "files": files}, "columns": columns}},
        "splits": {"test": {"source": "toy", "source_split": "test"},
                   **({"train": {"source": "toy", "source_split": "train", "evaluate": False}} if fit else {})},
        "subset": {"seed": 3, "splits": {"test": "all"}},
        "protocols": {"p": {"kind": kind, "label": kind, "capability": "embed.text.pooled", "description": "toy",
                            **({"options": options} if options else {})}},
        "metrics": {name: {"metric": metric, "protocol": "p", "label": name, "direction": METRICS[metric].direction,
                           "range": [-1e9, 1e9]} for name, metric in metrics.items()},
        "uncertainty": {"resamples": 200, "confidence": 0.9},
        "card": {"what_is_measured": "toy", "data": "toy", "items": "toy", "uncertainty": "toy", "caveats": "toy",
                 "examples": {"count": 0, "heading": "none", "columns": {"id": "id"}}},
    }
    path = tmp / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    fingerprints = run_cli_plain(["fingerprint", str(path), "--data-dir", str(tmp / "data")])
    for line in fingerprints.splitlines():
        name, value = line.split(": ", 1)
        document["splits"][name]["fingerprint"] = value.split()[0]
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def run_cli_plain(args: list[str]) -> str:
    import contextlib
    import io

    from specrun.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return out.getvalue()


def run(path: Path, tmp: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Results, dict[str, np.ndarray]]:
    code, out, err = run_cli([str(path), "--data-dir", str(tmp / "data"), "--adapter", "hashing", "--output",
                              str(tmp / "out"), "-q"], capsys)
    assert code == 0, err
    verified = load_verified(Path(out.strip().splitlines()[-1]))
    return verified.results, next(iter(verified.units.values()))[1]


def test_reranking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pytrec_eval

    rng = np.random.default_rng(0)
    rows = []
    for _ in range(12):
        candidates = [sentence(rng) for _ in range(int(rng.integers(3, 9)))]
        relevance = [int(rng.random() < 0.3) for _ in candidates]
        relevance[0] = 1
        rows.append({"query": sentence(rng), "candidates": candidates, "relevance": relevance})
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", rows)
    path = spec(tmp_path, "reranking", {"query": "query", "candidates": "candidates", "relevance": "relevance"},
                {"map": "map_cut_1000", "mrr": "mrr_cut_10", "ndcg": "ndcg_cut_10"})
    results, arrays = run(path, tmp_path, capsys)
    assert results.scores["test"]["ndcg"].value == pytest.approx(arrays["ndcg_cut_10"].mean(), abs=1e-12)
    from specrun.core.settings import EncoderSettings
    from specrun.encoders.adapters import HashingAdapter

    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])  # type: ignore[arg-type]
    qrels, run_scores = {}, {}
    for q, row in enumerate(rows):
        vectors = adapter.encode_group([row["query"], *row["candidates"]], 32).astype(np.float64)
        cos = vectors[1:] @ vectors[0] / np.linalg.norm(vectors[1:], axis=1) / np.linalg.norm(vectors[0])
        qrels[f"q{q}"] = {f"d{j}": r for j, r in enumerate(row["relevance"])}
        order = np.argsort(-np.round(cos, 12), kind="stable")  # specrun's rule: ties in the data's order
        # scores that encode that rank, so trec_eval's own tie order (by document id) never acts
        run_scores[f"q{q}"] = {f"d{j}": float(len(order) - rank) for rank, j in enumerate(order)}
    found = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.1000"}).evaluate(run_scores)
    assert results.scores["test"]["ndcg"].value == pytest.approx(
        np.mean([found[q]["ndcg_cut_10"] for q in found]), abs=1e-9)
    assert results.scores["test"]["map"].value == pytest.approx(
        np.mean([found[q]["map_cut_1000"] for q in found]), abs=1e-9)


def test_summarization(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(1)
    rows = [{"machine": [sentence(rng) for _ in range(4)], "human": [sentence(rng, 8) for _ in range(2)],
             "scores": [float(v) for v in rng.integers(1, 6, 4)]} for _ in range(10)]
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl", rows)
    path = spec(tmp_path, "summarization", {"machine_summaries": "machine", "human_summaries": "human",
                                            "human_scores": "scores"},
                {"spearman": "summary_spearman", "pearson": "summary_pearson"})
    results, arrays = run(path, tmp_path, capsys)
    valid = arrays["valid"] > 0
    assert results.scores["test"]["spearman"].n == int(valid.sum())
    assert results.scores["test"]["spearman"].value == pytest.approx(arrays["text_spearman"][valid].mean())


def test_regression_and_the_supervised_sts_probe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(2)
    for split, n in (("train", 60), ("test", 25)):
        texts = [sentence(rng, int(rng.integers(2, 9))) for _ in range(n)]
        write_jsonl(tmp_path / "data" / "toy" / f"{split}.jsonl",
                    [{"text": t, "target": float(len(t))} for t in texts])
    path = spec(tmp_path, "regression", {"text": "text", "target": "target"},
                {"tau": "kendall_tau", "rmse": "rmse"}, options={"fit_split": "train"}, fit=True)
    results, arrays = run(path, tmp_path, capsys)
    tau = stats.kendalltau(arrays["predicted_value"], arrays["gold_value"]).statistic
    assert results.scores["test"]["tau"].value == pytest.approx(tau, abs=1e-12)
    assert results.provenance.data["train"].n_source == 60


def test_a_fit_split_with_a_label_the_test_split_lacks_is_one_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    write_jsonl(tmp_path / "data" / "toy" / "train.jsonl",
                [{"text": sentence(rng), "label": label} for label in "abcabcabcabcd"])
    write_jsonl(tmp_path / "data" / "toy" / "test.jsonl",
                [{"text": sentence(rng), "label": label} for label in "abcabc"])
    path = spec(tmp_path, "classification", {"text": "text", "label": "label"}, {"accuracy": "accuracy"},
                options={"fit_split": "train", "samples_per_label": 1, "short_classes": "take_what_there_is"},
                fit=True)
    code, _, err = run_cli([str(path), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing",
                            "--output", str(tmp_path / "out")], capsys)
    assert code == 2 and not (tmp_path / "out").exists()
    assert "encoding" not in err  # refused before anything is encoded
    assert err.count("\n") == 1 and "fit split 'train' has label(s) 'd' that the evaluated split lacks" in err


def test_constant_fit_targets_are_refused_before_anything_is_encoded(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """validate_items is the one place a kind refuses data: regression's constant fit split was refused in `run`,
    after its texts were encoded; now the run ends first, nothing encoded or cached."""
    rng = np.random.default_rng(5)
    for split, n in (("train", 20), ("test", 10)):
        write_jsonl(tmp_path / "data" / "toy" / f"{split}.jsonl",
                    [{"text": sentence(rng), "target": 3.0 if split == "train" else float(i)} for i in range(n)])
    path = spec(tmp_path, "regression", {"text": "text", "target": "target"}, {"rmse": "rmse"},
                options={"fit_split": "train"}, fit=True)
    cache = tmp_path / "cache"
    code, _, err = run_cli([str(path), "--data-dir", str(tmp_path / "data"), "--adapter", "hashing",
                            "--cache-dir", str(cache), "--output", str(tmp_path / "out")], capsys)
    assert code == 2 and not (tmp_path / "out").exists()
    assert err.count("\n") == 1 and "fit split 'train': every target is 3.0" in err, err
    assert not list(cache.glob("embeddings/*/*.shard"))  # nothing was encoded
