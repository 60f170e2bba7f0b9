"""The benchmark card and the results report as Markdown (CommonMark with GFM tables) whose rendered text is the
seed card line for line; every value is escaped (core.markdown) before it enters the template."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

import jinja2

from specrun.core import registry
from specrun.core.markdown import md_cell, md_text
from specrun.core.settings import AppliedPrompt
from specrun.core.types import Item, Score
from specrun.plan import interval_method
from specrun.results import ModelMeta, Results, SplitStatistics, Spread, confidence_percent
from specrun.results.identity import identity_notes
from specrun.spec import GitSource, HubDataset, Spec

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("specrun", "templates"), trim_blocks=True,
                          lstrip_blocks=True, autoescape=False, keep_trailing_newline=False,
                          undefined=jinja2.StrictUndefined)


def table_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def citation_section(citation: str | None) -> str:
    """The spec's citation as hub dataset cards give it: a "Citation" section with a fenced block, `bibtex` when it
    is a BibTeX entry (else `text`: a plain reference is not labelled BibTeX); "" without one."""
    if not citation or not citation.strip():
        return ""
    text = citation.strip("\n")
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    language = "bibtex" if text.lstrip().startswith("@") else "text"
    return f"## Citation\n\n{fence}{language}\n{text}\n{fence}\n"


def source_lines(spec: Spec) -> list[str]:
    return [f"{name}: {s.type} {s.path} at revision {s.revision}, licence {s.licence}"
            for name, s in spec.sources.items()]


def subset_lines(spec: Spec) -> list[str]:
    """The seed line, then one line per split: `all item(s)`, or the count drawn with the seed."""
    lines = [f"seed {spec.subset.seed}"]
    for name, selection in spec.subset.splits.items():
        if selection == "all":
            lines.append(f"{name}: all item(s)")
        else:
            lines.append(f"{name}: {selection} item(s), drawn with seed {spec.subset.seed}")
    return lines


def interval_words(method: str) -> str:
    """How a card names an interval method: the percentile interval is the plain bootstrap CI (the seed card's
    words), any other is named."""
    return "" if method == "percentile" else f" ({method})"


def metric_lines(spec: Spec) -> list[str]:
    u = spec.uncertainty
    return [f"{name} — {m.label}; protocol {m.protocol}; {m.direction} is better; "
            f"range [{m.range[0]!r}, {m.range[1]!r}]; {confidence_percent(u.confidence)} {u.method} CI"
            f"{interval_words(interval_method(spec, name))}, {u.resamples} resamples"
            for name, m in spec.metrics.items()]


def outside_note(split: str, metric: str, score: Score) -> str | None:
    """The line said of a score whose value lies outside its own interval (a basic or bca interval can leave it
    out when the resamples are skewed around it; percentile rarely), or None: never shown silently."""
    if score.ci_low <= score.value <= score.ci_high:
        return None
    return (f"{split} {metric}: the value {score.value:.4f} lies outside its {score.interval} interval "
            f"[{score.ci_low:.4f}, {score.ci_high:.4f}] (its resamples are skewed around it; the centred method "
            "always holds the value)")


def choice_notes(results: Results) -> list[str]:
    """What the run chose at run time that a reader must not miss: a --limit smoke run (never a benchmark number)
    and the evaluated splits --splits scored."""
    p = results.provenance
    notes = [f"limited to {p.limit} items per split (--limit {p.limit}): a smoke run, not the benchmark's "
             "numbers; compare, leaderboard and publish refuse it"] if p.limit is not None else []
    if p.splits is not None:
        notes.append(f"splits chosen with --splits: {', '.join(p.splits)} only")
    return notes


def outside_notes(results: Results) -> list[str]:
    """outside_note of every score of a run that has one."""
    notes = (outside_note(split, metric, s) for split, scores in results.scores.items() for metric, s in scores.items())
    return [note for note in notes if note]


def cell_notes(results: Results) -> list[str]:
    """A clustering information measure scored on few documents per class x cluster cell: its interval covers
    less than it says there (metrics.clustering.few_per_cell_note); the classes are the split's labels."""
    from specrun.metrics.clustering import few_per_cell_note

    notes = []
    for split, scores in results.scores.items():
        stats = (results.statistics or {}).get(split)
        labels = [f.labels for f in stats.fields.values() if f.labels] if stats else []
        for name, score in scores.items():
            info = results.metrics[name]
            note = few_per_cell_note(f"{split} {name}", info.metric, score.n, len(labels[0])) if (
                info.protocol_kind == "clustering" and labels) else None
            notes += [note] if note else []
    return notes


