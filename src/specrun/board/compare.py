"""Paired comparison of two runs on the same spec and the same items: the difference per metric, with a paired
percentile bootstrap (both models scored on the same resampled units) and the share of resamples where A beats B.
Reads results.json and the predictions they pin; nothing is re-encoded."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from specrun.board.leaderboard.build import spec_of
from specrun.board.paired import Difference, method_note, paired_difference
from specrun.core.errors import CompareError
from specrun.core.markdown import md_text
from specrun.mteb.results.markdown import PublishedCell, published_table
from specrun.results import Results, confidence_percent, configuration, configured_note, run_identity, run_labels
from specrun.results.verify import find_spec, load_verified, refuse_limited

if TYPE_CHECKING:
    from specrun.mteb.results import PublishedDir


def _check_same_items(a: Results, b: Results, path_a: Path, path_b: Path) -> None:
    if a.spec_id != b.spec_id:
        raise CompareError(f"runs are on different specs ({a.spec_id} vs {b.spec_id} in {path_b})", file=str(path_a))
    if a.provenance.spec_sha256 != b.provenance.spec_sha256:
        raise CompareError(f"the runs used different versions of spec {a.spec_id} (sha256 "
                           f"{a.provenance.spec_sha256[:12]} vs {b.provenance.spec_sha256[:12]} in {path_b}): a "
                           "protocol option, metric or item may differ, so a difference need not be the model's; "
                           "refusing to compare", file=str(path_a))
    for split, data in a.provenance.data.items():
        other = b.provenance.data.get(split)
        if other is None:
            raise CompareError(f"split {split} is not in {path_b}", file=str(path_a))
        if (data.fingerprint, data.selection, data.n_selected) != (other.fingerprint, other.selection,
                                                                  other.n_selected):
            raise CompareError(f"split {split}: the runs evaluated different items (fingerprint {data.fingerprint} "
                               f"vs {other.fingerprint}); refusing to compare", file=str(path_a))
    if a.provenance.uncertainty.seed != b.provenance.uncertainty.seed:
        raise CompareError("the runs used different subset seeds; refusing to compare", file=str(path_a))
    if a.metrics != b.metrics or {s: sorted(m) for s, m in a.scores.items()} != {s: sorted(m) for s, m in
                                                                                 b.scores.items()}:
        raise CompareError(f"the runs score different metrics or splits ({path_b} differs); refusing to compare",
                           file=str(path_a))


def compare(path_a: Path, path_b: Path) -> tuple[Results, Results, list[Difference]]:
    """Both runs verified (names, numbers, predictions' sha256, every score recomputed), then compared."""
    verified_a, verified_b = load_verified(path_a), load_verified(path_b)
    for verified in (verified_a, verified_b):  # where its spec is found, the run agrees with it (else an edit)
        spec_of(verified)
    refuse_limited(verified_a, "compare")
    refuse_limited(verified_b, "compare")
    a, b = verified_a.results, verified_b.results
    _check_same_items(a, b, path_a, path_b)
    units_a, units_b = verified_a.units, verified_b.units
    u = a.provenance.uncertainty
    out = []
    for split, scores in a.scores.items():
        for metric_id, score in scores.items():
            info = a.metrics[metric_id]
            key = (split, info.protocol)
            ids_a, arrays_a = units_a[key]
            ids_b, arrays_b = units_b.get(key, ([], {}))
            if ids_a != ids_b:
                raise CompareError(f"split {split}: the runs' units differ (first: {ids_a[:1]} vs {ids_b[:1]}); "
                                   "refusing to compare", file=str(path_a))
            method = score.interval
            if b.scores[split][metric_id].interval != method:
                raise CompareError(f"{metric_id} on {split}: the runs' intervals were read by different methods "
                                   f"({method} vs {b.scores[split][metric_id].interval} in {path_b}); refusing to "
                                   "compare", file=str(path_a))
            out.append(paired_difference(split, metric_id, info.metric, info.direction, arrays_a, arrays_b,
                                         u.resamples, u.confidence, u.seed, score.n, method))
    return a, b, out


def markdown(a: Results, b: Results, differences: list[Difference]) -> str:
    u = a.provenance.uncertainty
    percent = confidence_percent(u.confidence)
    label_a, label_b = (md_text(label) for label in run_labels([run_identity(a), run_identity(b)]))
    lines = [
        f"Paired comparison on {a.spec_id}: A = {label_a}, B = {label_b}",
        "",
        f"| split | metric | A | B | A − B | {percent} CI | P(A better) | n |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [f"| {d.split} | {d.metric} | {d.a:.4f} | {d.b:.4f} | {d.difference:+.4f} | "
              f"[{d.ci_low:+.4f}, {d.ci_high:+.4f}] | {d.a_better:.3f} | {d.n} |" for d in differences]
    units = ", ".join(sorted(set(u.unit.values())))
    lines += ["", f"Paired bootstrap: {u.resamples} resamples of the {units}, the same resamples for A and B, seed "
                  f"{u.seed}; {method_note(differences)}."]
    lines += [f"Note: {d.metric} on {d.split}: the difference lies outside its {d.interval} interval (the resamples "
              "are skewed around it)" for d in differences if not d.ci_low <= d.difference <= d.ci_high]
    return "\n".join(lines) + "\n"


def published_markdown(a: Results, b: Results, path_a: Path, path_b: Path, published: PublishedDir) -> str:
    """`compare --published DIR`: A's and B's published MTEB values beside theirs, per metric with an `mteb`
    counterpart. Shown, never paired: a published number has no units to resample."""
    loaded = find_spec(a, path_a).spec  # both runs used this spec (checked by sha256 in `compare`)
    labels = run_labels([run_identity(a), run_identity(b)])
    cells = []
    for metric_id, split, ref in ((m, split, ref) for m in loaded.metrics for split, ref in loaded.mteb_cells(m)):
        for run, label in zip((a, b), labels, strict=True):
            model = run.provenance.model
            cells.append(PublishedCell(keys=(split, metric_id, label), ours=run.scores[split][metric_id].value,
                                       found=published.find(model.name, model.revision, ref,
                                                            loaded.metrics[metric_id].range),
                                       label=f"{label} {metric_id}"))
    if not cells:
        return "\nPublished: no metric of spec " + f"{a.spec_id} names an MTEB counterpart (`metrics.NAME.mteb`).\n"
    lines = ["", "Published (MTEB result files): shown beside, not in the paired differences (a published value has "
                 "no interval and no units to resample).", ""]
    notes = [configured_note(configuration(run), label) for run, label in zip((a, b), labels, strict=True)]
    lines += [*(f"{md_text(note)}." for note in notes if note), *([""] if any(notes) else [])]
    lines += published_table(("split", "metric", "model"), cells)
    return "\n".join(lines) + "\n"
