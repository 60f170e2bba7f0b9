"""The InstructionRetrieval and InstructionReranking parts of `specrun import mteb`. In MTEB 2.x both are an
AbsTaskRetrieval on the hub retrieval layout whose `instruction` config gives each query an instruction: MTEB's
loader joins it to the query (`_combine_queries_with_instruction_text`: the query, a space, the instruction) and
then scores the task as any retrieval task (its reranking form where the data has `top_ranked`). So a task whose
main score is one of trec_eval's measures imports as import_retrieval writes it, its source read by
`mteb_retrieval` with option `instructions`. A task whose main score is FollowIR's p-MRR (its own
task_specific_scores calls `evaluate_p_mrr_change` with the `qrel_diff` config) imports as a `paired_reranking`
spec: the reader's option `pairs` makes each `<id>-og`/`<id>-changed` query pair one row with qrel_diff's changed
documents, and the kind scores p-MRR and the pooled, og and changed trec measures as MTEB does. InstructIR's main
score robustness@10 (its task_specific_scores: MTEB's `robustness_at_10`, the mean over query groups, ids up to the
first '_', of the lowest nDCG@10 among a group's instruction variants) is the metric `robustness_at_10` on
corpus_retrieval's option `query_groups: "_"`, the groups its unit."""

from __future__ import annotations

from typing import Any

from specrun.mteb._type_import import TypeImport, abstask_refusal
from specrun.mteb.catalogue import Task
from specrun.mteb.import_reranking import RERANKING_COMPANIONS
from specrun.mteb.import_retrieval import (
    CANDIDATES_DESCRIPTION,
    COMPANIONS,
    RETRIEVAL_DESCRIPTION,
    RETRIEVAL_METRICS,
    has_top_ranked,
    retrieval_card,
    retrieval_protocol,
    retrieval_refusal,
    retrieval_source,
    search_depth,
)

ATTRIBUTES = {"abstask_prompt", "ignore_identical_ids", "k_values", "skip_first_result"}  # AbsTaskRetrieval's own
JOINED = ("Each query is read as MTEB's loader builds it: the query, a space, its instruction (from the data's "
          "instruction config; where the data has none, the query as it is). ")
# MTEB's main scores of these types that no trec_eval measure is, each with the piece a spec would need for it
NEEDS: dict[str, str] = {}
ROBUSTNESS = "robustness_at_10"  # InstructIR's: the lowest nDCG@10 of each query group, averaged over the groups
GROUP_SEPARATOR = "_"  # MTEB's robustness_at_10 groups qrels keys by `key.split("_")[0]`
# the main scores in NEEDS mapped only so that their refusal names what each needs (instruction_refusal)
INSTRUCTION_METRICS = RETRIEVAL_METRICS | {score: (score, score) for score in NEEDS} | {
    "p-MRR": ("p_mrr", "p-MRR"),
    ROBUSTNESS: (ROBUSTNESS, "Robustness@10 (the lowest nDCG@10 of each query's instruction variants, averaged)")}
ROBUSTNESS_DESCRIPTION = (
    " Robustness@10 groups the queries by their id up to the first '_' (the instruction variants of one query) "
    "and averages over the groups each group's lowest nDCG@10; its interval resamples the groups.")
PAIRED = "p-MRR"  # the main score of MTEB's paired (og/changed) evaluation: the paired_reranking kind's
# FollowIR's task_specific_scores: `evaluate_p_mrr_change` on the qrel_diff config (load_dataset), which the
# paired_reranking kind computes (p-MRR and the og/changed trec measures) rather than leaves out
PAIRED_SCORES = {"task_specific_scores": frozenset({"evaluate_p_mrr_change", "load_dataset"})}
PAIRED_DESCRIPTION = (
    "Each `<id>-og` query and its `<id>-changed` query (each read as MTEB's loader builds it: the query, a space, "
    "its instruction) are one pair; each ranks only its own candidates (the data's top_ranked) by cosine, ties by "
    "document id descending, kept to MTEB's depth. Per pair: p-MRR over the documents the data's qrel_diff config "
    "lists (MTEB's rank_score of each one's rank in the og and in the changed run, len(run) + 1 where it is not "
    "in one), and trec_eval's measures of each run against its own qrels, as MTEB's evaluate_p_mrr_change scores "
    "them (the plain ones: the mean of the pair's og and changed).")
PAIRED_CAVEAT = (" MTEB also reports the og and changed runs' own trec measures (under `og` and `changed`), which "
                 "the spec's kind computes (metrics og_ndcg_cut_10, changed_ndcg_cut_10, ...) but writes no "
                 "`mteb:` counterpart for (MTEB nests them).")
# IFIR's task_specific_scores: nDCG@20 averaged per instruction level (query ids with v1, v2, v3) beside the usual
# scores, which it does not change: the spec scores the usual ones and says the others are left out; InstructIR's
# adds robustness_at_10, the metric of that name
LEVEL_SCORES = {"task_specific_scores": frozenset({"append", "items", "len", "sum", ROBUSTNESS})}
# MTEB looks a model's prompts up under the task's own type; the spec's kind under Retrieval or Reranking
PROMPT_CAVEAT = ("MTEB looks a model's prompts up under this task's type ({type}); the spec's kind looks them up under "
                 "{kind}, so a model whose prompts are keyed by type may read another prompt here than in MTEB")
