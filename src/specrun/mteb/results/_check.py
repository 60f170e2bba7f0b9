"""`check-published`: our value beside the published one, per metric with an `mteb` counterpart, and their
difference. The run is verified (every score recomputed from its predictions) and its spec found by sha256: the
counterpart comes from the spec, never from results.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specrun.core.markdown import md_text
from specrun.mteb.results.lookup import Found, PublishedDir
from specrun.mteb.score_ref import MtebRef
from specrun.results import configuration, configured_note, run_identity, run_labels
from specrun.results.identity import identity_notes
from specrun.results.verify import refuse_limited, verified_with_spec


@dataclass(frozen=True)
class CheckRow:
    """One metric of one run: ours, the published value (or why none), and ours − published."""

    results: Path
    spec_id: str
    split: str
    metric: str
    ref: MtebRef
    ours: float
    found: Found
    label: str = ""  # the run's model and, where the runs checked differ in them, its settings
    changed: tuple[str, ...] = ()  # what the run changed about the model (results.configuration)
    other_data: tuple[str, ...] = ()  # where the run's splits differ from what the spec expects (MTEB's statistics)

    @property
    def difference(self) -> float | None:
        return None if self.found.value is None else self.ours - self.found.value.value


def check_published(paths: list[Path], published: PublishedDir, spec: str | None = None,
                    notes: list[str] | None = None) -> list[CheckRow]:
    """Every metric with an `mteb` counterpart, of every run named, looked up for the run's model and revision;
    a counterpart on a split the run did not score (a --splits run) is a note in `notes`, not a row."""
    rows = []
    notes = [] if notes is None else notes
    checked = [(path, *verified_with_spec(path, spec)) for path in paths]  # every run verified before any lookup
    for _, verified, _ in checked:  # a smoke run's numbers say nothing against a published value
        refuse_limited(verified, "check-published")
    labels = [""] * len(checked)
    for spec_id in {verified.results.spec_id for _, verified, _ in checked}:  # labelled against their spec's runs
        here = [i for i, (_, verified, _) in enumerate(checked) if verified.results.spec_id == spec_id]
        for i, label in zip(here, run_labels([run_identity(checked[i][1].results) for i in here]), strict=True):
            labels[i] = label
    for (path, verified, loaded), label in zip(checked, labels, strict=True):
        results, model = verified.results, verified.results.provenance.model
        other_data = tuple(identity_notes(loaded.spec, results))
        for metric_id, split, ref in ((m, split, ref) for m in loaded.spec.metrics
                                      for split, ref in loaded.spec.mteb_cells(m)):
            if metric_id not in results.scores.get(split, {}):
                notes.append(f"{path}: {metric_id} is not checked: its MTEB counterpart is on split {split}, which "
                             "this run did not score (--splits)")
                continue
            ours = results.scores[split][metric_id].value
            rows.append(CheckRow(results=path, spec_id=results.spec_id, split=split, metric=metric_id,
                                 ref=ref, ours=ours, label=label, changed=tuple(configuration(results)),
                                 other_data=other_data,
                                 found=published.find(model.name, model.revision, ref,
                                                      loaded.spec.metrics[metric_id].range)))
    return rows


def check_text(rows: list[CheckRow]) -> str:
    """A Markdown table (ours, published, difference) and a line per value that is not published."""
    lines = ["| run | spec | split | metric | MTEB task · split · subset · score | ours | published | "
             "ours − published |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        where = f"{r.ref.task} · {r.ref.split} · {r.ref.subset} · {r.ref.score}"
        published = "—" if r.found.value is None else f"{r.found.value.value:.10f}"
        difference = "—" if r.difference is None else f"{r.difference:+.3e}"
        lines.append(f"| {md_text(r.label)} | {r.spec_id} | {r.split} | {r.metric} | {where} | {r.ours:.10f} | "
                     f"{published} | {difference} |")
    notes = dict.fromkeys([*(configured_note(list(r.changed), r.label or "This run") for r in rows if r.changed),
                           *(f"{r.spec_id} ({r.label}): its data is not the reference's ({'; '.join(r.other_data)}): "
                             "the difference is the data's as well as the model's" for r in rows if r.other_data),
                           *(r.found.note for r in rows if r.found.note)])
    lines += [""] if notes or any(r.found.value is None for r in rows) else []
    lines += [f"Note: {md_text(note)}." for note in notes]
    lines += [f"Not published: {r.spec_id} {r.metric}: {md_text(r.found.reason)}." for r in rows
              if r.found.value is None]
    caveats: dict[str, list[str]] = {}  # one line per caveat, naming every metric it is the spec's caveat of
    for r in rows:
        if r.ref.caveat and f"{r.spec_id} {r.metric}" not in caveats.setdefault(r.ref.caveat, []):
            caveats[r.ref.caveat].append(f"{r.spec_id} {r.metric}")
    lines += [""] if caveats else []
    lines += [f"Caveat ({', '.join(names)}): {md_text(caveat)}." for caveat, names in caveats.items()]
    sources = dict.fromkeys(f"{md_text(r.found.value.file)} ({md_text(f'mteb {r.found.value.mteb_version}')})"
                            for r in rows if r.found.value is not None)
    lines += ["", "Published values read from: " + "; ".join(sources) + "."] if sources else []
    return "\n".join(lines) + "\n"


__all__ = ["CheckRow", "check_published", "check_text"]
