"""Publishing to the Hugging Face hub: the licence gate (`licence`), the hub's own formats (`_schema`), the files that
go up (`_cards`), the benchmark's data as the hub holds it (`_dataset`) and the upload (`upload`)."""

from __future__ import annotations

from specrun.publish._cards import (
    Source,
    benchmark_check,
    benchmark_eval_yaml,
    dataset_card,
    default_source,
    eval_results_yaml,
    model_index,
    publish_check,
)
from specrun.publish._dataset import (
    CorpusFields,
    DataLayout,
    beir_tables,
    corpus_fields,
    data_files,
    data_layout,
    guess_language,
    parquet_bytes,
    size_category,
)
from specrun.publish._schema import (
    CONFIG,
    EVALUATION_FRAMEWORK,
    EvalResultItem,
    EvalTask,
    EvalYaml,
    HubCheck,
    check_eval_results,
    check_eval_yaml,
    check_revision,
    direction_check,
    framework_check,
    frameworks,
    hub_metric,
    hub_task,
    hub_task_id,
    spec_task_ids,
    task_id,
    task_ids,
)
from specrun.publish.licence import Confirmation, card_gate, data_withheld, licence_gate, licence_refusal
from specrun.publish.upload import benchmark_publication, check_hub_reachable, redact, results_publication, upload

__all__ = ["CONFIG", "EVALUATION_FRAMEWORK", "Confirmation", "CorpusFields", "DataLayout", "EvalResultItem",
           "EvalTask", "EvalYaml", "HubCheck", "Source", "beir_tables", "benchmark_check", "benchmark_eval_yaml",
           "benchmark_publication", "card_gate", "check_eval_results", "check_eval_yaml", "check_hub_reachable",
           "check_revision",
           "corpus_fields", "data_files", "data_layout", "data_withheld", "dataset_card", "default_source",
           "direction_check", "eval_results_yaml", "framework_check", "frameworks", "guess_language", "hub_metric",
           "hub_task", "hub_task_id", "licence_gate", "licence_refusal", "model_index", "parquet_bytes",
           "publish_check", "redact", "results_publication", "size_category", "spec_task_ids", "task_id", "task_ids",
           "upload"]