def _examples(spec: Spec, items: Sequence[Item]) -> dict[str, Any] | None:
    if spec.card is None:
        return None
    examples = spec.card.examples
    shown = list(items[:examples.count])
    rows = [table_row([md_cell(item.id if field == "id" else item.fields[field]) for field in examples.columns])
            for item in shown]
    header = list(examples.columns.values())
    why_none = ("No example rows are shown: the spec sets examples.count to 0." if examples.count == 0
                else "No example rows are shown: the evaluated split was not loaded.")
    return {"heading": md_text(examples.heading), "header": table_row([md_cell(h) for h in header]),
            "rule": table_row(["---"] * len(header)), "rows": rows, "why_none": md_text(why_none)}


def _shown_name(name: str) -> str:
    """A model name as a report may show it: a local folder by its last component only."""
    if name.startswith(("/", "~", "\\")) or re.match(r"^[A-Za-z]:[\\/]", name) or name.startswith("."):
        return f"{PurePath(name.replace(chr(92), '/')).name} (local folder)"
    return name


def file_lines(spec: Spec, split: str, read: dict[str, str] | None = None) -> list[str]:
    """The files behind a split, named inside their source (never a local path), each with the sha256 the spec
    pins for it, or (in a report) the sha256 of the bytes the run read; an unpinned file says so."""
    read = read or {}
    source = spec.sources[spec.splits[split].source]
    if isinstance(source, HubDataset) and source.files:  # a pinned copy of the repo: its files, each pinned
        shown = {name: pin for name, pin in read.items() if source.files.get(name) == pin} or source.files
        return [f"file {name} (sha256 {pin})" for name, pin in sorted(shown.items())]
    lines = []
    for source_split in spec.splits[split].source_split_names:
        ref = source.file_for(source_split)
        if isinstance(source, GitSource):
            name = ref.repo_path or ref.mirror
            if ref.member:
                name += f", member {ref.member}"
        else:
            name = ref.mirror if ref.mirror != "." else f"split {source_split} of the dataset"
        if ref.member_sha256:
            pin = f"sha256 {ref.member_sha256}"
        elif ref.sha256:
            pin = f"sha256 {ref.sha256}"
        elif ref.contents:
            pin = f"{len(ref.contents)} file(s), each pinned by sha256 in the spec"
        else:
            key = (ref.repo_path or ref.mirror) + (f":{ref.member}" if ref.member else "")
            pin = f"sha256 {read[key]} as read; not pinned by the spec" if key in read else \
                "sha256 not pinned by the spec"
        lines.append(f"file {name} ({pin})")
    return lines


def prompts_text(prompts: Sequence[AppliedPrompt], model_prompts: bool) -> str:
    """Each view's prompt, as the report states it: role (and task type), the text, where it came from."""
    origin = {"flag": "given on the command line", "instruction": "the task instruction in the template",
              "model": "the model's prompt {name}", "model default": "the model's default prompt {name}"}
    parts = []
    for p in prompts:
        where = f"{p.role}, {p.task}" if p.task else p.role
        if p.source == "none":
            parts.append(f"{where}: none")
        else:
            parts.append(f"{where}: {p.text!r} "
                         f"({origin[p.source].format(name=json.dumps(p.name or ''))})")
    return "; ".join(parts) + ("" if model_prompts else " (the model's own prompts turned off)") if parts else "none"


def size_text(count: int) -> str:
    """A byte count as people read it (decimal units), the exact count beside it."""
    for scale, prefix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if count >= scale:
            return f"{count / scale:.1f} {prefix}B ({count:,} bytes)"
    return f"{count:,} bytes"


def model_meta_line(meta: ModelMeta) -> str:
    """The model's metadata as the report's provenance states it: only what was read or measured, each with where
    it came from (a field nothing states is left out, never guessed)."""
    where = meta.sources
    parts = []
    if meta.n_parameters is not None:
        parts.append(f"{meta.n_parameters:,} parameters ({where.get('n_parameters', 'recorded')})")
    if meta.embed_dim is not None:
        parts.append(f"dimension {meta.embed_dim}")
    if meta.max_tokens is not None:
        parts.append(f"max tokens {meta.max_tokens} ({where.get('max_tokens', 'recorded')})")
    if meta.weights_bytes is not None:
        parts.append(f"weights {size_text(meta.weights_bytes)}")
    if meta.peak_memory_bytes is not None:
        parts.append(f"peak memory {size_text(meta.peak_memory_bytes)}, {meta.peak_memory_measure or 'measured'}")
    else:
        parts.append("peak memory not measured (no model load and encode in this run: every vector was cached, "
                     "or the encode ran elsewhere)")
    for field, label in (("license", "licence"), ("languages", "languages"), ("base_model", "base model"),
                         ("training_datasets", "training datasets"), ("similarity_fn_name", "similarity_fn_name")):
        value = getattr(meta, field)
        if value:
            shown = ", ".join(value) if isinstance(value, list) else value
            parts.append(f"{label} {shown} ({where.get(field, 'recorded')})")
    return "model metadata: " + "; ".join(parts)


