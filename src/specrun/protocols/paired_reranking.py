"""Paired reranking: each unit is a pair of queries over one shared corpus, an original (og) query and its changed
form, each ranking its own candidates as corpus_reranking ranks them, plus the documents the change should push
down (`changed`). Per pair: p-MRR, FollowIR's measure of whether those documents moved down, and trec_eval's
measures of the og ranking, of the changed one, and of both (their mean). This is MTEB 2.x's evaluation of its
FollowIR tasks (type InstructionReranking, main score p-MRR): `-og` and `-changed` queries with top_ranked
candidates, scored by `evaluate_p_mrr_change` (mteb/_evaluators/retrieval_metrics.py) with the `qrel_diff` ids.

MTEB's p-MRR (`calculate_pmrr`): for each changed document, its rank in the og query's run and in the changed
query's run (`get_rank_from_dict`: the run is the query's top max(k_values) candidates, sorted by score then
document id, descending, ranks from 1; a document not in the run has rank len(run) + 1, on either side), scored
by `rank_score`: (1/og)/(1/new) - 1 when og >= new (moved up or stayed: <= 0), else 1 - (1/new)/(1/og) (moved
down: > 0); a pair's p-MRR is the mean over its changed documents, MTEB's the mean over pairs. Its og and changed
scores are pytrec_eval's means over its `-og` queries and over its other queries; its plain scores the mean over
all of them, which is the mean over pairs of (og + changed) / 2 when every query has its pair (mteb_retrieval's
option `pairs` reads them so). A pair without a changed document has no p-MRR, and MTEB leaves it out of that
mean only: one unit cannot say both, so it is refused."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from specrun.core.contracts import KindExample, KindInfo, ProtocolKind, RunContext
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import CORPUS_CUTOFFS, NO_SUPPORT, TREC_MEASURES, Item, Outputs, Support, trec_output
from specrun.protocols.corpus_reranking import CandidateOptions, checked, measures, ranked_candidates
from specrun.protocols.corpus_retrieval import one_corpus
from specrun.search.similarity import SIMILARITIES

SIDES = {"og": ("query", "qrels", "candidates"),
         "changed": ("changed_query", "changed_qrels", "changed_candidates")}  # MTEB's -og / -changed queries
TREC = tuple(trec_output(m, k) for m in TREC_MEASURES for k in CORPUS_CUTOFFS)


def rank_score(og_rank: int, new_rank: int) -> float:
    """MTEB's `rank_score` of one changed document, in its arithmetic: < 0 moved up, 0 stayed, > 0 moved down."""
    if og_rank >= new_rank:
        return ((1 / og_rank) / (1 / new_rank)) - 1
    return 1 - ((1 / new_rank) / (1 / og_rank))


def run_ranks(run: np.ndarray) -> tuple[dict[int, int], int]:
    """A ranked row of corpus positions (-1 past its end) -> position -> rank from 1, and the rank of a document
    outside the run (len(run) + 1, MTEB's `get_rank_from_dict`)."""
    kept = run[run >= 0]
    return {int(doc): rank for rank, doc in enumerate(kept, start=1)}, len(kept) + 1


def pair_p_mrr(og_run: np.ndarray, changed_run: np.ndarray, changed: Sequence[str],
               position: Mapping[str, int]) -> float:
    """One pair's p-MRR: the mean of `rank_score` over its changed documents (each as often as listed), a
    document's rank read in each run (len + 1 where it is not in it, also where it is not in the corpus)."""
    (og, og_absent), (new, new_absent) = run_ranks(og_run), run_ranks(changed_run)
    scores = []
    for doc in changed:
        at = position.get(doc, -1)  # a changed document in a run is a candidate, so the corpus placed it
        scores.append(rank_score(og.get(at, og_absent), new.get(at, new_absent)))
    return float(np.mean(scores))


