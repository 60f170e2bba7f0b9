"""What goes up, rendered from results.json or a spec with huggingface_hub's own types: the `model-index` block of
a model card, `.eval_results/<spec>.yaml` entries, the benchmark's `eval.yaml` and its dataset card (README.md
with YAML front matter), each checked against the hub's schema."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from specrun.publish._dataset import DataLayout, size_category
from specrun.publish._schema import (
    CONFIG,
    EVALUATION_FRAMEWORK,
    HubCheck,
    check_eval_results,
    check_eval_yaml,
    direction_check,
    hub_metric,
    hub_task,
    hub_task_id,
    hub_url,
    spec_task_ids,
    split_check,
    task_ids,
)
from specrun.publish.licence import Confirmation, data_withheld
from specrun.results import Results, confidence_percent, configuration
from specrun.spec import GitSource, Spec

# spec licence id -> hub licence id
HUB_LICENCES = {"none-stated": "unknown"}


@dataclass(frozen=True)
class Source:
    """Attribution of a result (.eval_results `source`, model-index `source`): url required by the hub."""

    url: str
    name: str | None = None
    user: str | None = None
    org: str | None = None


def default_source(benchmark: str) -> Source:
    """The benchmark repo's page: its card states the protocol, data and licence behind every number."""
    return Source(url=hub_url(f"datasets/{benchmark}"), name="specrun benchmark card")


def model_index(results: Results, dataset_id: str, *, spec: Spec, revision: str | None = None,
                source: Source | None = None) -> list[dict[str, Any]]:
    """The `model-index` block for a model card (huggingface_hub's EvalResult, serialised by its own code).
    dataset.type is the benchmark repo; config and split are the ones load_dataset accepts there (named only when
    the repo holds the data), and the revision is the benchmark repo's own commit."""
    from huggingface_hub import EvalResult
    from huggingface_hub.repocard_data import eval_results_to_model_index

    source = source or default_source(dataset_id)
    has_data = data_withheld(spec) is None
    entries = []
    for split, scores in results.scores.items():
        for metric_id, score in scores.items():
            info = results.metrics[metric_id]
            entries.append(EvalResult(
                task_type=hub_task(info.protocol_kind), task_name=info.protocol,
                dataset_type=dataset_id, dataset_name=results.title,
                dataset_config=CONFIG if has_data else None, dataset_split=split if has_data else None,
                dataset_revision=revision,
                metric_type=hub_metric(info.metric), metric_value=round(score.value, 6),
                metric_name=f"{metric_id} ({info.label})", source_name=source.name or "specrun",
                source_url=source.url))
    changed = configuration(results)  # a dry run's files never credit the model as it is with another setup
    name = results.provenance.model.name + (f" ({', '.join(changed)})" if changed else "")
    return eval_results_to_model_index(name, entries)


def run_date(results: Results) -> str:
    """The run's date (ISO-8601 date) from its timestamp."""
    return datetime.datetime.fromisoformat(results.provenance.created).date().isoformat()


def eval_results_yaml(results: Results, dataset_id: str, confirmation: Confirmation | None, *,
                      revision: str | None = None, source: Source | None = None) -> str:
    """`.eval_results/<spec>.yaml` for a model repo: one entry per split and metric, tasks named as eval.yaml,
    the benchmark repo's revision (or none), the run's date, a source and short notes (interval, n and unit)."""
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    source = source or default_source(dataset_id)
    u = results.provenance.uncertainty
    percent = confidence_percent(u.confidence)
    ids = task_ids((split, metric_id) for split, scores in results.scores.items() for metric_id in scores)
    entries = []
    for split, scores in results.scores.items():
        for metric_id, score in scores.items():
            unit = u.unit.get(results.metrics[metric_id].protocol, "units")
            notes = (f"{percent} {score.interval} bootstrap CI [{score.ci_low:.4f}, {score.ci_high:.4f}], "
                     f"n={score.n} {unit}; "
                     f"specrun {results.provenance.specrun_version}")
            if confirmation is not None:
                notes += f"; licence confirmed by the publisher: {confirmation.reason}"
            entries.append(EvalResultEntry(
                dataset_id=dataset_id, task_id=ids[split, metric_id], value=round(score.value, 6),
                dataset_revision=revision, date=run_date(results), source_url=source.url, source_name=source.name,
                source_user=source.user, source_org=source.org, notes=notes))
    return yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True)


