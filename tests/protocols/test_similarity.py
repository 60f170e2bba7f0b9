"""A protocol's `similarity:` (cosine, dot, euclidean, manhattan, or the model's own similarity_fn_name): each
function equals a direct numpy computation, every kind runs its example under each function it declares, a kind
that does not compare by a function refuses it in one line, `model` reads sentence-transformers' config, and the
function applied is recorded. Cosine specs keep their numbers: tests/test_golden_numbers.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from specrun.core.contracts import RunContext, announced_embed
from specrun.core.errors import ModelError
from specrun.core.plain_yaml import load_plain
from specrun.core.registry import PROTOCOLS
from specrun.core.settings import EncoderSettings
from specrun.encoders.adapters import HashingAdapter
from specrun.encoders.models import ModelRef, declared_similarity
from specrun.search.similarity import SIMILARITIES, similarity_matrix, similarity_rows
from tests.conftest import SPECS, assert_one_line_error, plan_of, run_cli, run_ok
from tests.protocols.test_kind_grid import hashing_embed

RNG = np.random.default_rng(7)


def direct(a: np.ndarray, b: np.ndarray, function: str) -> np.ndarray:
    """The four functions as sentence-transformers defines them (distances negated), written out plainly."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if function == "cosine":
        return (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    if function == "dot":
        return (a * b).sum(axis=1)
    if function == "euclidean":
        return -np.sqrt(((a - b) ** 2).sum(axis=1))
    return -np.abs(a - b).sum(axis=1)


@pytest.mark.parametrize("function", SIMILARITIES)
def test_each_function_equals_a_direct_computation(function: str) -> None:
    a, b = RNG.normal(size=(20, 16)).astype(np.float32), RNG.normal(size=(20, 16)).astype(np.float32)
    assert np.allclose(similarity_rows(a, b, function), direct(a, b, function), rtol=0, atol=1e-11)
    if function != "cosine":
        matrix = similarity_matrix(a, b, function)
        pairs = np.array([[direct(a[i:i + 1], b[j:j + 1], function)[0] for j in range(20)] for i in range(20)])
        assert np.allclose(matrix, pairs, rtol=0, atol=1e-11)


def test_non_finite_vectors_are_refused_by_every_function() -> None:
    a, b = np.ones((2, 4)), np.ones((2, 4))
    a[1, 2] = np.nan
    for function in SIMILARITIES:
        with pytest.raises(Exception, match="non-finite"):
            similarity_rows(a, b, function)


def test_a_zero_vector_is_fine_for_dot_and_distances_not_for_cosine() -> None:
    a, b = np.zeros((1, 4)), np.ones((1, 4))
    assert similarity_rows(a, b, "dot")[0] == 0 and similarity_rows(a, b, "euclidean")[0] == -2
    with pytest.raises(Exception, match="zero embedding"):
        similarity_rows(a, b, "cosine")


KIND_FUNCTIONS = [(kind, function) for kind, entry in PROTOCOLS.items() for function in entry.info.similarities
                  if entry.example() is not None]


@pytest.mark.parametrize(("kind", "function"), KIND_FUNCTIONS)
def test_every_kind_runs_its_example_under_each_function_it_declares(kind: str, function: str) -> None:
    protocol = PROTOCOLS[kind]
    example = protocol.example()
    assert example is not None
    options = protocol.Options.model_validate(dict(example.options))
    items, support = list(example.items), dict(example.support)
    embed = announced_embed(kind, protocol, items, options, support, hashing_embed([]))
    outputs = protocol.run(items, RunContext(embed, support, similarity=function), options)
    assert set(outputs.arrays) == set(protocol.info.outputs)
    assert all(np.all(np.isfinite(values)) for values in outputs.arrays.values())


def test_the_kinds_that_compare_vectors_take_every_function() -> None:
    for kind in ("sts", "conditional_sts", "retrieval", "reranking", "bitext_mining", "summarization",
                 "corpus_retrieval", "pair_classification"):
        assert PROTOCOLS[kind].info.similarities == SIMILARITIES, kind
    for kind in ("classification", "clustering"):
        assert PROTOCOLS[kind].info.similarities == ("cosine",), kind


def biosses_with(tmp_path: Path, similarities: dict[str, str]) -> Path:
    """The BIOSSES spec with one STS protocol (and its Spearman) per name -> similarity."""
    data = load_plain((SPECS / "biosses.yaml").read_text(encoding="utf-8"))
    base = data["protocols"]["zero_shot"]
    data["protocols"] = {name: {**base, "similarity": function} for name, function in similarities.items()}
    data["metrics"] = {f"spearman_{name}": {"metric": "spearman", "protocol": name, "label": f"Spearman {name}",
                                            "direction": "higher", "range": [-1.0, 1.0]}
                       for name in similarities}
    path = tmp_path / "biosses.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def predictions_of(results_path: Path) -> dict[str, dict[str, float]]:
    rows = [json.loads(line) for line in (results_path.parent / "predictions.jsonl").read_text().splitlines()]
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        out.setdefault(row["protocol"], {})[row["id"]] = row["prediction"]
    return out


def test_sts_reports_mteb_variants_as_protocols_equal_to_direct_computations(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """MTEB's euclidean and manhattan STS variants (and dot) are protocols of their own over the same vectors;
    each prediction equals the direct function of the hashing vectors, and each Spearman scipy's."""
    functions = {"zero_shot": "cosine", "by_dot": "dot", "by_euclidean": "euclidean", "by_manhattan": "manhattan",
                 "by_model": "model"}
    spec = biosses_with(tmp_path, functions)
    code, out, err = run_cli([str(spec), "--data-dir", str(data_dir), "--output", str(tmp_path / "out"),
                              "--adapter", "hashing"], capsys)
    assert code == 0, err
    results_path = Path(out.strip().splitlines()[-1])
    results = json.loads(results_path.read_text())
    assert results["provenance"]["similarity"] == {
        name: {"requested": function, "function": "cosine" if function == "model" else function}
        for name, function in functions.items()}  # the hashing adapter reads no model: its similarity is cosine
    from specrun.data import load_split

    items = load_split(plan_of(spec), "test", data_dir).items
    adapter = HashingAdapter(None, EncoderSettings(adapter="hashing"), ["cpu"])  # type: ignore[arg-type]
    left = adapter.encode_group([item.fields["text1"] for item in items], 32)
    right = adapter.encode_group([item.fields["text2"] for item in items], 32)
    gold = np.array([item.fields["gold"] for item in items])
    predictions = predictions_of(results_path)
    for name, function in functions.items():
        expected = direct(left, right, "cosine" if function == "model" else function)
        found = np.array([predictions[name][item.id] for item in items])
        assert np.allclose(found, expected, rtol=0, atol=1e-11), name
        assert results["scores"]["test"][f"spearman_{name}"]["value"] == pytest.approx(
            stats.spearmanr(found, gold).statistic, abs=1e-12)
    assert results["texts"]["unique"] <= 2 * len(items)  # one set of vectors for every function
    report = (results_path.parent / "report.md").read_text()
    assert ("similarity zero_shot cosine; by_dot dot; by_euclidean euclidean; by_manhattan manhattan; by_model "
            "cosine (the model's similarity_fn_name)") in report.replace("\\_", "_")


def test_a_kind_refuses_a_function_it_does_not_compare_by(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = load_plain((SPECS / "banking77.yaml").read_text(encoding="utf-8"))  # classification: cosine only
    name = next(iter(data["protocols"]))
    data["protocols"][name]["similarity"] = "dot"
    path = tmp_path / "probe.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli([str(path), "--adapter", "hashing", "--output", str(tmp_path / "out")], capsys)
    line = assert_one_line_error(code, err, contains="compares vectors by cosine only, not dot")
    assert "similarity" in line and "probe.yaml" in line


def test_an_unknown_similarity_is_a_schema_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = biosses_with(tmp_path, {"zero_shot": "cosine"})
    spec.write_text(spec.read_text().replace("similarity: cosine", "similarity: jaccard"))
    code, _, err = run_cli([str(spec), "--adapter", "hashing", "--output", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="similarity")


def model_folder(tmp_path: Path, config: object | None) -> ModelRef:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    if config is not None:
        (folder / "config_sentence_transformers.json").write_text(json.dumps(config))
    return ModelRef(name="m", path=str(folder), origin="local", revision=None, weights_sha256="0" * 64)


@pytest.mark.parametrize(("config", "expected"), [
    (None, "cosine"), ({}, "cosine"), ({"similarity_fn_name": None}, "cosine"),
    ({"similarity_fn_name": "dot"}, "dot"), ({"similarity_fn_name": "euclidean"}, "euclidean"),
    ({"similarity_fn_name": "manhattan"}, "manhattan")])
def test_model_reads_sentence_transformers_similarity_fn_name(tmp_path: Path, config: object,
                                                              expected: str) -> None:
    """sentence-transformers' SentenceTransformer.similarity_fn_name defaults to cosine when unset."""
    assert declared_similarity(model_folder(tmp_path, config)) == expected
    assert declared_similarity(model_folder(tmp_path, config), reads_model=False) == "cosine"


def test_a_similarity_sentence_transformers_refuses_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="similarity_fn_name 'maxsim' is not one of cosine, dot"):
        declared_similarity(model_folder(tmp_path, {"similarity_fn_name": "maxsim"}))


def dot_model(tmp_path: Path) -> Path:
    """A copy of the bundled model whose sentence-transformers config says similarity_fn_name: dot."""
    from specrun.encoders.models import resolve_model

    folder = tmp_path / "dot-model"
    shutil.copytree(resolve_model(None).path, folder)
    config_path = folder / "config_sentence_transformers.json"
    config = json.loads(config_path.read_text())
    config["similarity_fn_name"] = "dot"
    config_path.write_text(json.dumps(config))
    return folder


def test_model_similarity_a_kind_cannot_take_stops_the_run_before_any_encode(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = load_plain((SPECS / "banking77.yaml").read_text(encoding="utf-8"))  # classification: cosine only
    name = next(iter(data["protocols"]))
    data["protocols"][name]["similarity"] = "model"
    path = tmp_path / "probe.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    code, _, err = run_cli([str(path), "--model", str(dot_model(tmp_path)), "--data-dir", str(data_dir),
                            "--output", str(tmp_path / "out")], capsys)
    assert_one_line_error(code, err, contains="not dot (the model's similarity_fn_name)")
    assert "encoding" not in err and "loaded model" not in err


@pytest.mark.slow
def test_a_model_whose_config_says_dot_is_scored_by_dot(tmp_path: Path, data_dir: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The bundled model with similarity_fn_name: dot, under `similarity: model`: every prediction is the dot
    product of a direct sentence-transformers encode, and the Spearman is scipy's on those."""
    from sentence_transformers import SentenceTransformer

    from specrun.data import load_split

    folder = dot_model(tmp_path)
    spec = biosses_with(tmp_path, {"zero_shot": "model"})
    results = run_ok([str(spec), "--model", str(folder), "--data-dir", str(data_dir), "--output",
                      str(tmp_path / "out"), "--name", "dot"], capsys)
    assert results.provenance.similarity["zero_shot"].function == "dot"
    items = load_split(plan_of(spec), "test", data_dir).items
    model = SentenceTransformer(str(folder), device="cpu")
    assert model.similarity_fn_name == "dot"
    left = model.encode([item.fields["text1"] for item in items], batch_size=32, convert_to_numpy=True)
    right = model.encode([item.fields["text2"] for item in items], batch_size=32, convert_to_numpy=True)
    expected = np.einsum("ij,ij->i", left.astype(np.float64), right.astype(np.float64))
    gold = np.array([item.fields["gold"] for item in items])
    out = tmp_path / "out"
    found = predictions_of(next(out.rglob("results.json")))["zero_shot"]
    assert np.allclose([found[item.id] for item in items], expected, rtol=0, atol=1e-6)
    assert results.scores["test"]["spearman_zero_shot"].value == pytest.approx(
        stats.spearmanr(expected, gold).statistic, abs=1e-9)

    # the model's metadata, against counts done here: parameters from the safetensors header, the dimension
    # from the direct encode, the peak memory measured (the encode ran), the card's front matter
    from tests.encoders.test_metadata import header_count

    meta = results.provenance.model_meta
    assert meta is not None
    assert meta.n_parameters == header_count(folder / "model.safetensors")
    assert meta.embed_dim == left.shape[1]
    assert meta.max_tokens == model.max_seq_length
    assert meta.weights_bytes == (folder / "model.safetensors").stat().st_size
    # a rise of the process's peak: absent when an earlier test of this process had peaked higher, never 0
    assert meta.peak_memory_bytes is None or (meta.peak_memory_bytes > 0 and meta.peak_memory_measure)
    assert meta.license == "apache-2.0" and meta.languages == ["en"] and meta.base_model is None
    assert meta.similarity_fn_name == "dot"
    report = next(out.rglob("report.md")).read_text()
    assert "model metadata: " in report and f"{meta.n_parameters:,} parameters (safetensors headers)" in report

    # every vector cached: nothing is loaded or encoded, so no peak memory; the files' metadata is there still
    again = run_ok([str(spec), "--model", str(folder), "--data-dir", str(data_dir), "--output",
                    str(tmp_path / "again"), "--name", "dot"], capsys)
    cached = again.provenance.model_meta
    assert again.texts.encoded == 0 and cached is not None and cached.peak_memory_bytes is None
    assert cached.model_dump(exclude={"peak_memory_bytes", "peak_memory_measure", "sources"}) == meta.model_dump(
        exclude={"peak_memory_bytes", "peak_memory_measure", "sources"})
    assert again.scores == results.scores

    # leaderboard columns: this model's metadata beside a hashing run's (which reads no model: dimension only)
    run_ok([str(spec), "--adapter", "hashing", "--data-dir", str(data_dir), "--output", str(tmp_path / "h")],
           capsys)
    from specrun.board import build_leaderboard

    build_leaderboard([next(out.rglob("results.json")), next((tmp_path / "h").rglob("results.json"))],
                      tmp_path / "board", title=None, console=None)
    board = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "| parameters | dimension | max tokens | weights |" in board
    assert f"| {meta.n_parameters / 1e6:.1f}M | 384 | 256 | {meta.weights_bytes / 1e6:.1f} MB |" in board
    assert "| — | 64 | — | — |" in board


def test_a_warm_cache_never_serves_another_similaritys_estimate(tmp_path: Path, data_dir: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The similarity is not in the vector cache's key (it changes no vector) but estimates are keyed by their
    exact inputs: the same spec scored by cosine, then by manhattan, through one cache, gives each its own number."""
    cache = tmp_path / "cache"
    scores = {}
    for function in ("cosine", "manhattan", "cosine"):
        folder = tmp_path / function
        folder.mkdir(exist_ok=True)
        spec = biosses_with(folder, {"zero_shot": function})
        results = run_ok([str(spec), "--adapter", "hashing", "--data-dir", str(data_dir), "--cache-dir", str(cache),
                          "--output", str(tmp_path / "out" / function)], capsys)
        value = results.scores["test"]["spearman_zero_shot"].value
        assert scores.setdefault(function, value) == value
    assert scores["cosine"] != scores["manhattan"]


@pytest.mark.parametrize("function", ["dot", "euclidean", "manhattan"])
@pytest.mark.parametrize(("chunk", "depth"), [(7, 5), (64, 64), (3, 1)])
def test_corpus_search_by_each_function_equals_a_direct_sort(function: str, chunk: int, depth: int) -> None:
    """The chunked float64 corpus search ranks as a full scipy/numpy matrix sorted by score, then corpus order
    (ties made on purpose: repeated documents), whatever the chunk size."""
    from scipy.spatial.distance import cdist

    from specrun.search.by_similarity import rank_corpus_by

    rng = np.random.default_rng(3)
    docs = rng.normal(size=(40, 6)).astype(np.float32)
    docs[20:30] = docs[0:10]  # exact ties: the earlier position must come first
    queries = rng.normal(size=(9, 6)).astype(np.float32)
    a, b = queries.astype(np.float64), docs.astype(np.float64)
    full = {"dot": a @ b.T, "euclidean": -cdist(a, b), "manhattan": -cdist(a, b, "cityblock")}[function]
    full = np.round(full, 12)
    ranked_i, ranked_s = rank_corpus_by(function, queries, lambda s, e: docs[s:e], len(docs), depth, chunk)
    for q in range(len(queries)):
        order = sorted(range(len(docs)), key=lambda d: (-full[q, d], d))[:depth]
        assert ranked_i[q].tolist() == order
        assert np.array_equal(ranked_s[q], full[q, order])


def test_corpus_retrieval_with_faiss_is_cosine_only() -> None:
    from specrun.core.errors import SpecrunError

    protocol = PROTOCOLS["corpus_retrieval"]
    example = protocol.example()
    assert example is not None
    options = protocol.Options.model_validate({**example.options, "search": "faiss"})
    items = list(example.items)
    embed = announced_embed("corpus_retrieval", protocol, items, options, {}, hashing_embed([]))
    with pytest.raises(SpecrunError, match="faiss ranks by cosine only"):
        protocol.run(items, RunContext(embed, {}, similarity="dot"), options)
