"""MTEB's hub retrieval layout (`mteb_retrieval`): a local copy of the dataset repo whose README `configs:` name
`corpus` (_id, title, text), `queries` (_id, text) and `default` or `qrels` (query-id, corpus-id, score), or their
`<subset>-corpus`, `<subset>-queries`, `<subset>-qrels` forms, each a split of parquet or JSON Lines files. Rows as
`beir_corpus` gives them (one per query with qrels, the corpus held once as a `SharedCorpus` of digests and
positions), read the way MTEB's `RetrievalDatasetLoader` reads the repo, so the items are MTEB's. With option
`candidates`, the `top_ranked` (or `<subset>-top_ranked`) config (query-id, corpus-ids) is read too: each row
gets its query's candidate document ids, MTEB's reranking form of the layout (the `corpus_reranking` kind). With
option `instructions`, the `instruction` (or `<subset>-instruction`) config (query-id, instruction), where the repo
has one, is joined into each query as MTEB's loader and `_retrieval_texts` join it: the query, a space, the
instruction. With option `pairs`, each `<id>-og` query and its `<id>-changed` query (FollowIR's layout in MTEB 2.x)
become one row, with the document ids the `qrel_diff` config lists for `<id>` (the documents the changed
instruction made non-relevant, which MTEB's FollowIR tasks read in their own task_specific_scores). With option
`corpus_split`, the corpus config is read from that split whatever split is evaluated (MTEB's loaders that keep
the corpus under `train`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import Field

from specrun.core.contracts import ReaderEntry, Rows
from specrun.core.errors import DataError
from specrun.core.registry import register_reader
from specrun.core.types import Strict
from specrun.readers.beir import MAX_SCORE, WHOLE_NUMBER, record_id, text_field
from specrun.readers.corpus_file import JudgedPositions
from specrun.readers.corpus_files import locate_all, read_corpus_files
from specrun.readers.hub_snapshot import Snapshot, read_snapshot, records

QRELS_COLUMNS = ("query-id", "corpus-id", "score")
TOP_RANKED_COLUMNS = ("query-id", "corpus-ids")
INSTRUCTION_COLUMNS = ("query-id", "instruction")
PAIR_SUFFIXES = ("-og", "-changed")  # MTEB's query ids of a pair: its og group is every id ending in -og
NOT_YET = {"top_ranked": "per-query candidates (MTEB evaluates it as reranking: read it with option "
                         "`candidates: true` and the corpus_reranking kind)",
           "instruction": "per-query instructions (MTEB joins each to its query: read it with option "
                          "`instructions: true`)"}


class MtebRetrievalOptions(Strict):
    subset: str | None = Field(None, min_length=1, description=(
        "The subset whose `<subset>-corpus`, `<subset>-queries` and `<subset>-qrels` configs are read (MTEB's "
        "hf_subset); `default` or none: the `corpus`, `queries` and `default`/`qrels` configs."))
    candidates: bool = Field(False, description=(
        "Read the `top_ranked` (`<subset>-top_ranked`) config too: each row's `candidates` are its query's "
        "candidate document ids (MTEB's reranking form; a query with qrels and no candidates gets none, as MTEB "
        "scores it: zero)."))
    instructions: bool = Field(False, description=(
        "Join the `instruction` (`<subset>-instruction`) config, where the repo has one, into each query as MTEB "
        "does: the query, a space, its instruction; without the option such a config is refused."))
    pairs: bool = Field(False, description=(
        "One row per pair of queries `<id>-og` and `<id>-changed` (MTEB's FollowIR layout): `query`, `qrels` "
        "(and `candidates`) are the og query's, `changed_query`, `changed_qrels` (`changed_candidates`) the "
        "changed one's, and `changed` the document ids the `qrel_diff` (`<subset>-qrel_diff`) config lists for "
        "`<id>` (none where it has no row); a judged query outside a judged pair is one line."))
    corpus_split: str | None = Field(None, min_length=1, description=(
        "The split the corpus config is read from, whatever split is evaluated (MTEB's loaders that read the "
        "corpus from `train` beside `test` queries and qrels); a config without that split is one line. None: the "
        "evaluated split, or the config's only one."))


def config_names(snapshot: Snapshot, subset: str | None, candidates: bool = False,
                 instructions: bool = False, pairs: bool = False) -> dict[str, str]:
    """Which config holds each part, as MTEB's loader picks them (a `query` config, where there is one, holds
    the queries of every subset; unprefixed qrels are `default`, else `qrels`; `candidates`: the top_ranked
    config as well; `instructions`: the instruction config where there is one, as MTEB's loader reads it only
    then; `pairs`: the qrel_diff config); a missing one is one line."""
    prefix = "" if subset in (None, "default") else f"{subset}-"
    names = {"corpus": f"{prefix}corpus", "queries": "query" if "query" in snapshot.configs else f"{prefix}queries",
             "qrels": f"{prefix}qrels" if prefix or "default" not in snapshot.configs else "default"}
    if candidates:
        names["candidates"] = f"{prefix}top_ranked"
    if pairs:
        names["changed"] = f"{prefix}qrel_diff"
    for part, name in names.items():
        if name not in snapshot.configs:
            raise DataError(f"has no config {name!r} for the {part} (its configs: "
                            f"{', '.join(map(repr, snapshot.configs))})", file=str(snapshot.root / "README.md"))
    if instructions and f"{prefix}instruction" in snapshot.configs:
        names["instructions"] = f"{prefix}instruction"
    for part, what in NOT_YET.items():
        if f"{prefix}{part}" in snapshot.configs and f"{prefix}{part}" not in names.values():
            raise DataError(f"config {prefix}{part!r} holds {what}; format mteb_retrieval reads full-corpus "
                            "retrieval only, and ranking the whole corpus instead would not be MTEB's task",
                            file=str(snapshot.root / "README.md"))
    return names


def mteb_document(record: Any, file: Path, line: int) -> tuple[str, str]:
    """A corpus record's id and the text MTEB embeds for it: title and text joined by a space and stripped, or
    the text stripped where the title is empty (MTEB strips there, `beir` does not); a null title is none."""
    doc_id = record_id(record, "corpus", file, line)
    what = f"document {doc_id!r}"
    text = text_field(record, "text", what, file, line)
    title = text_field(record, "title", what, file, line, required=False)
    return doc_id, (f"{title} {text}" if title else text).strip()


def _queries(snapshot: Snapshot, config: str, split: str, own: str) -> tuple[dict[str, str],
                                                                             dict[str, tuple[Path, int]]]:
    """Query id -> text, in file order; an id given twice is one line. A query record's own `instruction` column
    (`own`): "join"ed as MTEB's `_retrieval_texts` joins it (the query, a space, the instruction) with option
    `instructions`; "skip"ped where an instruction config replaces it (MTEB's loader overwrites the column);
    else refused: read as the bare query it would be a number MTEB never gives. Also each query's file and line."""
    queries: dict[str, str] = {}
    where: dict[str, tuple[Path, int]] = {}
    for file, number, record in records(snapshot.files(config, split)):
        query_id = record_id(record, "query", file, number)
        if query_id in queries:
            raise DataError(f"query id {query_id!r} appears twice", file=str(file), line=number, key="_id")
        queries[query_id] = text_field(record, "text", f"query {query_id!r}", file, number)
        where[query_id] = (file, number)
        if "instruction" in record and own != "skip":
            if own != "join":
                raise DataError("the queries carry an `instruction` column, which MTEB joins to each query: read "
                                "it with option `instructions: true`", file=str(file), line=number,
                                key="instruction")
            queries[query_id] += " " + _instruction(record["instruction"], query_id, file, number)
    return queries, where


def _instruction(value: Any, query_id: str, file: Path, number: int) -> str:
    """An instruction as MTEB can embed it: a string (its evaluator fails on a null one)."""
    if not isinstance(value, str):
        shown = "null (MTEB's evaluator fails on one)" if value is None else type(value).__name__
        raise DataError(f"query {query_id!r}: instruction must be a string, got {shown}", file=str(file),
                        line=number, key="instruction")
    return value


def qrels_score(value: Any, file: Path, number: int) -> int:
    """A relevance grade as MTEB casts it (int32): a whole number, also written 2.0 or "2"; a fraction, a
    negative grade or anything else is one line (a fraction would be truncated silently)."""
    if isinstance(value, str) and WHOLE_NUMBER.fullmatch(value.strip()) and len(value.strip()) <= 16:
        value = int(value.strip())
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SCORE:
        raise DataError(f"score {value!r} is not a whole number from 0 to {MAX_SCORE}", file=str(file),
                        line=number, key="score")
    return value


def _ids(record: Any, file: Path, number: int) -> tuple[str, str]:
    if not isinstance(record, dict) or any(name not in record for name in QRELS_COLUMNS):
        raise DataError(f"a qrels record needs {', '.join(QRELS_COLUMNS)}", file=str(file), line=number)
    ids = []
    for key in QRELS_COLUMNS[:2]:
        value = record[key]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
            raise DataError(f"{key} must be a non-empty string, got {value!r}", file=str(file), line=number, key=key)
        ids.append(str(value))
    return ids[0], ids[1]


def _qrels(snapshot: Snapshot, config: str, split: str, queries: dict[str, str],
           position: JudgedPositions) -> dict[str, dict[str, int]]:
    """query -> document -> score, every line checked against the queries and the corpus (the qrels are read
    twice: once to find their documents in one pass over the corpus, once to check and keep them)."""
    files = snapshot.files(config, split)
    locate_all(position, (_ids(record, file, number)[1] for file, number, record in records(files)))
    qrels: dict[str, dict[str, int]] = {}
    for file, number, record in records(files):
        query_id, doc_id = _ids(record, file, number)
        if query_id not in queries:
            raise DataError(f"query {query_id!r} is not in the queries", file=str(file), line=number)
        if doc_id not in position:
            raise DataError(f"document {doc_id!r} is not in the corpus", file=str(file), line=number)
        judged = qrels.setdefault(query_id, {})
        if doc_id in judged:
            raise DataError(f"query {query_id!r} judges document {doc_id!r} twice", file=str(file), line=number)
        judged[doc_id] = qrels_score(record["score"], file, number)
    return qrels


def _candidate_ids(value: Any, file: Path, number: int) -> list[str]:
    """A top_ranked row's corpus-ids as MTEB casts them (strings), each once, in order (MTEB's run holds a
    document once however often its list names it)."""
    if not isinstance(value, list) or any(isinstance(doc, bool) or not isinstance(doc, (str, int)) or doc == ""
                                          for doc in value):
        raise DataError(f"corpus-ids must be a list of document ids, got {value!r:.80}", file=str(file),
                        line=number, key="corpus-ids")
    return list(dict.fromkeys(str(doc) for doc in value))


def _top_ranked(snapshot: Snapshot, config: str, split: str, qrels: dict[str, dict[str, int]],
                position: JudgedPositions) -> dict[str, list[str]]:
    """query -> its candidate document ids, for the queries with qrels (MTEB drops the others); a query listed
    twice or a candidate not in the corpus is one line."""
    found: dict[str, list[str]] = {}
    for file, number, record in records(snapshot.files(config, split)):
        if not isinstance(record, dict) or any(name not in record for name in TOP_RANKED_COLUMNS):
            raise DataError(f"a top_ranked record needs {', '.join(TOP_RANKED_COLUMNS)}", file=str(file),
                            line=number)
        query_id = record["query-id"]
        if isinstance(query_id, bool) or not isinstance(query_id, (str, int)) or query_id == "":
            raise DataError(f"query-id must be a non-empty string, got {query_id!r}", file=str(file), line=number,
                            key="query-id")
        query_id = str(query_id)
        if query_id in found:
            raise DataError(f"query {query_id!r} has two top_ranked rows", file=str(file), line=number)
        found[query_id] = _candidate_ids(record["corpus-ids"], file, number)
        if query_id not in qrels:
            continue
        locate_all(position, found[query_id])
        missing = next((doc for doc in found[query_id] if doc not in position), None)
        if missing is not None:
            raise DataError(f"query {query_id!r}: candidate {missing!r} is not in the corpus", file=str(file),
                            line=number, key="corpus-ids")
    return {query_id: found.get(query_id, []) for query_id in qrels}


def _instructions(snapshot: Snapshot, config: str, split: str, queries: dict[str, str],
                  qrels: dict[str, dict[str, int]]) -> dict[str, str]:
    """Each judged query's text as MTEB embeds it: the query, a space, its instruction (MTEB's
    `_combine_queries_with_instruction_text`). A query with qrels and no instruction row (MTEB's loader fails
    there) or a null one (its evaluator's collate fails there, though its text join would drop it), a query
    listed twice or an instruction that is not a string is one line."""
    found: dict[str, str] = {}
    seen: set[str] = set()  # every listed query id, judged or not (ids only: the texts kept are the judged ones')
    for file, number, record in records(snapshot.files(config, split)):
        if not isinstance(record, dict) or any(name not in record for name in INSTRUCTION_COLUMNS):
            raise DataError(f"an instruction record needs {', '.join(INSTRUCTION_COLUMNS)}", file=str(file),
                            line=number)
        query_id, instruction = record["query-id"], record["instruction"]
        if isinstance(query_id, bool) or not isinstance(query_id, (str, int)) or query_id == "":
            raise DataError(f"query-id must be a non-empty string, got {query_id!r}", file=str(file), line=number,
                            key="query-id")
        if str(query_id) in seen:
            raise DataError(f"query {str(query_id)!r} has two instruction rows", file=str(file), line=number)
        _instruction(instruction, str(query_id), file, number)
        seen.add(str(query_id))
        if str(query_id) in qrels:
            found[str(query_id)] = instruction
    missing = next((query_id for query_id in queries if query_id in qrels and query_id not in found), None)
    if missing is not None:
        raise DataError(f"query {missing!r} has qrels and no row in config {config!r}",
                        file=str(snapshot.root / "README.md"))
    return {query_id: f"{text} {found[query_id]}" for query_id, text in queries.items() if query_id in qrels}


def _qrel_diff(snapshot: Snapshot, config: str) -> dict[str, list[str]]:
    """Pair id -> the document ids its qrel_diff row lists, in order and as often as listed (MTEB scores each
    listed id), read from the config's `qrel_diff` split as MTEB's FollowIR tasks read it (or its only split).
    Ids must be strings (MTEB joins the pair id to `-og` and matches documents by their string ids); a pair
    listed twice is one line."""
    found: dict[str, list[str]] = {}
    for file, number, record in records(snapshot.files(config, "qrel_diff")):
        if not isinstance(record, dict) or any(name not in record for name in TOP_RANKED_COLUMNS):
            raise DataError(f"a qrel_diff record needs {', '.join(TOP_RANKED_COLUMNS)}", file=str(file), line=number)
        pair, documents = record["query-id"], record["corpus-ids"]
        if not isinstance(pair, str) or not pair:
            raise DataError(f"query-id must be a non-empty string, got {pair!r}", file=str(file), line=number,
                            key="query-id")
        if not isinstance(documents, list) or not all(isinstance(doc, str) and doc for doc in documents):
            raise DataError(f"corpus-ids must be a list of document ids (strings), got {documents!r:.80}",
                            file=str(file), line=number, key="corpus-ids")
        if pair in found:
            raise DataError(f"pair {pair!r} has two qrel_diff rows", file=str(file), line=number)
        found[pair] = documents
    return found


def _paired(rows: Rows, changed: dict[str, list[str]], origin: str) -> Rows:
    """One row per judged pair, in the og queries' order: MTEB's og group is every query id ending in `-og`, its
    changed group every other, so a judged query that is not `<id>-og` or `<id>-changed` of a judged pair would
    count in one group's means with no partner (one line). A qrel_diff row of no judged pair is left out, as
    MTEB leaves it out of p-MRR."""
    by_id = {row["query_id"]: row for row in rows}
    for query_id in by_id:
        if not query_id.endswith(PAIR_SUFFIXES):
            raise DataError(f"query {query_id!r} ends in neither {' nor '.join(PAIR_SUFFIXES)}; option pairs "
                            "pairs <id>-og with <id>-changed", file=origin)
        og = query_id.endswith("-og")
        partner = (query_id[:-3] + "-changed") if og else (query_id.removesuffix("-changed") + "-og")
        if partner not in by_id:
            raise DataError(f"query {query_id!r} has qrels and its pair {partner!r} has none", file=origin)
    paired = []
    for query_id, row in by_id.items():
        if query_id.endswith("-og"):
            pair, other = query_id[:-3], by_id[query_id[:-3] + "-changed"]
            paired.append(row | {"query_id": pair, "changed_query": other["query"], "changed_qrels": other["qrels"],
                                 "changed": changed.get(pair, [])}
                          | ({"changed_candidates": other["candidates"]} if "candidates" in other else {}))
    return paired


def _corpus_split(snapshot: Snapshot, config: str, fixed: str | None, split: str) -> str:
    """The corpus config's split: option corpus_split's, which must exist (MTEB's `load_dataset(...)[split]`
    fails without it), else the evaluated one (or its fallback)."""
    if fixed is not None and fixed not in snapshot.configs[config]:
        raise DataError(f"config {config!r} has no split {fixed!r} (option corpus_split; its splits: "
                        f"{', '.join(map(repr, snapshot.configs[config]))})", file=str(snapshot.root / "README.md"))
    return fixed or split


def read_mteb_retrieval(path: Path, layout: Any, split: str) -> Rows:
    """One row per query that has qrels, in the queries' order (MTEB drops the others): `query_id`, `query`,
    `qrels` (document id -> whole-number score) and `corpus`, one `SharedCorpus` shared by every row. Each config
    reads the evaluated split, or its only split when it has one (the corpus: option corpus_split's, where set)."""
    options = MtebRetrievalOptions.model_validate(dict(getattr(layout, "options", None) or {}))
    snapshot = read_snapshot(path)
    names = config_names(snapshot, options.subset, options.candidates, options.instructions, options.pairs)
    corpus, judged = read_corpus_files(snapshot.files(names["corpus"], _corpus_split(snapshot, names["corpus"],
                                                                     options.corpus_split, split)), mteb_document)
    own = "skip" if "instructions" in names else "join" if options.instructions else "refuse"
    queries, where = _queries(snapshot, names["queries"], split, own)
    qrels = _qrels(snapshot, names["qrels"], split, queries, judged)
    for query_id in qrels:  # a judged query is embedded: an empty one is named where it is (others are dropped)
        if "instructions" not in names and not queries[query_id].strip():  # (an instruction config joins later)
            file, line = where[query_id]
            raise DataError(f"query {query_id!r} has qrels and an empty text", file=str(file), line=line, key="text")
    locate_all(judged, qrels)  # a query's own document, for corpus_retrieval's ignore_identical_ids
    candidates = _top_ranked(snapshot, names["candidates"], split, qrels, judged) if options.candidates else {}
    judged.seal()
    if "instructions" in names:
        queries = _instructions(snapshot, names["instructions"], split, queries, qrels)
    rows = [{"query_id": query_id, "query": text, "qrels": qrels[query_id], "corpus": corpus}
            | ({"candidates": candidates[query_id]} if options.candidates else {})
            for query_id, text in queries.items() if query_id in qrels]
    if options.pairs:
        return _paired(rows, _qrel_diff(snapshot, names["changed"]), str(snapshot.root / "README.md"))
    return rows


register_reader(ReaderEntry(
    "mteb_retrieval", read_mteb_retrieval, folder=True, options=MtebRetrievalOptions,
    description="MTEB's hub retrieval repo: README configs corpus, queries, default/qrels (or <subset>-...), "
                "parquet or jsonl; one row per query with its graded qrels, the corpus held once (option "
                "candidates: its top_ranked candidate ids too; instructions: each query joined with its instruction; "
                "pairs: one row per -og/-changed query pair, with qrel_diff's changed documents; corpus_split: the "
                "corpus config's split)"))
