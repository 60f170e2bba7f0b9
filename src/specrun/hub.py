"""Reports stage, hub side: metadata for the Hugging Face hub rendered from results.json or a spec, with
huggingface_hub's own types, checked against the hub's documented schema, and the licence gate in front of
anything that publishes.

- model side: the `model-index` block of a model card, and `.eval_results/<spec>.yaml` entries;
- benchmark side: a dataset card (README.md with YAML front matter), the evaluated splits as Parquet (when the
  data may be republished) and the benchmark's `eval.yaml`.

The schema is the hub's, not ours: hub-docs `docs/hub/eval-results.md` (commit 064c75486afa) and
`eval_results.yaml` (commit 259eaee416ae), huggingface_hub's `EvalResultEntry` (`_eval_results.py`, 2.4.0), and
the list of evaluation frameworks in huggingface.js `packages/tasks/src/eval.ts` (kept as data in
`hubdata/evaluation_frameworks.json` with its commit). What the hub would reject, `--push` refuses; what it would
only misrepresent is a warning.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator

from specrun.core import registry
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import SpecrunError, first_line
from specrun.core.types import Item, Strict
from specrun.results import Results, confidence_percent
from specrun.spec import GitSource, Spec


def hub_task(kind: str) -> str:
    """The hub's task type of a protocol kind: the registry entry says it (feature-extraction when it does not)."""
    return getattr(registry.PROTOCOLS.get(kind), "hub_task", "") or "feature-extraction"


def hub_task_id(kind: str) -> str | None:
    """The hub's subtask (dataset card `task_ids`, huggingface.js packages/tasks/src/pipelines.ts) of a kind."""
    return getattr(registry.PROTOCOLS.get(kind), "hub_task_id", None) or None


def hub_metric(name: str) -> str:
    """The hub's metric type of a registered metric (its `hub_id`), else the metric's own name."""
    return getattr(registry.METRICS.get(name), "hub_id", "") or name


# spec licence id -> hub licence id
HUB_LICENCES = {"none-stated": "unknown"}
EVALUATION_FRAMEWORK = "specrun"
CONFIG = "default"  # the one config of a benchmark repo: hub-docs says "set to default if there's only one"
HUB_SPLIT = re.compile(r"^\w+(\.\w+)*$")  # what `datasets` accepts as a split name
REVISION = re.compile(r"^[0-9a-f]{40}$")
# dataset card size categories (huggingface_hub DatasetCardData): upper bounds and labels
SIZE_CATEGORIES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]


@dataclass(frozen=True)
class Confirmation:
    """An explicit, recorded decision to publish although the spec's licence is not confirmed."""

    reason: str

    @property
    def sentence(self) -> str:
        return f"Publication confirmed by the publisher although the spec marks the licence unconfirmed: {self.reason}"


@dataclass
class HubCheck:
    """What the hub would make of the files: `refusals` it rejects (push refuses them), `warnings` it accepts but
    shows wrongly or incompletely (said in the dry run and before a push); `licence`: why specrun itself refuses
    them (an unconfirmed licence; a dry run shows the files, then ends in this line)."""

    refusals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    licence: str | None = None

    def add(self, other: HubCheck) -> HubCheck:
        self.refusals += other.refusals
        self.warnings += other.warnings
        self.licence = self.licence or other.licence
        return self


def licence_refusal(publication: str, licence: str, what: str, confirmation: Confirmation | None) -> str | None:
    """Why publishing under this licence is refused (unconfirmed, and no confirmation with a reason), or None."""
    if publication == "confirmed" or (confirmation is not None and confirmation.reason.strip()):
        return None
    return (f"{what}: data licence {licence} is not confirmed for publication (licence.publication: unconfirmed); "
            "nothing was published. Pass --confirm-licence REASON to publish anyway; the reason is written into the "
            "card")


