"""Reports stage, hub side: metadata for the Hugging Face hub rendered from results.json or a spec, with
huggingface_hub's own types, and the licence gate in front of anything that publishes.

- model side: the `model-index` block of a model card, and `.eval_results/<spec>.yaml` entries;
- benchmark side: a dataset card (README.md with YAML front matter) and the benchmark's `eval.yaml`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from specrun.errors import SpecrunError
from specrun.results import Results, confidence_percent
from specrun.spec import Spec

# protocol kind -> hub task type (the hub's task ids)
HUB_TASKS = {"sts": "sentence-similarity", "conditional_sts": "sentence-similarity", "retrieval": "text-retrieval"}
# registered metric -> hub metric type
HUB_METRICS = {"pearson": "pearsonr", "spearman": "spearmanr", "conditional_spearman": "spearmanr",
               "pairwise_accuracy": "accuracy", "map": "map", "mrr": "mrr", "ndcg_at_10": "ndcg_at_10"}
# spec licence id -> hub licence id
HUB_LICENCES = {"none-stated": "unknown"}


@dataclass(frozen=True)
class Confirmation:
    """An explicit, recorded decision to publish although the spec's licence is not confirmed."""

    reason: str

    @property
    def sentence(self) -> str:
        return f"Publication confirmed by the publisher although the spec marks the licence unconfirmed: {self.reason}"


def licence_gate(publication: str, licence: str, what: str, confirmation: Confirmation | None) -> None:
    """Refuse to publish under an unconfirmed licence unless the user confirmed it, with a reason."""
    if publication == "confirmed":
        return
    if confirmation is None or not confirmation.reason.strip():
        raise SpecrunError(f"{what}: data licence {licence} is not confirmed for publication "
                           "(licence.publication: unconfirmed); nothing was published. Pass "
                           "--confirm-licence REASON to publish anyway; the reason is written into the card")


def task_id(split: str, metric_id: str) -> str:
    return f"{split}-{metric_id}"


def task_ids(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(split, metric id) -> hub task id, refusing two pairs that would share one ('a' + 'b-c' and 'a-b' + 'c'
    are both 'a-b-c'): the same check and message for .eval_results and eval.yaml, so the two always agree."""
    ids: dict[tuple[str, str], str] = {}
    owner: dict[str, tuple[str, str]] = {}
    for pair in pairs:
        name = task_id(*pair)
        other = owner.setdefault(name, pair)
        if other != pair:
            raise SpecrunError(f"hub task id {name!r} would name both split {other[0]!r} with metric {other[1]!r} "
                               f"and split {pair[0]!r} with metric {pair[1]!r}; rename a split or metric so that "
                               "'<split>-<metric>' differs; nothing was published")
        ids[pair] = name
    return ids


def spec_task_ids(spec: Spec) -> dict[tuple[str, str], str]:
    """The benchmark's task ids: every evaluated split with every metric."""
    return task_ids((split, metric_id) for split in spec.evaluated_splits for metric_id in spec.metrics)


def model_index(results: Results, dataset_id: str) -> list[dict[str, Any]]:
    """The `model-index` block for a model card (huggingface_hub's EvalResult, serialised by its own code)."""
    from huggingface_hub import EvalResult
    from huggingface_hub.repocard_data import eval_results_to_model_index

    revision = next(iter(results.provenance.data.values())).revision
    entries = []
    for split, scores in results.scores.items():
        for metric_id, score in scores.items():
            info = results.metrics[metric_id]
            entries.append(EvalResult(
                task_type=HUB_TASKS.get(info.protocol_kind, "feature-extraction"), task_name=info.protocol,
                dataset_type=dataset_id, dataset_name=results.title, dataset_config=results.spec_id,
                dataset_split=split, dataset_revision=revision,
                metric_type=HUB_METRICS.get(info.metric, info.metric), metric_value=round(score.value, 6),
                metric_name=f"{metric_id} ({info.label})", source_name="specrun",
                source_url="https://github.com/specrun/specrun"))
    return eval_results_to_model_index(results.provenance.model.name, entries)


def eval_results_yaml(results: Results, dataset_id: str, confirmation: Confirmation | None) -> str:
    """`.eval_results/<spec>.yaml` for a model repo: one entry per split and metric, tasks named as eval.yaml."""
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    revision = next(iter(results.provenance.data.values())).revision
    percent = confidence_percent(results.provenance.uncertainty.confidence)
    notes = f"specrun {results.provenance.specrun_version}; {percent} CI and provenance in the results report"
    if confirmation is not None:
        notes += f"; {confirmation.sentence}"
    ids = task_ids((split, metric_id) for split, scores in results.scores.items() for metric_id in scores)
    entries = [EvalResultEntry(dataset_id=dataset_id, task_id=ids[split, metric_id], value=round(score.value, 6),
                               dataset_revision=revision if len(revision) == 40 else None,
                               date=results.provenance.created, notes=notes)
               for split, scores in results.scores.items() for metric_id, score in scores.items()]
    return yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True)


def benchmark_eval_yaml(spec: Spec) -> str:
    """The benchmark's `eval.yaml`: what it is and one task per evaluated split and metric."""
    ids = spec_task_ids(spec)
    tasks = [{"id": ids[split, metric_id], "name": f"{metric.label} on {split}", "split": split,
              "metric": metric.metric, "higher_is_better": metric.direction == "higher"}
             for split in spec.evaluated_splits for metric_id, metric in spec.metrics.items()]
    document = {"name": spec.title, "description": spec.card.what_is_measured, "evaluation_framework": "specrun",
                "tasks": tasks}
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def dataset_card(spec: Spec, card_text: str, confirmation: Confirmation | None) -> str:
    """README.md for the benchmark's dataset repo: hub front matter (licence, task categories, pretty name) and the
    benchmark card as its body."""
    from huggingface_hub import DatasetCard, DatasetCardData

    kinds = {protocol.kind for protocol in spec.protocols.values()}
    data = DatasetCardData(license=HUB_LICENCES.get(spec.licence.data, spec.licence.data), pretty_name=spec.title,
                           task_categories=sorted({HUB_TASKS.get(kind, "feature-extraction") for kind in kinds}),
                           tags=["specrun", "sentence-embeddings", "benchmark"])
    body = card_text if confirmation is None else f"{card_text.rstrip()}\n\n{confirmation.sentence}\n"
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))
