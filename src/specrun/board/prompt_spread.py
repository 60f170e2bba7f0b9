"""A prompt set's table (`prompt-set.md`, `prompt-set.json`, per spec): several runs of one model that differ in
their prompts only, on the same items. Each variant's score and interval per metric, and the spread (best minus
worst variant) with its paired bootstrap interval: the same resamples for both, as `compare` computes it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from specrun.board.paired import Difference, method_note, paired_difference
from specrun.core.markdown import md_cell, md_text
from specrun.evaluation import ProtocolRun
from specrun.outputs import OutputSet, SetKind
from specrun.prompt_sets import LoadedPromptSet, PromptVariant
from specrun.results import Results, confidence_percent

FORMAT = "specrun.prompt-set/1"

PROMPT_SET_FILES = SetKind("a prompt set's table", ("prompt-set.md", "prompt-set.json"))


def summary_sets(loaded: LoadedPromptSet, evaluated: Mapping[str, Mapping[str, tuple[Results, Sequence[ProtocolRun]]]],
                 folders: Mapping[str, Mapping[str, Path]],
                 summaries: Mapping[str, Path]) -> list[OutputSet]:
    """Per spec, the prompt-set table beside its variants' folders: `prompt-set.md` and `prompt-set.json`.
    evaluated: spec id -> variant -> (results, runs); folders: variant -> spec id -> folder."""
    sets: list[OutputSet] = []
    for spec_id, summary in summaries.items():
        by_variant = evaluated[spec_id]
        names = {name: folders[name][spec_id].name for name in by_variant}
        rows = spreads(by_variant)
        first = next(iter(by_variant.values()))[0]
        sets.append((summary, {"prompt-set.md": summary_markdown(loaded, first, names, rows),
                               "prompt-set.json": summary_json(loaded, spec_id, names, rows)}, PROMPT_SET_FILES))
    return sets


@dataclass(frozen=True)
class VariantScore:
    variant: str
    value: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class MetricSpread:
    split: str
    metric: str
    direction: str
    scores: list[VariantScore]
    best: str
    worst: str
    spread: Difference  # best minus worst, paired


def spreads(variants: Mapping[str, tuple[Results, Sequence[ProtocolRun]]]) -> list[MetricSpread]:
    """Per split and metric: each variant's score, the best and worst variant (in the metric's direction) and the
    paired interval of their difference, on the outputs the variants were scored on."""
    first, _ = next(iter(variants.values()))
    u = first.provenance.uncertainty
    out = []
    for split, scores in first.scores.items():
        for metric_id, score in scores.items():
            info = first.metrics[metric_id]
            values = [VariantScore(name, r.scores[split][metric_id].value, r.scores[split][metric_id].ci_low,
                                   r.scores[split][metric_id].ci_high) for name, (r, _) in variants.items()]
            sign = 1 if info.direction == "higher" else -1
            best = max(values, key=lambda v: sign * v.value).variant
            worst = min(values, key=lambda v: sign * v.value).variant

            def arrays(name: str, split: str = split, protocol: str = info.protocol) -> dict[str, Any]:
                run = next(r for r in variants[name][1] if r.split == split and r.protocol == protocol)
                return run.outputs.arrays

            difference = paired_difference(split, metric_id, info.metric, info.direction, arrays(best),
                                           arrays(worst), u.resamples, u.confidence, u.seed, score.n,
                                           score.interval)
            out.append(MetricSpread(split=split, metric=metric_id, direction=info.direction, scores=values,
                                    best=best, worst=worst, spread=difference))
    return out


def summary_json(loaded: LoadedPromptSet, spec_id: str, folders: Mapping[str, str],
                 rows: Sequence[MetricSpread]) -> str:
    data = {"format": FORMAT, "spec_id": spec_id, "prompt_set": Path(loaded.path).name,
            "prompt_set_sha256": loaded.sha256,
            "variants": {name: {"flags": loaded.prompt_set.variants[name].model_dump(exclude_defaults=True),
                                "results": f"../{folder}/results.json"} for name, folder in folders.items()},
            "metrics": [{"split": r.split, "metric": r.metric, "direction": r.direction,
                         "scores": {s.variant: {"value": s.value, "ci_low": s.ci_low, "ci_high": s.ci_high}
                                    for s in r.scores},
                         "best": r.best, "worst": r.worst,
                         "best_minus_worst": {"value": r.spread.difference, "ci_low": r.spread.ci_low,
                                              "ci_high": r.spread.ci_high}} for r in rows]}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def summary_markdown(loaded: LoadedPromptSet, results: Results, folders: Mapping[str, str],
                     rows: Sequence[MetricSpread]) -> str:
    u = results.provenance.uncertainty
    percent = confidence_percent(u.confidence)
    names = list(folders)
    lines = [f"# Prompt robustness: {md_text(results.spec_id)}, {md_text(results.provenance.model.name)}", "",
             f"{len(names)} prompt variants from {md_text(Path(loaded.path).name)} (sha256 {loaded.sha256[:12]}), "
             "scored on the same items; the model loaded once.", ""]
    lines += [f"- **{md_text(name)}**: {md_text(describe(loaded.prompt_set.variants[name]))} "
              f"([results](../{quote(folders[name], safe='')}/report.md))" for name in names]
    lines += ["", f"| split | metric | {' | '.join(md_cell(name) for name in names)} | best − worst | "
                  f"{percent} CI |",
              "| --- | --- | " + " | ".join("---" for _ in names) + " | ---: | --- |"]
    for r in rows:
        cells = [f"{s.value:.4f} [{s.ci_low:.4f}, {s.ci_high:.4f}]" for s in r.scores]
        between = "all equal" if r.best == r.worst else f"{md_cell(r.best)} − {md_cell(r.worst)}"
        lines.append(f"| {md_cell(r.split)} | {md_cell(r.metric)} | {' | '.join(cells)} | "
                     f"{r.spread.difference:+.4f} ({between}) | "
                     f"[{r.spread.ci_low:+.4f}, {r.spread.ci_high:+.4f}] |")
    lines += ["", f"Each cell is the variant's value with its {percent} bootstrap interval. Best − worst is the "
                  "spread between the best and the worst variant of that metric, with a paired bootstrap "
                  f"({u.resamples} resamples, seed {u.seed}, the same resamples for both; "
                  f"{method_note([r.spread for r in rows])})."]
    return "\n".join(lines) + "\n"


def describe(variant: PromptVariant) -> str:
    given = variant.model_dump(exclude_defaults=True)
    if not given:
        return "the model's own prompts (no flag)"
    return "; ".join("no model prompts" if key == "model_prompts" else f"{key.replace('_', ' ')} {value!r}"
                     for key, value in given.items())
