"""Time of the fitted and stochastic protocols after encoding: the fits themselves (Banking77's 10 logistic
regressions, MasakhaNEWS's 10 k-means runs) and their two-level bootstrap, on the real model's vectors (read
through the cache: the first call encodes). Encoding is timed apart and is not part of the figures.

    .venv/bin/python bench/fit.py [--data-dir ../shared/data] [--cache-dir DIR] [--repeat 3]"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECS = ("banking77", "masakhanews-s2s", "jsick-pairs", "tatoeba")  # tatoeba: its first subset, jpn-eng


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from rich.console import Console

    from specrun.cli import build_parser, run_options
    from specrun.core.types import View
    from specrun.core.workspace import Workspace
    from specrun.data import load_data
    from specrun.encoders.cached import CachedEncoder
    from specrun.encoders.models import resolve_model
    from specrun.encoders.session import Scope
    from specrun.evaluation import run_context
    from specrun.metrics import clear_recent, estimate
    from specrun.plan import make_plan
    from specrun.spec import load_spec, subset_specs

    flags = ["run", str(ROOT / "specs" / "banking77.yaml"), "-q"] + (["--cache-dir", args.cache_dir]
                                                                   if args.cache_dir else [])
    options = run_options(build_parser().parse_args(flags))
    workspace = Workspace.resolve(options.cache_dir, options.no_cache).check()
    model = resolve_model(options.model, options.model_revision, memo_dir=workspace.memo)
    print("| spec | protocol run (fits) | estimates (all metrics, 1000 resamples) | units x runs |")
    print("| --- | --- | --- | --- |")
    for name in SPECS:
        plan = make_plan(subset_specs(load_spec(str(ROOT / "specs" / f"{name}.yaml")))[0])
        loaded = load_data(plan, args.data_dir, workspace)
        clock = time.perf_counter()
        by_view: dict[View, list[str]] = {}
        for view, text in loaded.texts:
            by_view.setdefault(view, []).append(text)
        embeddings = CachedEncoder(model, options.encoder, workspace, Console(stderr=True, quiet=True),
                               options.execution).embeddings(
            {view: list(dict.fromkeys(texts)) for view, texts in by_view.items()})
        encode = time.perf_counter() - clock
        protocol = plan.protocols[0]
        split = plan.splits[0].name
        support = {s: loaded.splits[s].items for s in protocol.support}
        runs, estimates = [], []
        for _ in range(args.repeat):
            clock = time.perf_counter()
            items = loaded.splits[split].items
            outputs = protocol.entry.run(items, run_context(protocol, items, support, Scope(embeddings.embed_view)),
                                         protocol.options)
            runs.append(time.perf_counter() - clock)
            clear_recent()  # each repeat draws: a process keeps what it drew for the same outputs
            clock = time.perf_counter()
            for metric in protocol.metrics:
                estimate(metric.metric, outputs.arrays, resamples=plan.resamples, confidence=plan.confidence,
                         seed=plan.seed, interval=metric.interval)
            estimates.append(time.perf_counter() - clock)
        shape = " x ".join(str(n) for n in max((a.shape for a in outputs.arrays.values()), key=len))
        print(f"| {name} | {statistics.median(runs):.2f} s | {statistics.median(estimates):.2f} s "
              f"({len(protocol.metrics)} metrics) | {shape} |  (embeddings {encode:.1f} s, not counted)")


if __name__ == "__main__":
    main()