def licence_gate(publication: str, licence: str, what: str, confirmation: Confirmation | None) -> None:
    """Refuse to publish under an unconfirmed licence unless the user confirmed it, with a reason."""
    refusal = licence_refusal(publication, licence, what, confirmation)
    if refusal is not None:
        raise SpecrunError(refusal)


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


# ---- the hub's documented schema -------------------------------------------------------------------------------


RepoId = Field(pattern=r"^[A-Za-z0-9][\w.-]*/[\w.-]+$", description="A hub repo id, owner/name.")


class EvalTask(Strict):
    """One task of eval.yaml: hub-docs docs/hub/eval-results.md keeps to these three keys."""

    id: str = Field(min_length=1, description="The task id .eval_results entries name as dataset.task_id.")
    config: str = Field(min_length=1, description="The HF dataset config ('default' if there's only one).")
    split: str = Field(pattern=HUB_SPLIT.pattern, description="The HF dataset split.")


class EvalYaml(Strict):
    """A benchmark repo's eval.yaml, as hub-docs docs/hub/eval-results.md documents it."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    evaluation_framework: str = Field(min_length=1, description="One of huggingface.js EVALUATION_FRAMEWORKS.")
    tasks: list[EvalTask] = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _unique_ids(cls, tasks: list[EvalTask]) -> list[EvalTask]:
        ids = [task.id for task in tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("task ids must be unique")
        return tasks


class EvalResultDataset(Strict):
    id: str = RepoId
    task_id: str = Field(min_length=1)
    config: str | None = None
    split: str | None = None
    revision: str | None = Field(None, pattern=REVISION.pattern, description="The benchmark repo's commit.")


class EvalResultSource(Strict):
    url: str = Field(pattern=r"^https?://\S+$", description="Required whenever source is given.")
    name: str | None = None
    user: str | None = None
    org: str | None = None


class EvalResultItem(Strict):
    """One entry of `.eval_results/*.yaml` (hub-docs eval-results.md and eval_results.yaml; huggingface_hub
    EvalResultEntry)."""

    dataset: EvalResultDataset
    value: float
    verifyToken: str | None = None
    date: str | None = None
    source: EvalResultSource | None = None
    evaluation_framework: str | None = None
    notes: str | None = None

    @field_validator("date")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.date.fromisoformat(value) if len(value) == 10 else datetime.datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"date {value!r} is not an ISO-8601 date or datetime") from None
        return value


def _problems(error: ValidationError, what: str) -> list[str]:
    return [f"{what}: {'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in error.errors()]


@cache
def frameworks() -> dict[str, Any]:
    """The hub's list of evaluation frameworks, with where it was copied from."""
    text = resources.files("specrun").joinpath("hubdata/evaluation_frameworks.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def framework_check(name: str) -> HubCheck:
    data = frameworks()
    if name in data["frameworks"]:
        return HubCheck()
    source = data["source"]
    return HubCheck(refusals=[
        f"eval.yaml: evaluation_framework {name!r} is not one the hub accepts ({source['repository']} "
        f"{source['path']} at {source['commit'][:12]} lists {', '.join(sorted(data['frameworks']))}), so the hub "
        f"rejects this eval.yaml at push time; registering takes {data['registering']}"])


def check_eval_yaml(text: str) -> HubCheck:
    """eval.yaml against the documented schema and the framework list."""
    try:
        document = EvalYaml.model_validate(yaml.safe_load(text))
    except ValidationError as exc:
        return HubCheck(refusals=_problems(exc, "eval.yaml"))
    return framework_check(document.evaluation_framework)


def check_eval_results(text: str, eval_yaml_ids: Iterable[str] | None = None) -> HubCheck:
    """`.eval_results/*.yaml` against the documented schema; with the benchmark's task ids, every entry's too."""
    data = yaml.safe_load(text)
    if not isinstance(data, list) or not data:
        return HubCheck(refusals=[".eval_results: expected a non-empty list of entries"])
    check = HubCheck()
    known = set(eval_yaml_ids) if eval_yaml_ids is not None else None
    for index, entry in enumerate(data):
        try:
            item = EvalResultItem.model_validate(entry)
        except ValidationError as exc:
            check.refusals += _problems(exc, f".eval_results[{index}]")
            continue
        if known is not None and item.dataset.task_id not in known:
            check.refusals.append(f".eval_results[{index}]: task_id {item.dataset.task_id!r} is not a task of the "
                                  "benchmark's eval.yaml")
    return check


def direction_check(directions: Mapping[str, str]) -> HubCheck:
    """The hub has no direction field and ranks higher values first: a lower-is-better metric would be ranked
    upside down on the leaderboard."""
    lower = sorted(metric for metric, direction in directions.items() if direction == "lower")
    if not lower:
        return HubCheck()
    return HubCheck(refusals=[f"metric(s) {', '.join(lower)} are lower-is-better; the hub has no direction field "
                              "and ranks higher values first, so its leaderboard would rank them upside down"])


def split_check(splits: Iterable[str]) -> HubCheck:
    bad = [split for split in splits if not HUB_SPLIT.fullmatch(split)]
    if not bad:
        return HubCheck()
    return HubCheck(refusals=[f"split name(s) {', '.join(bad)} are not hub split names (letters, digits, '_', "
                              "'.'); load_dataset cannot name them"])


# ---- what may be published ------------------------------------------------------------------------------------


def data_withheld(spec: Spec) -> str | None:
    """Why the evaluated items may not be uploaded to the benchmark repo, or None. A source marked `fetch: false`
    (withdrawn, personal or not-to-be-shared data) is never republished, whatever the licence gate says."""
    for split in spec.evaluated_splits:
        name = spec.splits[split].source
        source = spec.sources[name]
        if isinstance(source, GitSource) and not source.fetch:
            return f"source {name} is marked fetch: false (its data is never redistributed)"
    return None


def hub_url(path: str) -> str:
    """A page on the hub (HF_ENDPOINT when set, else huggingface.co)."""
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    return f"{endpoint}/{path}"


def check_revision(revision: str | None) -> str | None:
    if revision is not None and not REVISION.fullmatch(revision):
        raise SpecrunError(f"--benchmark-revision {revision!r} is not a full 40-hex commit of the benchmark repo")
    return revision


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


# ---- model side -----------------------------------------------------------------------------------------------


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
    return eval_results_to_model_index(results.provenance.model.name, entries)


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


# ---- benchmark side -------------------------------------------------------------------------------------------


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


def _parquet(rows: Sequence[Mapping[str, Any]], schema: Any = None) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(list(rows), schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def parquet_bytes(items: Sequence[Item]) -> bytes:
    """One split's items as Parquet: `id` and the mapped item fields, in item order. A shared corpus is never
    written as its digest in place of the documents: such a split goes up in the BEIR layout (`beir_tables`)."""
    for item in items:
        for name, value in item.fields.items():
            if isinstance(value, SharedCorpus):
                raise SpecrunError(f"item field {name!r} holds a corpus; it is uploaded as the corpus, queries and "
                                   "qrels configs, never as one column")
    return _parquet([{"id": item.id, **item.fields} for item in items])


def data_files(splits: Mapping[str, Sequence[Item]]) -> dict[str, bytes]:
    return {f"data/{split}.parquet": parquet_bytes(items) for split, items in splits.items()}


@dataclass(frozen=True)
class CorpusFields:
    """The item fields of a protocol that searches a shared corpus: the query text, its graded judgments (document
    id -> score) and the corpus."""

    query: str
    qrels: str
    corpus: str


def corpus_fields(spec: Spec) -> CorpusFields | None:
    """How the spec's items hold a shared corpus (from its protocol kinds' field kinds), or None when none does.
    One line when a kind reads a corpus in a shape the BEIR layout cannot hold, or beside other fields."""
    found: CorpusFields | None = None
    needed: set[str] = set()
    for protocol in spec.protocols.values():
        fields: Mapping[str, str] = getattr(registry.PROTOCOLS.get(protocol.kind), "item_fields", {})
        needed |= set(fields)
        of = {kind: [name for name, value in fields.items() if value == kind] for kind in ("text", "judgments",
                                                                                           "corpus")}
        if not of["corpus"]:
            continue
        if not (len(of["corpus"]) == len(of["text"]) == len(of["judgments"]) == 1):
            raise SpecrunError(f"protocol kind {protocol.kind} reads a corpus, but not as one query text, one set "
                               "of judgments and one corpus; it has no hub layout; nothing was published")
        found = CorpusFields(of["text"][0], of["judgments"][0], of["corpus"][0])
    if found is not None and needed - {found.query, found.qrels, found.corpus}:
        raise SpecrunError(f"the spec's protocols read {', '.join(sorted(needed))}: a corpus layout (corpus, queries, "
                           "qrels) cannot hold the fields beside the corpus; nothing was published")
    return found


CORPUS_FILE, QUERIES_FILE = "corpus.parquet", "queries.parquet"


def beir_tables(splits: Mapping[str, Sequence[Item]], fields: CorpusFields) -> dict[str, bytes]:
    """The BEIR layout MTEB's retrieval datasets have on the hub (mteb/scifact): `corpus.parquet` (_id, text: the
    text each document was embedded as, title and text joined as the reader joins them), `queries.parquet` (_id,
    text; every split's queries, by item id) and `qrels/<split>.parquet` (query-id, corpus-id, score: every
    judgment, 0 included). One corpus for all splits; a query id with two texts is refused."""
    import pyarrow as pa

    corpus: SharedCorpus | None = None
    queries: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for split, items in splits.items():
        qrels = []
        for item in items:
            shared = item.fields[fields.corpus]
            if corpus is None:
                corpus = shared
            elif shared != corpus:
                raise SpecrunError(f"split {split} searches another corpus ({shared}) than the splits before it "
                                   f"({corpus}); the hub layout holds one corpus; nothing was published")
            text = str(item.fields[fields.query])
            if queries.setdefault(item.id, text) != text:
                raise SpecrunError(f"query {item.id!r} has two texts in the evaluated splits; the hub layout's "
                                   "queries config holds one; nothing was published")
            qrels += [{"query-id": item.id, "corpus-id": doc_id, "score": score}
                      for doc_id, score in item.fields[fields.qrels].items()]
        files[f"qrels/{split}.parquet"] = _parquet(qrels, pa.schema([("query-id", pa.string()),
                                                                     ("corpus-id", pa.string()),
                                                                     ("score", pa.int64())]))
    if corpus is None:
        raise SpecrunError("the evaluated splits hold no query, so there is no corpus to publish; nothing was "
                           "published")
    text_schema = pa.schema([("_id", pa.string()), ("text", pa.string())])
    files[CORPUS_FILE] = _parquet([{"_id": doc_id, "text": text} for doc_id, text in corpus.rows()], text_schema)
    files[QUERIES_FILE] = _parquet([{"_id": query_id, "text": text} for query_id, text in queries.items()],
                                   text_schema)
    return files


@dataclass(frozen=True)
class DataLayout:
    """The data files of a benchmark repo, the card's `configs` naming them, and the rows they hold."""

    files: dict[str, bytes]
    configs: list[dict[str, Any]]
    rows: int


def data_layout(spec: Spec, splits: Mapping[str, Sequence[Item]]) -> DataLayout:
    """The evaluated splits as the hub holds them: one Parquet file per split in config `default`; for a corpus
    search, MTEB's retrieval layout: qrels per split in `default` (so eval.yaml's tasks name them), and the
    `corpus` and `queries` configs."""
    fields = corpus_fields(spec)
    if fields is None:
        return DataLayout(data_files(splits), [{"config_name": CONFIG, "data_files": [
            {"split": split, "path": f"data/{split}.parquet"} for split in splits]}],
            sum(len(items) for items in splits.values()))
    files = beir_tables(splits, fields)
    configs = [{"config_name": CONFIG, "data_files": [{"split": split, "path": f"qrels/{split}.parquet"}
                                                     for split in splits]},
               {"config_name": "corpus", "data_files": [{"split": "corpus", "path": CORPUS_FILE}]},
               {"config_name": "queries", "data_files": [{"split": "queries", "path": QUERIES_FILE}]}]
    first = next((items for items in splits.values() if items), None)
    documents = len(first[0].fields[fields.corpus]) if first else 0
    queries = len({item.id for items in splits.values() for item in items})
    return DataLayout(files, configs, documents + queries)


def size_category(n: int) -> str:
    for bound, label in SIZE_CATEGORIES:
        if n < bound:
            return label
    return "n>1B"


_EN_WORDS = frozenset(["the", "of", "and", "a", "an", "in", "to", "is", "are", "was", "were", "for", "with", "that",
                       "this", "by", "on", "as", "from", "at", "be"])


def _texts(items: Sequence[Item]) -> list[str]:
    return [value for item in items for value in item.fields.values() if isinstance(value, str)]


def guess_language(spec: Spec, items: Sequence[Item]) -> str | None:
    """The data's language: the spec's `language` when it states one; else derived from its texts: Japanese when
    kana appear, English when common English function words make up a tenth of the words; else unknown (None)."""
    if spec.language:
        return spec.language[0] if len(spec.language) == 1 else ",".join(spec.language)
    texts = _texts(items)
    if not texts:
        return None
    joined = " ".join(texts)
    if any(unicodedata.name(c, "").startswith(("HIRAGANA", "KATAKANA")) for c in joined):
        return "ja"
    words = re.findall(r"[A-Za-z]+", joined.lower())
    if words and sum(w in _EN_WORDS for w in words) >= 0.1 * len(words) and len(words) >= 0.5 * len(joined.split()):
        return "en"
    return None


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


def check_hub_reachable(repo_type: str, repo: str) -> None:
    """One short TCP connection to the hub before uploading, so that offline is one line within seconds instead
    of huggingface_hub's retries and log lines; its logging and progress bars are silenced for the upload."""
    from specrun.core.network import hub_offline_flag, hub_unreachable, quiet_hub_logging

    quiet_hub_logging()
    if hub_offline_flag():
        raise SpecrunError(f"HF_HUB_OFFLINE is set; nothing was uploaded to {repo_type} repo {repo}")
    reason = hub_unreachable()
    if reason is not None:
        raise SpecrunError(f"cannot reach the hub {reason}; nothing was uploaded to {repo_type} repo "
                           f"{repo}; rerun with --push when online, or without it for a dry run")


def redact(text: str) -> str:
    """A library's message with the token and any user:password of a URL, should it quote them, blanked."""
    import re

    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        token = os.environ.get(name)
        if token:
            text = text.replace(token, "***")
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def upload(files: dict[str, str | bytes], repo: str, repo_type: str, message: str, create_pr: bool) -> str:
    """One commit (or pull request) with every file, through huggingface_hub; the URL it made. Errors are one
    line without the token."""
    from huggingface_hub import CommitOperationAdd, HfApi

    operations = [CommitOperationAdd(path_in_repo=name,
                                     path_or_fileobj=content if isinstance(content, bytes) else content.encode())
                  for name, content in files.items()]
    try:
        commit = HfApi().create_commit(repo_id=repo, repo_type=repo_type, operations=operations,
                                       commit_message=message, create_pr=create_pr)
    except Exception as exc:  # network, auth, permissions: one line, never the token
        raise SpecrunError(f"upload to {repo_type} repo {repo} failed: {redact(first_line(exc))}") from None
    return f"pull request {commit.pr_url}" if create_pr and commit.pr_url else commit.commit_url


def results_publication(results_path: str, spec_path: str | None, benchmark: str, benchmark_revision: str | None,
                        source: Source | None, confirmation: Confirmation | None,
                        repo: str | None, *, push: bool = False) -> tuple[dict[str, str | bytes], HubCheck, str]:
    """`.eval_results/<spec>.yaml` and the model-index block of a verified run, with what the hub would make of
    them; the licence gate reads the spec (found by the sha256 results.json records), never the results file.
    An unconfirmed licence is refused here for a push, and named in the check (`licence`) for a dry run."""
    from specrun.verify import verified_with_spec

    revision = check_revision(benchmark_revision)
    verified, loaded = verified_with_spec(results_path, spec_path)
    results, spec = verified.results, loaded.spec
    what = f"{results_path} ({spec.id})"
    if push:
        licence_gate(spec.licence.publication, spec.licence.data, what, confirmation)
    refusal = licence_refusal(spec.licence.publication, spec.licence.data, what, confirmation)
    spec_task_ids(spec)  # the same task ids (and collision check) as publish-benchmark's eval.yaml
    source = source or default_source(benchmark)
    files: dict[str, str | bytes] = {
        f".eval_results/{spec.id}.yaml": eval_results_yaml(results, benchmark, confirmation, revision=revision,
                                                           source=source),
        "model-index.yaml": yaml.safe_dump({"model-index": model_index(results, benchmark, spec=spec,
                                                                       revision=revision, source=source)},
                                           sort_keys=False, allow_unicode=True),
    }
    return files, publish_check(results, spec, files, repo).add(HubCheck(licence=refusal)), spec.id


def benchmark_publication(spec: Spec, splits: Mapping[str, Sequence[Item]] | None, examples: Sequence[Item],
                          confirmation: Confirmation | None, framework: str | None,
                          shown: str, *, push: bool = False) -> tuple[dict[str, str | bytes], HubCheck]:
    """The benchmark repo's files: the dataset card (README.md), eval.yaml and, when the sources allow
    (`data_withheld`), the evaluated splits' items as Parquet; with what the hub would make of them. An
    unconfirmed licence is refused here for a push, and named in the check (`licence`) for a dry run. The caller
    loads the items (the data stage runs before this stage, never from it)."""
    from specrun.reports import render_card

    what = f"{shown} ({spec.id})"
    if push:
        licence_gate(spec.licence.publication, spec.licence.data, what, confirmation)
    eval_yaml = benchmark_eval_yaml(spec, framework)
    language = guess_language(spec, examples)
    data = data_layout(spec, splits) if splits else None
    files: dict[str, str | bytes] = {
        "README.md": dataset_card(spec, render_card(spec, examples, citation=False), confirmation, data=data,
                                  language=language),
        "eval.yaml": eval_yaml}
    if data:
        files.update(data.files)
    check = benchmark_check(spec, files)
    check.licence = licence_refusal(spec.licence.publication, spec.licence.data, what, confirmation)
    if language is None:
        check.warnings.append("the dataset card states no language: the spec has none and the texts did not show "
                              "one")
    return files, check


__all__ = [
    "CONFIG",
    "EVALUATION_FRAMEWORK",
    "Confirmation",
    "CorpusFields",
    "DataLayout",
    "EvalResultItem",
    "EvalTask",
    "EvalYaml",
    "HubCheck",
    "Source",
    "beir_tables",
    "benchmark_check",
    "benchmark_eval_yaml",
    "check_eval_results",
    "check_eval_yaml",
    "check_revision",
    "corpus_fields",
    "data_files",
    "data_layout",
    "data_withheld",
    "dataset_card",
    "default_source",
    "direction_check",
    "eval_results_yaml",
    "framework_check",
    "frameworks",
    "guess_language",
    "hub_metric",
    "hub_task",
    "hub_task_id",
    "licence_gate",
    "licence_refusal",
    "model_index",
    "parquet_bytes",
    "publish_check",
    "size_category",
    "spec_task_ids",
    "task_id",
    "task_ids",
]