def plot_caption(kind: str) -> str:
    """The caption a protocol kind gives its plot (its info's `caption`; "plot" where it gives none or is not
    registered here)."""
    entry = registry.PROTOCOLS.get(kind)
    return entry.info.caption or "plot" if entry is not None else "plot"


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.4g}"


def _spread_text(spread: Spread, unit: str = "") -> str:
    return f"{_number(spread.min)} to {_number(spread.max)}{unit} (mean {spread.mean:,.1f})"


LABELS_SHOWN = 10  # a report names the most frequent labels; results.json holds them all


def statistics_lines(statistics: dict[str, SplitStatistics] | None) -> list[str]:
    """One line per split read, as the report ends: items, distinct texts and each field as its kind allows."""
    lines = []
    for split, s in (statistics or {}).items():
        parts = [f"{split}{'' if s.evaluated else ' (fitted on, not scored)'}: {s.n:,} item(s), "
                 f"{s.unique_texts:,} unique text(s)"]
        for name, f in s.fields.items():
            said = []
            if f.unique is not None:
                said.append(f"{f.unique:,} unique")
            if f.length is not None:
                said.append(_spread_text(f.length, " characters"))
            if f.per_item is not None:
                said.append(_spread_text(f.per_item, " per item"))
            if f.values is not None:
                said.append("values " + _spread_text(f.values))
            if f.relevant is not None:
                said.append(_spread_text(f.relevant, " relevant per query"))
            if f.labels is not None:
                top = sorted(f.labels.items(), key=lambda pair: -pair[1])[:LABELS_SHOWN]
                more = len(f.labels) - len(top)
                said.append(f"{len(f.labels)} label(s): " + ", ".join(f"{label} {count:,}" for label, count in top)
                            + (f" and {more} more" if more else ""))
            if f.documents is not None:
                said.append(f"{f.documents:,} documents (their texts are not measured)")
            if said:
                parts.append(f"{name}: {', '.join(said)}")
        lines.append("; ".join(parts))
    return lines


def _model_line(results: Results) -> str:
    """What scored the run, as a report names it: the model, how it encoded and prompted, and any reranker."""
    m = results.provenance.model
    identity = f"revision {m.revision}" if m.revision else f"weights sha256 {m.weights_sha256}"
    shaped = (f", first {m.truncate_dim} dimensions" if m.truncate_dim else "") + (
        f", scored as {m.precision} codes" if m.precision != "float32" else "")
    model_line = (f"{_shown_name(m.name)} ({m.origin}; {identity}); adapter {m.adapter}, pooling {m.pooling}"
                  f"{', normalised' if m.normalize else ''}, max length {m.max_length}, {m.device}, {m.dtype}"
                  f"{shaped}. Prompts: {prompts_text(m.prompts, m.model_prompts)}")
    if m.reranker_model is not None:
        r = m.reranker_model
        model_line += (f". Reranked: each query's top {m.rerank_top_k} rescored by {_shown_name(r.name)}, "
                       f"weights sha256 {r.weights_sha256}; {r.pairs:,} pairs, {r.scored:,} scored in this run")
    return model_line


def _score_rows(results: Results) -> list[str]:
    """The results table's rows, one per split and metric, each n in its protocol's resampling unit."""
    u = results.provenance.uncertainty
    rows = []
    for split, scores in results.scores.items():
        for metric, s in scores.items():
            unit = u.unit.get(results.metrics[metric].protocol, "units")
            shown = f"{s.interval}, clipped to the range" if s.clipped else s.interval
            rows.append(table_row([md_cell(split), md_cell(metric), f"{s.value:.4f}",
                                   f"[{s.ci_low:.4f}, {s.ci_high:.4f}]", shown, md_cell(f"{s.n} {unit}")]))
    return rows