LEVEL_CAVEAT = (" MTEB also reports this task's own level_scores (nDCG@20 averaged per instruction level, from its "
                "task_specific_scores), which this spec does not compute; it changes none of its other scores.")


def instruction_refusal(task: Task) -> str | None:
    """A main score no trec_eval measure is (by name, with what it needs), then what the retrieval form refuses."""
    if reason := abstask_refusal(task, ATTRIBUTES, "AbsTaskRetrieval"):
        return reason
    if task.main_score in NEEDS:
        return NEEDS[task.main_score]
    if task.main_score == PAIRED and not has_top_ranked(task):
        return "p-MRR without top_ranked candidates (paired_reranking ranks each query's candidates)"
    if task.main_score == PAIRED and "evaluate_p_mrr_change" not in task.hook_calls.get("task_specific_scores", []):
        return "p-MRR without MTEB's evaluate_p_mrr_change (the paired scores it says are not the kind's)"
    return retrieval_refusal(task)


def reranking_refusal(task: Task) -> str | None:
    """An InstructionReranking task also needs its top_ranked candidates (else it would be full-corpus search)."""
    if (reason := instruction_refusal(task)) or has_top_ranked(task):
        return reason
    return "no top_ranked candidates in MTEB's statistics (its reranking form could not be checked)"


def instruction_source(task: Task, name: str, source: dict[str, Any]) -> dict[str, Any]:
    """import_retrieval's source (its reader joins the instruction config into the queries, as for any
    retrieval task); for p-MRR read in pairs (option `pairs`), each pair's og and changed fields and its changed
    documents."""
    source = retrieval_source(task, name, source)
    if task.main_score == PAIRED:
        source["mirror"]["options"]["pairs"] = True
        source["columns"] |= {field: field for field in (
            "changed_query", "changed_qrels", "changed_candidates", "changed")}
    return source


def instruction_protocol(task: Task, companions: tuple[str, ...] = COMPANIONS) -> dict[str, Any]:
    """import_retrieval's protocol, its description saying how each query reads; for p-MRR the paired kind,
    its runs as deep as MTEB's (max(k_values)), since p-MRR reads ranks anywhere in them."""
    if task.main_score == PAIRED:
        return {"kind": "paired_reranking", "label": "Reranking of each og/changed query pair's candidates",
                "capability": "embed.text.pooled", "similarity": "cosine", "description": PAIRED_DESCRIPTION,
                "options": {"top_k": search_depth(task)}}
    entry = retrieval_protocol(task, companions)
    entry["description"] = JOINED + (CANDIDATES_DESCRIPTION if has_top_ranked(task) else RETRIEVAL_DESCRIPTION)
    if task.main_score == ROBUSTNESS:
        entry["description"] += ROBUSTNESS_DESCRIPTION
        entry.setdefault("options", {})["query_groups"] = GROUP_SEPARATOR
    return entry


def instruction_card(task: Task, version: str) -> dict[str, Any]:
    """import_retrieval's card, naming the instruction config and the level scores a task's hook adds."""
    card = retrieval_card(task, version)
    card["data"] = card["data"].replace(" configs)", " configs, and its instruction config joined into each query)")
    card["caveats"] = card["caveats"].split(" MTEB also reports")[0] + (
        LEVEL_CAVEAT if "task_specific_scores" in task.hooks and task.main_score != ROBUSTNESS else "")
    if task.main_score == ROBUSTNESS:
        card["uncertainty"] += (" Robustness@10's interval resamples the query groups (ids up to the first "
                                "'_'), each counted by its first query.")
    if task.main_score == PAIRED:
        card["data"] = card["data"].replace(" and top_ranked configs", ", top_ranked and qrel_diff configs")
        card["items"] = card["items"].replace("Every query with qrels", "Every pair of an `-og` and a `-changed` "
                                              "query with qrels").replace("each query ranks", "each of them ranks")
        card["uncertainty"] = "95 % bootstrap interval over the query pairs, 1,000 resamples."
        card["caveats"] = card["caveats"].split(" MTEB also reports")[0] + PAIRED_CAVEAT
        card["examples"]["heading"] = card["examples"]["heading"].replace("Three queries", "Three og queries")
    elif task.type == "InstructionReranking":  # corpus_reranking's prompts are Reranking's, not the task type's
        card["caveats"] += " " + PROMPT_CAVEAT.format(type=task.type, kind="Reranking") + "."
    return card


INSTRUCTION_RETRIEVAL_IMPORT = TypeImport(
    type="InstructionRetrieval", protocol="search", metrics=INSTRUCTION_METRICS, companions=COMPANIONS,
    refusal=instruction_refusal, source=instruction_source, protocol_entry=instruction_protocol,
    card=instruction_card, extra_scores=LEVEL_SCORES,
    mteb_caveat=PROMPT_CAVEAT.format(type="InstructionRetrieval", kind="Retrieval"))
INSTRUCTION_RERANKING_IMPORT = TypeImport(
    type="InstructionReranking", protocol="rerank", metrics=INSTRUCTION_METRICS, companions=RERANKING_COMPANIONS,
    refusal=reranking_refusal, source=instruction_source,
    protocol_entry=lambda task: instruction_protocol(task, RERANKING_COMPANIONS), card=instruction_card,
    metric_name=lambda score, metric: metric if score == PAIRED else score, score_ranges={PAIRED: (-1.0, 1.0)},
    extra_scores=PAIRED_SCORES)