def publish_check(results: Results, spec: Spec, files: Mapping[str, str | bytes], repo: str | None) -> HubCheck:
    """What the hub would make of `specrun publish`'s files."""
    check = HubCheck()
    for name, content in files.items():
        if name.startswith(".eval_results/") and isinstance(content, str):
            check.add(check_eval_results(content, spec_task_ids(spec).values()))
    check.add(direction_check({m: info.direction for m, info in results.metrics.items()}))
    check.add(split_check(results.scores))
    model = results.provenance.model.name
    if repo and repo != model:
        check.warnings.append(f"--repo {repo} is not the evaluated model {model}: the hub shows these results as "
                              f"{repo}'s")
    if data_withheld(spec):
        check.warnings.append(f"model-index names no dataset config or split: the benchmark repo holds no data "
                              f"({data_withheld(spec)})")
    return check


def benchmark_eval_yaml(spec: Spec, framework: str = EVALUATION_FRAMEWORK) -> str:
    """The benchmark's `eval.yaml`: what it is and one task per evaluated split and metric, each naming the
    config and split of this repo that holds its items (hub-docs eval-results.md: id, config, split)."""
    ids = spec_task_ids(spec)
    tasks = [{"id": ids[split, metric_id], "config": CONFIG, "split": split}
             for split in spec.evaluated_splits for metric_id in spec.metrics]
    document = {"name": spec.title, "description": spec.card.what_is_measured, "evaluation_framework": framework,
                "tasks": tasks}
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def benchmark_check(spec: Spec, files: Mapping[str, str | bytes]) -> HubCheck:
    """What the hub would make of `specrun publish-benchmark`'s files."""
    check = HubCheck()
    eval_text = files.get("eval.yaml")
    if isinstance(eval_text, str):
        check.add(check_eval_yaml(eval_text))
    check.add(direction_check({m: metric.direction for m, metric in spec.metrics.items()}))
    check.add(split_check(spec.evaluated_splits))
    withheld = data_withheld(spec)
    if withheld:
        check.warnings.append(f"no data is uploaded ({withheld}): eval.yaml's tasks name config {CONFIG!r} and "
                              f"split(s) {', '.join(spec.evaluated_splits)}, which this repo will not hold")
    return check


def source_datasets(spec: Spec) -> list[str]:
    """Hub datasets the benchmark extends; a source outside the hub (a git file) makes it 'extended'."""
    hub = [s.path for s in spec.sources.values() if not isinstance(s, GitSource)]
    return sorted(set(hub)) if hub else ["extended"]


def dataset_card(spec: Spec, card_text: str, confirmation: Confirmation | None, *,
                 data: DataLayout | None = None, language: str | None = None) -> str:
    """README.md for the benchmark's dataset repo: hub front matter (licence, language, size, source datasets,
    task categories and ids, pretty name, and `configs` naming the uploaded Parquet files) and the benchmark card
    as its body (`card_text`, rendered without its citation), then the confirmation and the spec's citation.
    `data` is what is uploaded (None when the data is withheld)."""
    from huggingface_hub import DatasetCard, DatasetCardData

    from specrun.reports import citation_section

    kinds = {protocol.kind for protocol in spec.protocols.values()}
    extra: dict[str, Any] = {"configs": data.configs} if data else {}
    front = DatasetCardData(
        language=language.split(",") if language else None,
        license=HUB_LICENCES.get(spec.licence.data, spec.licence.data), pretty_name=spec.title,
        size_categories=[size_category(data.rows)] if data else None,
        source_datasets=source_datasets(spec),
        task_categories=sorted({hub_task(kind) for kind in kinds}),
        task_ids=sorted({task for task in map(hub_task_id, kinds) if task}) or None,
        tags=["specrun", "sentence-embeddings", "benchmark"], **extra)
    body = card_text if confirmation is None else f"{card_text.rstrip()}\n\n{confirmation.sentence}\n"
    citation = citation_section(spec.citation)
    if citation:
        body = f"{body.rstrip()}\n\n{citation}"
    return str(DatasetCard(f"---\n{front.to_yaml()}\n---\n\n{body}"))