def _provenance_lines(spec: Spec, results: Results) -> list[str]:
    """The report's provenance, unescaped: spec, predictions, data, bootstrap, model facts, packages, date."""
    p = results.provenance
    u = p.uncertainty
    units = ", ".join(f"{protocol}: {unit}" for protocol, unit in u.unit.items())
    lines = [f"spec {PurePath(p.spec_path).name} sha256 {p.spec_sha256}",
             f"per-item predictions {results.predictions.file} ({results.predictions.rows} rows, "
             f"sha256 {results.predictions.sha256})"]
    for split, d in p.data.items():
        files = "; ".join(file_lines(spec, split, d.files)) if split in spec.splits else "files not in this spec"
        lines.append(f"data {split}: {d.path} at revision {d.revision}, {files}, licence {d.licence}, "
                     f"fingerprint {d.fingerprint}, {d.n_selected} of {d.n_source} item(s) ({d.selection})")
    methods = sorted({s.interval for scores in results.scores.values() for s in scores.values()})
    lines.append(f"seed {u.seed}; {u.method}, {u.resamples} resamples, {confidence_percent(u.confidence)} "
                 f"intervals ({'uncertainty.interval ' + u.interval + ': ' if u.interval == 'auto' else ''}"
                 f"{', '.join(methods)}); resampling unit {units}")
    if p.model_meta is not None:
        lines.append(model_meta_line(p.model_meta))
    if p.similarity:
        lines.append("similarity " + "; ".join(
            f"{name} {used.function}" + (" (the model's similarity_fn_name)" if used.requested == "model" else "")
            for name, used in p.similarity.items()))
    lines.append("packages " + ", ".join(f"{name} {version}" for name, version in p.packages.items()))
    lines.append(f"run {p.created}")
    return lines


def _results_view(spec: Spec, results: Results) -> dict[str, Any]:
    """The results section's values for card.md.j2, each escaped for Markdown."""
    u = results.provenance.uncertainty
    header = ["split", "metric", "value", f"{confidence_percent(u.confidence)} CI", "interval", "n"]
    kinds = {info.protocol: info.protocol_kind for info in results.metrics.values()}
    # the file names come from results.json: percent-encoded, a name can only be a link target, never Markdown
    plots = [(md_text(f"{key.replace('/', ', ')}: {plot_caption(kinds.get(key.split('/')[-1], ''))}"),
              quote(file, safe="")) for key, file in results.plots.items()]
    texts = results.texts
    spread = [f"{split} {metric}: mean of {s.runs} runs, sd {s.run_sd:.4f} across them"
              for split, scores in results.scores.items() for metric, s in scores.items()
              if s.runs is not None and s.run_sd is not None]
    runs_line = ("; ".join(spread) + ". Each value is the mean over its runs (fits or random restarts); its "
                 "interval resamples the runs as well as the units.") if spread else ""
    return {"model_line": md_text(_model_line(results)), "header": table_row(header),
            "runs_line": md_text(runs_line),
            "rule": table_row(["---", "---", "---:", "---", "---", "---:"]), "rows": _score_rows(results),
            "notes": [md_text(note) for note in (*choice_notes(results), *outside_notes(results),
                                                              *cell_notes(results), *identity_notes(spec, results))],
            "texts_line": md_text(f"{texts.total} asked for, {texts.unique} unique, {texts.encoded} encoded in "
                                  "this run."),
            "provenance_lines": [md_text(line) for line in _provenance_lines(spec, results)], "plots": plots,
            "statistics": [md_text(line) for line in statistics_lines(results.statistics)]}


def render_card(spec: Spec, examples: Sequence[Item], results: Results | None = None, *,
                citation: bool | None = None) -> str:
    """The benchmark card; with results, the results report (the card plus results and provenance), which ends
    in the spec's citation when it has one. A spec without `card` renders without the card's prose and examples
    (a report still says what was run and scored; callers say that no card was rendered). The card itself is the
    seed card's format line for line, which has no citation section: it carries one only when asked
    (`citation=True`); the hub dataset card places its own."""
    if citation is None:
        citation = results is not None
    protocols = [{"lead": md_text(f"{p.label} ({', '.join(n for n, m in spec.metrics.items() if m.protocol == key)}; "
                                  f"capability {p.capability})."),
                  "description": md_text(p.description),
                  "instruction": md_text(f" Task instruction (for instruction-following models, on its queries "
                                         f"and symmetric texts): {p.instruction}") if p.instruction else ""}
                 for key, p in spec.protocols.items()]
    card = spec.card
    prose = None if card is None else {
        "what_is_measured": md_text(card.what_is_measured), "data": md_text(card.data),
        "items_label": md_text(card.items_label), "items_text": md_text(card.items),
        "uncertainty": md_text(card.uncertainty), "caveats": md_text(card.caveats)}
    text = _ENV.get_template("card.md.j2").render(
        title=md_text(spec.title),
        notice=md_text(spec.licence.notice) if spec.licence.publication == "unconfirmed" and spec.licence.notice
        else None,
        card=prose,
        protocols=protocols,
        source_lines=[md_text(line) for line in source_lines(spec)],
        subset_lines=[md_text(line) for line in subset_lines(spec)],
        metric_lines=[md_text(line) for line in metric_lines(spec)],
        examples=_examples(spec, examples),
        results=_results_view(spec, results) if results else None,
        citation=citation_section(spec.citation) if citation else "",
    )
    return text.rstrip("\n") + "\n"
