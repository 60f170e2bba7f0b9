"""Bitext mining: each source sentence is matched to its nearest target sentence by cosine among all targets of
the split; a match is right when it is the target on the same line, as MTEB's BitextMiningEvaluator scores it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specrun.core.contracts import KindExample, KindInfo, NoOptions, ProtocolKind, RunContext
from specrun.core.errors import DataError
from specrun.core.registry import PROTOCOLS
from specrun.core.types import Item, Outputs
from specrun.search.cosine import COSINE_DECIMALS, check_norms
from specrun.search.similarity import SIMILARITIES, similarity_matrix

BLOCK = 256  # source sentences scored at once: memory is BLOCK x targets, never sources x targets


def nearest_targets(sources: np.ndarray, targets: np.ndarray, function: str = "cosine") -> np.ndarray:
    """Index of each source row's nearest target row by cosine (float64, rounded as every cosine in specrun), or
    by another similarity (`search.similarity`); ties go to the first target, as torch.topk(k=1) in MTEB's
    search."""
    if function != "cosine":
        found = np.empty(len(sources), dtype=np.int64)
        for start in range(0, len(sources), BLOCK):
            found[start:start + BLOCK] = np.argmax(similarity_matrix(sources[start:start + BLOCK], targets,
                                                                     function), axis=1)
        return found
    sources = np.asarray(sources, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    source_norms, target_norms = np.linalg.norm(sources, axis=1), np.linalg.norm(targets, axis=1)
    check_norms(source_norms)
    check_norms(target_norms)
    unit_targets = targets / target_norms[:, None]
    found = np.empty(len(sources), dtype=np.int64)
    for start in range(0, len(sources), BLOCK):
        block = sources[start:start + BLOCK] / source_norms[start:start + BLOCK, None]
        scores = np.round(block @ unit_targets.T, COSINE_DECIMALS)
        found[start:start + BLOCK] = np.argmax(scores, axis=1)
    return found


class BitextMiningProtocol(ProtocolKind[NoOptions]):
    """Line-aligned translations: item i holds the source sentence and target sentence of line i. Every source is
    matched against every target of the split; outputs per source sentence: the matched target's line and its own
    line. Metrics are scikit-learn's over those lines as labels (MTEB: F1, precision and recall weighted by
    support, accuracy)."""

    info = KindInfo(
        item_fields={"source": "text", "target": "text"},
        outputs=("predicted_class", "gold_class"),
        unit="source sentences",
        prompt_task="BitextMining",
        roles={"source": "document", "target": "document"},
        hub_task="translation",
        similarities=SIMILARITIES,
    )
    Options = NoOptions

    def run(self, items: Sequence[Item], ctx: RunContext, options: NoOptions) -> Outputs:
        sources = ctx.embed([item.fields["source"] for item in items], "source")
        targets = ctx.embed([item.fields["target"] for item in items], "target")
        matched = nearest_targets(sources, targets, ctx.similarity)
        if len(items) > 1 and np.all(matched == matched[0]):
            raise DataError(f"every one of the {len(items)} source sentences is matched to target line "
                            f"{int(matched[0]) + 1}; a constant prediction measures nothing (are the vectors all "
                            "the same?)")
        return Outputs(unit=self.info.unit, ids=[item.id for item in items],
                       arrays={"predicted_class": matched.astype(np.float64),
                               "gold_class": np.arange(len(items), dtype=np.float64)})

    def example(self) -> KindExample:
        pairs = [("猫が寝ている", "the cat is sleeping"), ("雨が降っている", "it is raining"),
                 ("本を読みます", "I read a book"), ("駅はどこですか", "where is the station"),
                 ("ありがとう", "thank you"), ("おはよう", "good morning")]
        return KindExample(items=[Item(id=f"b{i}", fields={"source": s, "target": t})
                                  for i, (s, t) in enumerate(pairs)],
                           metrics=("accuracy", "f1_weighted", "precision_weighted", "recall_weighted"))


PROTOCOLS.register("bitext_mining", BitextMiningProtocol())
