"""Roles and prompts, quick: which prompt each view gets (hand-worked, in the documented order), the same text in
two roles is two cache entries, a prompt changes only its role's vectors, and the spec's role overrides are
checked. The hashing adapter puts a prompt's words into the vector, so a prompt that reached the wrong role
moves a number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from specrun.core.errors import ModelError
from specrun.core.plain_yaml import load_plain
from specrun.core.settings import EncoderSettings
from specrun.core.types import View
from specrun.encoders.adapters import HashingAdapter
from specrun.encoders.prompts import ModelPrompts, applied_prompt, resolve_flags
from tests.conftest import assert_one_line_error, run_cli, run_ok
from tests.protocols.test_corpus_retrieval import DOCS, GRADED, HERE, corpus_spec, independent, make_graded_beir

NOMIC_LIKE = ModelPrompts(prompts={"query": "search_query: ", "document": "search_document: ",
                                   "Classification": "classification: ", "Retrieval-query": "retrieve: ",
                                   "passage": "passage: ", "sim": "sim: "}, default_name="sim")


def prompt_of(view: View, declared: ModelPrompts = NOMIC_LIKE, **settings: object) -> tuple[str, str | None, str]:
    resolved = resolve_flags(EncoderSettings(**settings), declared, has_model=True)  # type: ignore[arg-type]
    applied = applied_prompt(view, resolved, declared)
    return applied.text, applied.name, applied.source


@pytest.mark.parametrize(("view", "settings", "expected"), [
    # MTEB's order: {task}-{role}, {task}, then the role's own key
    (View("query", "Retrieval"), {}, ("retrieve: ", "Retrieval-query", "model")),
    (View("document", "Retrieval"), {}, ("search_document: ", "document", "model")),
    (View("query", "Reranking"), {}, ("search_query: ", "query", "model")),
    (View("symmetric", "Classification"), {}, ("classification: ", "Classification", "model")),
    # a symmetric text with no key of its own gets the model's default prompt, named
    (View("symmetric", "STS"), {}, ("sim: ", "sim", "model default")),
    # flags: the role's own, then --prompt for every role
    (View("query", "Retrieval"), {"query_prompt": "q: "}, ("q: ", None, "flag")),
    (View("document", "Retrieval"), {"query_prompt": "q: "}, ("search_document: ", "document", "model")),
    (View("document", "Retrieval"), {"prompt": "all: ", "document_prompt": "name:passage"},
     ("passage: ", "passage", "flag")),
    (View("symmetric", "STS"), {"prompt_name": "passage"}, ("passage: ", "passage", "flag")),
    # the instruction, through the template, on queries and symmetric texts; never on documents
    (View("query", "Retrieval", "Find it"), {"instruction_template": "Instruct: {instruction}\\nQuery: "},
     ("Instruct: Find it\nQuery: ", None, "instruction")),
    (View("document", "Retrieval"), {"instruction_template": "I: {instruction} "},
     ("search_document: ", "document", "model")),
    (View("query", "Retrieval", "Find it"), {}, ("retrieve: ", "Retrieval-query", "model")),  # no template: unused
    # --no-model-prompts: none at all, the default prompt included
    (View("symmetric", "STS"), {"model_prompts": False}, ("", None, "none")),
    (View("query", "Retrieval"), {"model_prompts": False}, ("", None, "none")),
])
def test_each_view_gets_the_documented_prompt(view: View, settings: dict, expected: tuple) -> None:
    assert prompt_of(view, **settings) == expected


def test_a_model_without_prompts_gives_none_and_document_falls_back_to_passage() -> None:
    assert prompt_of(View("query", "Retrieval"), ModelPrompts()) == ("", None, "none")
    e5 = ModelPrompts(prompts={"query": "query: ", "passage": "passage: "})
    assert prompt_of(View("document", "Retrieval"), e5) == ("passage: ", "passage", "model")
    assert prompt_of(View("symmetric", "STS"), e5) == ("", None, "none")  # no default: nothing applied


@pytest.mark.parametrize(("config", "message"), [
    ("{not json", "not readable JSON"),
    (json.dumps({"prompts": {"a": "x"}, "default_prompt_name": "b"}), "default_prompt_name 'b' is not one of"),
    (json.dumps({"prompts": ["a"]}), "`prompts` must map names to texts"),
    ("[]", "expected a JSON object"),
])
def test_a_bad_prompt_config_is_one_line(config: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "config_sentence_transformers.json").write_text(config)
    with pytest.raises(ModelError, match=message):
        ModelPrompts.of(str(tmp_path))


@pytest.mark.parametrize(("settings", "message"), [
    ({"query_prompt": "name:nope"}, "--query-prompt nope: the model defines"),
    ({"prompt": "a", "prompt_name": "sim"}, "exclude each other"),
    ({"instruction_template": "no placeholder"}, "must hold {instruction}"),
])
def test_bad_prompt_flags_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        resolve_flags(EncoderSettings(**settings), NOMIC_LIKE, has_model=True)


def test_a_named_prompt_without_a_model_is_refused(tmp_path: Path, data_dir: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["specs/tatoeba.yaml", "--adapter", "hashing", "--data-dir", str(data_dir),
                            "--document-prompt", "name:query", "--no-cache", "--output", str(tmp_path)], capsys)
    assert_one_line_error(code, err, contains="needs a model folder")


def hashing_vectors(texts: list[str], prompt: str = "") -> np.ndarray:
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])
    return np.asarray(adapter.encode_group(texts, 32, "symmetric", prompt))


def corpus_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str, *flags: str) -> object:
    data = tmp_path / "data"
    if not data.exists():
        make_graded_beir(data)
        corpus_spec(tmp_path, data)
    return run_ok([str(tmp_path / "corpusset.yaml"), "--data-dir", str(data), "--adapter", "hashing",
                   "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / out), "-q", *flags], capsys)


def test_a_role_prompt_moves_its_role_only_and_equals_a_direct_computation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = corpus_run(tmp_path, capsys, "plain")
    prompted = corpus_run(tmp_path, capsys, "q", "--query-prompt", "compile java null pointer ")
    queries = [text for text, _ in GRADED.values()]
    for run, prompt in ((plain, ""), (prompted, "compile java null pointer ")):
        vectors = np.concatenate([hashing_vectors(DOCS), hashing_vectors(queries, prompt)])
        for metric, value in independent(vectors, 10).items():
            assert run.scores["test"][metric].value == pytest.approx(value, abs=1e-9), metric
    assert plain.scores != prompted.scores  # the prompt reached the queries
    # only the queries were encoded again: the documents' cache entries are the same key
    assert prompted.texts.encoded == len(set(queries))
    recorded = {p.role: (p.text, p.source) for p in prompted.provenance.model.prompts}
    assert recorded == {"query": ("compile java null pointer ", "flag"), "document": ("", "none")}
    assert prompted.provenance.model.query_prompt == "compile java null pointer "
    # a document prompt leaves the queries' entries alone
    documents = corpus_run(tmp_path, capsys, "d", "--document-prompt", "d: ")
    assert documents.texts.encoded == len(set(DOCS))
    again = corpus_run(tmp_path, capsys, "q2", "--query-prompt", "compile java null pointer ")
    assert again.texts.encoded == 0 and again.scores == prompted.scores
    # every cache's info.json was last written by another run: still no model load for a fully cached run
    from specrun.encoders import cached

    opened: list[object] = []
    real = cached.open_executor
    cached.open_executor = lambda *a, **k: opened.append(a) or real(*a, **k)  # type: ignore[assignment]
    try:
        assert corpus_run(tmp_path, capsys, "q3", "--query-prompt", "compile java null pointer ").texts.encoded == 0
    finally:
        cached.open_executor = real  # type: ignore[assignment]
    assert opened == []
    both = corpus_run(tmp_path, capsys, "both", "--prompt", "compile java null pointer ", "--document-prompt", "d: ")
    assert both.texts.encoded == 0  # every vector cached: the settings recorded are still this run's own
    assert (both.provenance.model.prompt, both.provenance.model.query_prompt) == ("compile java null pointer ", None)


def test_the_same_text_in_two_roles_is_two_cache_entries(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A query that is also a document is encoded once per role; in one role, once."""
    data = tmp_path / "data"
    make_graded_beir(data)
    queries = data / "corpusset" / "data" / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    rows[0]["text"] = DOCS[0]  # query c1 is word for word document d0
    queries.write_text("".join(json.dumps(row) + "\n" for row in rows))
    corpus_spec(tmp_path, data)
    results = corpus_run(tmp_path, capsys, "o")
    unique = len(set(DOCS)) + len({row["text"] for row in rows})
    assert results.texts.unique == unique  # not one less: d0 and c1 are two entries
    assert results.texts.encoded == unique
    keys = [json.loads(path.read_text()) for path in (tmp_path / "cache").glob("embeddings/*/key.json")]
    assert sorted(key["role"] for key in keys) == ["document", "query"]