class PairedRerankingProtocol(ProtocolKind[CandidateOptions]):
    """Per pair: `p_mrr`; trec_eval's measures at each cutoff of the og ranking (`og_ndcg_cut_10`, ...), the
    changed one (`changed_ndcg_cut_10`, ...) and their mean (`ndcg_cut_10`, ...), each against its own qrels.
    Each query's candidates are ranked as corpus_reranking ranks them (ties by document id descending, cut at
    top_k: MTEB's run depth, max(k_values), which p-MRR's ranks are read in)."""

    info = KindInfo(
        item_fields={"query": "text", "qrels": "judgments", "candidates": "document_ids",
                     "changed_query": "text", "changed_qrels": "judgments", "changed_candidates": "document_ids",
                     "changed": "document_ids", "corpus": "corpus"},
        outputs=("p_mrr", *TREC, *(f"{side}_{name}" for side in SIDES for name in TREC)),
        unit="pairs",
        prompt_task="InstructionReranking",  # MTEB's type of the tasks it scores so (FollowIR's)
        roles={"query": "query", "changed_query": "query", "corpus": "document"},
        hub_task="text-ranking",
        similarities=SIMILARITIES,
    )
    Options = CandidateOptions

    def validate_items(self, items: Sequence[Item], options: CandidateOptions, origin: str,
                       support: Support = NO_SUPPORT) -> None:
        """One corpus; every candidate a document of it; a changed document in every pair (p-MRR is undefined
        without one, and MTEB's trec means would still count the pair)."""
        one_corpus(items, origin)
        corpus = items[0].fields["corpus"] if items else None
        for item in items:
            for field in ("candidates", "changed_candidates"):
                missing = next((doc for doc in item.fields[field] if doc not in corpus.position), None)
                if missing is not None:
                    raise DataError(f"pair {item.id}: {field} {missing!r} is not a document of the corpus",
                                    file=origin, key=field)
            if not item.fields["changed"]:
                raise DataError(f"pair {item.id}: no changed document, so no p-MRR (MTEB leaves such a pair out "
                                "of p-MRR only, which one unit per pair cannot say)", file=origin, key="changed")

    def corpora(self, items: Sequence[Item], options: CandidateOptions) -> Iterator[tuple[str, SharedCorpus]]:
        if items:
            yield "corpus", items[0].fields["corpus"]

    def run(self, items: Sequence[Item], ctx: RunContext, options: CandidateOptions) -> Outputs:
        corpus: SharedCorpus = items[0].fields["corpus"]
        queries = np.vstack([checked(ctx.embed([item.fields[text] for item in items], text), ctx.similarity)
                             for text, _, _ in SIDES.values()])  # og rows, then changed rows: one pass of the corpus
        lists = [item.fields[candidates] for _, _, candidates in SIDES.values() for item in items]
        ranked = ranked_candidates(queries, lists, corpus, ctx, options)
        og, changed = ranked[:len(items)], ranked[len(items):]
        arrays = {"p_mrr": np.array([pair_p_mrr(og[row], changed[row], item.fields["changed"], corpus.position)
                                     for row, item in enumerate(items)])}
        for (side, (_, qrels, _)), runs in zip(SIDES.items(), (og, changed), strict=True):
            arrays.update({f"{side}_{name}": value
                           for name, value in measures(runs, [item.fields[qrels] for item in items], corpus).items()})
        arrays.update({name: (arrays[f"og_{name}"] + arrays[f"changed_{name}"]) / 2 for name in TREC})
        return Outputs(unit=self.info.unit, ids=[item.id for item in items], arrays=arrays)

    def example(self) -> KindExample:
        corpus = SharedCorpus.from_lists(ids=[f"d{i}" for i in range(6)], texts=[
            "javac on the command line", "compile java in eclipse", "int versus Integer",
            "null pointer exception", "what is a stack trace", "Integer.parseInt in java"])
        pairs = [("compiling java, any tool", "compiling java, only in a terminal", ["d0", "d1", "d2"], ["d1"]),
                 ("null crashes, any explanation", "null crashes, stack traces only", ["d3", "d4", "d1"], ["d3"]),
                 ("parse a number", "parse a number, not in java", ["d5", "d2", "d0"], ["d5", "d2"])]
        items = [Item(id=f"p{i}", fields={
            "query": og, "qrels": dict.fromkeys(docs[:2], 1), "candidates": docs,
            "changed_query": new, "changed_qrels": {docs[0]: 1, docs[1]: 0}, "changed_candidates": docs,
            "changed": changed, "corpus": corpus}) for i, (og, new, docs, changed) in enumerate(pairs)]
        return KindExample(items=items, options={"top_k": 3, "chunk_size": 4},
                           metrics=("p_mrr", "ndcg_cut_10", "og_ndcg_cut_10", "changed_map_cut_1000"))


PROTOCOLS.register("paired_reranking", PairedRerankingProtocol())
