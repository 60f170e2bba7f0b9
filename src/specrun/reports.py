"""Reports stage: the benchmark card (seed-001 format) and the results report, rendered with jinja2 from the
spec, example items and results.json. A renderer formats numbers; it never computes one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jinja2

from specrun.protocols import Item
from specrun.results import Results, confidence_percent
from specrun.spec import Spec

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("specrun", "templates"), trim_blocks=True,
                          lstrip_blocks=True, autoescape=False, keep_trailing_newline=False,
                          undefined=jinja2.StrictUndefined)


def _cell(value: Any) -> str:
    text = repr(value) if isinstance(value, float) else str(value)
    return " ".join(text.split())  # a tab or newline inside a sentence would break the example table


def source_lines(spec: Spec) -> list[str]:
    return [f"{name}: {s.type} {s.path} at revision {s.revision}, licence {s.licence}"
            for name, s in spec.sources.items()]


def subset_lines(spec: Spec) -> list[str]:
    return [f"{name}: {selection} item(s)" for name, selection in spec.subset.splits.items()]


def metric_lines(spec: Spec) -> list[str]:
    u = spec.uncertainty
    interval = f"{confidence_percent(u.confidence)} {u.method} CI, {u.resamples} resamples"
    return [f"{name} — {m.label}; protocol {m.protocol}; {m.direction} is better; "
            f"range [{m.range[0]!r}, {m.range[1]!r}]; {interval}" for name, m in spec.metrics.items()]


def _examples(spec: Spec, items: Sequence[Item]) -> dict[str, Any] | None:
    examples = spec.card.examples
    if examples.count == 0:
        return None
    rows = [[_cell(item.id if field == "id" else item.fields[field]) for field in examples.columns]
            for item in items[:examples.count]]
    return {"heading": examples.heading, "header": list(examples.columns.values()), "rows": rows}


def _results_view(results: Results) -> dict[str, Any]:
    p = results.provenance
    m = p.model
    identity = f"revision {m.revision}" if m.revision else f"weights sha256 {m.weights_sha256}"
    prompt = f", prompt {m.prompt!r}" + (f" ({m.prompt_name})" if m.prompt_name else "") if m.prompt else ""
    model_line = (f"{m.name} ({m.origin}; {identity}); adapter {m.adapter}, pooling {m.pooling}"
                  f"{', normalised' if m.normalize else ''}, max length {m.max_length}, {m.device}, {m.dtype}{prompt}")
    rows = [[split, metric, f"{s.value:.4f}", f"[{s.ci_low:.4f}, {s.ci_high:.4f}]", str(s.n)]
            for split, scores in results.scores.items() for metric, s in scores.items()]
    u = p.uncertainty
    units = ", ".join(f"{protocol}: {unit}" for protocol, unit in u.unit.items())
    lines = [f"spec {p.spec_path} sha256 {p.spec_sha256}"]
    lines += [f"data {split}: {d.path} at revision {d.revision} ({d.origin}), licence {d.licence}, "
              f"fingerprint {d.fingerprint}, {d.n_selected} of {d.n_source} item(s) ({d.selection})"
              for split, d in p.data.items()]
    lines.append(f"seed {u.seed}; {u.interval} {u.method}, {u.resamples} resamples, "
                 f"{confidence_percent(u.confidence)} interval; resampling unit {units}")
    lines.append("packages " + ", ".join(f"{name} {version}" for name, version in p.packages.items()))
    lines.append(f"run {p.created}")
    plots = [(f"{key.replace('/', ', ')}: predicted similarity against gold", file)
             for key, file in results.plots.items()]
    lines.insert(1, f"per-item predictions {results.predictions.file} ({results.predictions.rows} rows, "
                    f"sha256 {results.predictions.sha256})")
    return {"model_line": model_line, "rows": rows, "ci_label": f"{confidence_percent(u.confidence)} CI",
            "texts": results.texts, "provenance_lines": lines, "plots": plots}


def render_card(spec: Spec, examples: Sequence[Item], results: Results | None = None) -> str:
    """The benchmark card; with results, the results report (the card plus results and provenance)."""
    protocols = [{"label": p.label, "capability": p.capability, "description": p.description,
                  "metrics": [name for name, m in spec.metrics.items() if m.protocol == key]}
                 for key, p in spec.protocols.items()]
    text = _ENV.get_template("card.md.j2").render(
        title=spec.title,
        notice=spec.licence.notice if spec.licence.publication == "unconfirmed" else None,
        card=spec.card,
        protocols=protocols,
        source_lines=source_lines(spec),
        seed=spec.subset.seed,
        subset_lines=subset_lines(spec),
        metric_lines=metric_lines(spec),
        examples=_examples(spec, examples),
        results=_results_view(results) if results else None,
        citation=spec.citation if results else None,
    )
    return text.rstrip("\n") + "\n"
