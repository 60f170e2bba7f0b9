"""The BitextMining part of `specrun import mteb`: MTEB 2.x's AbsTaskBitextMining (each sentence1 matched to its
nearest sentence2 of the split by the model's similarity, right when it is the one on its own row; scikit-learn's
support-weighted F1, precision and recall and accuracy over rows as labels) as a `bitext_mining` spec read by
`datasets` from the hub data. What the kind does not say (language pairs as columns of one split, attributes of a
task's own, columns renamed by a computed mapping) is refused by name."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import TypeImport, abstask_refusal, card_frame, renamed_back
from specrun.mteb.catalogue import Task
from specrun.mteb.import_sts import counts, hub_source

BITEXT_DESCRIPTION = (
    "Each sentence of both columns is embedded on its own as a document. Each sentence1 is matched to the sentence2 "
    "of highest similarity (the model's own similarity function, as MTEB's BitextMiningEvaluator uses it) among all "
    "of the split; the match is right when it is the sentence2 of its own row.")
# MTEB score key -> (spec metric, label)
BITEXT_METRICS = {"f1": ("f1_weighted", "F1 (weighted by support)"), "accuracy": ("accuracy", "Accuracy"),
                  "precision": ("precision_weighted", "Precision (weighted by support)"),
                  "recall": ("recall_weighted", "Recall (weighted by support)")}
# the abstask's own class attributes; another is Python of the task's own
KNOWN_ATTRIBUTES = {"abstask_prompt", "parallel_subsets", "fast_loading"}
PAIR = ("sentence1", "sentence2")  # AbsTaskBitextMining._DEFAULT_PAIR: the columns it reads, source then target


def bitext_refusal(task: Task) -> str | None:
    """What MTEB's AbsTaskBitextMining does beyond the bitext_mining kind: every pair is two columns of one row."""
    if reason := abstask_refusal(task, KNOWN_ATTRIBUTES, "AbsTaskBitextMining"):
        return reason
    if task.attributes.get("parallel_subsets"):
        return ("parallel_subsets (each language pair is two language columns of one split, every pair scored "
                "from the same rows; the kind reads one pair of columns)")
    computed = computed_renames(task)
    if computed:
        return f"a dataset_transform renaming columns by a computed mapping ({computed})"
    return None


def computed_renames(task: Task) -> str | None:
    """The expression of a rename the generator could not read as plain names (MTEB's `COL_MAPPING[subset]`)."""
    renames = task.transform.renames if task.transform else {}
    return renames.get("expr")


def bitext_columns(task: Task) -> dict[str, str]:
    """Item field -> column of the hub data: MTEB's sentence1 and sentence2, named as the data names them before
    a dataset_transform's renames."""
    renamed = renamed_back(task)
    return {"source": renamed.get(PAIR[0], PAIR[0]), "target": renamed.get(PAIR[1], PAIR[1])}


def bitext_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    return hub_source(task, name, source, bitext_columns(task))


def bitext_protocol(task: Task) -> dict[str, Any]:
    """MTEB's evaluator compares by `model.similarity` (the model's similarity_fn_name): `model` says the same."""
    return {"kind": "bitext_mining", "label": "Nearest-neighbour mining", "capability": "embed.text.pooled",
            "similarity": "model", "description": BITEXT_DESCRIPTION}


def bitext_card(task: Task, version: str) -> dict[str, Any]:
    found = counts(task)
    splits = ", ".join(f"{split} ({found[split]:,} pairs)" if split in found else split
                       for split in task.eval_splits)
    frame = card_frame(task, version)
    return {
        "what_is_measured": frame["what_is_measured"],
        "data": f"The hub dataset {task.dataset.path} at revision {task.dataset.revision}, as MTEB {version} loads "
                f"it for task {task.name}.",
        "items": f"Every pair of the evaluated split(s): {splits}, the counts MTEB's descriptive statistics state. "
                 "Each sentence1 is a unit; every sentence2 of its split is a candidate for it.",
        "uncertainty": "95 % bootstrap interval over the sentence1 rows, 1,000 resamples; the matches are fixed "
                       "(the candidates are not resampled).",
        "caveats": frame["caveats"] + " A sentence2 repeated on another row counts as a wrong match, as in MTEB.",
        "examples": {"count": 3, "heading": "Three pairs (input: a sentence and every candidate; expected output: "
                                            "the candidate on its row):",
                     "columns": {"id": "item_id", "source": "sentence1", "target": "sentence2"}},
    }


BITEXT_MINING_IMPORT = TypeImport(
    type="BitextMining", protocol="mining", metrics=BITEXT_METRICS, companions=("accuracy", "precision", "recall"),
    refusal=bitext_refusal, source=bitext_source, protocol_entry=bitext_protocol, card=bitext_card,
    metric_name=lambda score, metric: score,
    expect_fields={"source": "sentence1_statistics", "target": "sentence2_statistics"})

__all__ = ["BITEXT_DESCRIPTION", "BITEXT_METRICS", "BITEXT_MINING_IMPORT", "bitext_columns", "bitext_refusal"]