def spec_with(tmp_path: Path, **protocol: object) -> Path:
    spec = load_plain((HERE / "corpus_beir.yaml").read_text(encoding="utf-8"))
    spec["protocols"]["search"].update(protocol)
    spec["splits"]["test"]["fingerprint"] = "sha256:" + "0" * 64
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_a_role_override_for_a_field_that_is_not_a_text_is_one_line(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["validate", str(spec_with(tmp_path, roles={"qrels": "query"}))], capsys)
    line = assert_one_line_error(code, err, contains="protocols.search.roles.qrels")
    assert "not a text field of kind corpus_retrieval" in line and "query, corpus" in line
    code, _, err = run_cli(["validate", str(spec_with(tmp_path, roles={"query": "passage"}))], capsys)
    assert_one_line_error(code, err, contains="roles")


def test_a_spec_override_and_instruction_change_the_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """roles: {query: document} embeds the queries as documents (the document prompt); an instruction reaches
    the queries through the template and is recorded and shown on the card."""
    data = tmp_path / "data"
    make_graded_beir(data)
    corpus_spec(tmp_path, data)
    spec = load_plain((tmp_path / "corpusset.yaml").read_text())
    spec["protocols"]["search"]["roles"] = {"query": "document"}
    spec["protocols"]["search"]["instruction"] = "Find the answer"
    (tmp_path / "corpusset.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    results = corpus_run(tmp_path, capsys, "o", "--document-prompt", "doc: ")  # an instruction reaches no document
    assert {(p.role, p.text, p.source) for p in results.provenance.model.prompts} == {("document", "doc: ", "flag")}
    spec["protocols"]["search"]["roles"] = {}
    (tmp_path / "corpusset.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    instructed = corpus_run(tmp_path, capsys, "i", "--instruction-template", "Instruct: {instruction} Query: ")
    query = next(p for p in instructed.provenance.model.prompts if p.role == "query")
    assert (query.text, query.source, query.instruction) == ("Instruct: Find the answer Query: ", "instruction",
                                                              "Find the answer")
    report = next((tmp_path / "i").rglob("report.md")).read_text()
    assert "Task instruction" in report and "Find the answer" in report
    assert "'Instruct: Find the answer Query: ' (the task instruction in the template)" in report
