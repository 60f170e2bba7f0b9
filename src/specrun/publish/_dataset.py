"""The benchmark's data as the hub holds it: the evaluated splits as Parquet, a corpus-retrieval spec in MTEB's
retrieval layout (qrels, corpus, queries), the size category and the language the dataset card states."""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specrun.core import registry
from specrun.core.corpus import SharedCorpus
from specrun.core.errors import PublishError
from specrun.core.types import Item
from specrun.publish._schema import CONFIG
from specrun.spec import Spec


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
                raise PublishError(f"item field {name!r} holds a corpus; it is uploaded as the corpus, queries and "
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
        fields: Mapping[str, str] = registry.PROTOCOLS[protocol.kind].info.item_fields
        needed |= set(fields)
        of = {kind: [name for name, value in fields.items() if value == kind] for kind in ("text", "judgments",
                                                                                           "corpus")}
        if not of["corpus"]:
            continue
        if not (len(of["corpus"]) == len(of["text"]) == len(of["judgments"]) == 1):
            raise PublishError(f"protocol kind {protocol.kind} reads a corpus, but not as one query text, one set "
                               "of judgments and one corpus; it has no hub layout; nothing was published")
        found = CorpusFields(of["text"][0], of["judgments"][0], of["corpus"][0])
    if found is not None and needed - {found.query, found.qrels, found.corpus}:
        raise PublishError(f"the spec's protocols read {', '.join(sorted(needed))}: a corpus layout (corpus, queries, "
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
                raise PublishError(f"split {split} searches another corpus ({shared}) than the splits before it "
                                   f"({corpus}); the hub layout holds one corpus; nothing was published")
            text = str(item.fields[fields.query])
            if queries.setdefault(item.id, text) != text:
                raise PublishError(f"query {item.id!r} has two texts in the evaluated splits; the hub layout's "
                                   "queries config holds one; nothing was published")
            qrels += [{"query-id": item.id, "corpus-id": doc_id, "score": score}
                      for doc_id, score in item.fields[fields.qrels].items()]
        files[f"qrels/{split}.parquet"] = _parquet(qrels, pa.schema([("query-id", pa.string()),
                                                                     ("corpus-id", pa.string()),
                                                                     ("score", pa.int64())]))
    if corpus is None:
        raise PublishError("the evaluated splits hold no query, so there is no corpus to publish; nothing was "
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


# dataset card size categories (huggingface_hub DatasetCardData): upper bounds and labels
SIZE_CATEGORIES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]


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
