"""Everything a user chooses that can change a vector, besides the model itself, in one frozen type.

`EncoderSettings` is built from the command line (one flag per field, the flag's destination is the field's
name), handed to the adapter that applies it, keyed in the embedding cache, named in the result folder, recorded
in results.json and named by `compare` and the leaderboard when two runs differ in it. Each field says in its
metadata how those consumers treat it, so a new setting is one field here, its flag, and the adapters that
apply it: nothing else is edited.

The same type describes a run at three moments: as requested (`adapter: auto`, a prompt given by name), as
resolved before any model is loaded (the adapter chosen, the prompt's text: what the cache is keyed by) and as
applied by the adapter (the effective max length and dtype: what results record)."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import Field

from specrun.core.types import Role, Strict

Folder = Literal["value", "digest", "negated", "none"]
PromptSource = Literal["flag", "instruction", "model", "model default", "none"]


def setting(default: Any, description: str, *, keyed: bool = True, folder: Folder = "value",
             identity: bool = True, model_default: bool = False, metavar: str | None = None,
             flag: str | None = None, choices_from: str | None = None) -> Any:
    """A settings field. Its description is its one text: the command line's help says it as written (the
    field's default added where the text states none). keyed: part of the cache key as it is (a prompt is keyed
    through the text each view applies); folder: how a value away from the default names the result folder (its
    value, the first 8 hex digits of its sha256, `no-<name>` for a switch turned off, or not at all);
    identity: whether compare and the leaderboard name it when two runs of one model differ in it;
    model_default: None means the model's own value, which the adapter applies and reports.
    The command line's flag is made from the field (cli.run_flags.add_setting_flags): `--<name>` (or `flag`), its
    description and `metavar`, choices from a Literal type or a registry (`choices_from`), the field's default."""
    return Field(default, description=description, json_schema_extra={
        "keyed": keyed, "folder": folder, "identity": identity, "model_default": model_default,
        "metavar": metavar, "flag": flag, "choices_from": choices_from})


Dtype = Literal["float32", "float16", "bfloat16"]
Precision = Literal["float32", "int8", "uint8", "binary", "ubinary"]


class EncoderSettings(Strict):
    # requested, resolved and applied (module docstring): the adapter is resolved from auto; a prompt given by
    # name is resolved to its text; max_length and dtype are applied as the adapter reports them
    adapter: str = setting(
        "auto", "how to turn the model's output into one vector (auto: sentence-transformers when the model "
                "directory has modules.json, else transformers with mean pooling; hashing: no model, a "
                "deterministic word-hashing embedder for tests and scale checks)", choices_from="adapters")
    prompt: str | None = setting(
        None, "text put before every input of every role (recorded); a role's own flag wins", keyed=False,
        folder="digest", metavar="TEXT")  # keyed through each view's prompt text
    prompt_name: str | None = setting(
        None, "a prompt the sentence-transformers model defines, by name, for every role (recorded with its text)",
        keyed=False, metavar="NAME")
    query_prompt: str | None = setting(
        None, "text put before every query (retrieval, reranking), or name:NAME of the model's prompts, e.g. "
              "'query: ' (default: the model's own query prompt)", keyed=False, folder="digest", metavar="TEXT")
    document_prompt: str | None = setting(
        None, "text put before every document (corpus, candidates, bitext sides), or name:NAME (default: the "
              "model's own document prompt)", keyed=False, folder="digest", metavar="TEXT")
    model_prompts: bool = setting(
        True, "evaluate the model without the prompts its sentence-transformers config declares (its "
              "query/document/task prompts and its default_prompt_name)", keyed=False, folder="negated",
        flag="--no-model-prompts")  # True: the model's declared prompts apply where no flag gives one
    instruction_template: str | None = setting(
        None, "how a protocol's task instruction becomes the prompt of its queries and symmetric texts, e.g. "
              "'Instruct: {instruction}\\nQuery: ' (default: instructions are not used)", keyed=False,
        folder="digest", metavar="TEXT")
    max_length: int | None = setting(
        None, "truncate texts to N tokens, more than the model's special tokens and at most its positions "
              "(default: the model's own limit)", model_default=True, metavar="N")
    dtype: Dtype = setting(
        "float32", "precision the model computes in; vectors are stored as float32; recorded in results and in the "
                   "cache key")
    batch_size: int = setting(
        32, "texts per batch; keyed and recorded, since a vector moves by about 1e-7 with its batch (enough to "
            "swap near-tied cosines)", metavar="N")
    truncate_dim: int | None = setting(
        None, "keep the first N dimensions of each vector (Matryoshka), normalised again when the model "
              "normalises; reuses the full vectors already cached; recorded", keyed=False, metavar="N")
    precision: Precision = setting(
        "float32", "score the vectors as a quantised index holds them (sentence-transformers' quantize_embeddings; "
                   "int8/uint8 calibrated on the spec's own vectors; binary compared by Hamming distance); "
                   "recorded", keyed=False)  # quantised after the cache, which keeps float32
    reranker: str | None = setting(
        None, "rescore each query's top --rerank-top-k documents with this CrossEncoder (a local folder or hub "
              "id), as MTEB's two-stage reranking; corpus_retrieval and reranking kinds; recorded", keyed=False,
        folder="digest", metavar="MODEL")  # its pair scores have their own cache
    rerank_top_k: int = setting(
        100, "documents per query the --reranker rescores; the rest are dropped, as MTEB's convert_to_reranking "
             "keeps its top_k; measures at larger cutoffs see only these", keyed=False, metavar="N")
    trust_remote_code: bool = setting(
        False, "allow a model whose folder ships its own Python code (config auto_map, custom modules) to run that "
               "code; recorded in results and in the cache key (default: refuse)", folder="none", identity=False)

    @classmethod
    def meta(cls, name: str) -> dict[str, Any]:
        extra = cls.model_fields[name].json_schema_extra
        assert isinstance(extra, dict)
        return extra

    @classmethod
    def identity_fields(cls) -> tuple[str, ...]:
        """The settings that tell two runs of one model apart, in field order."""
        return tuple(name for name in cls.model_fields if cls.meta(name)["identity"])

    def cache_fields(self) -> dict[str, Any]:
        """The keyed settings (of the resolved settings): what the embedding cache key is made of."""
        return {name: getattr(self, name) for name in type(self).model_fields if self.meta(name)["keyed"]}

    def folder_parts(self) -> list[str]:
        """`name-value` for each setting given away from its default, in field order (a prompt by its digest)."""
        parts = []
        for name, info in type(self).model_fields.items():
            value, style = getattr(self, name), self.meta(name)["folder"]
            if value == info.default or style == "none":
                continue
            if style == "negated":
                parts.append(f"no-{name.replace('_', '-')}")
                continue
            shown = hashlib.sha256(str(value).encode("utf-8")).hexdigest()[:8] if style == "digest" else value
            parts.append(f"{name.replace('_', '-')}-{shown}")
        return parts

    def agrees_with(self, applied: EncoderSettings) -> bool:
        """Whether settings an adapter reports having applied are these (resolved) ones: every keyed setting
        equal, except where these leave the value to the model."""
        return all(getattr(applied, name) == getattr(self, name) for name in self.cache_fields()
                   if not (self.meta(name)["model_default"] and getattr(self, name) is None))

    def record(self) -> dict[str, Any]:
        """Every setting by name, as results.json and the cache's info.json hold them."""
        return self.model_dump()

    def with_values(self, **values: Any) -> EncoderSettings:
        """The same settings with some resolved or applied (the adapter chosen, the prompt's text, the effective
        max length and dtype)."""
        return self.model_copy(update=values)


class AppliedPrompt(Strict):
    """The prompt one view of a run's texts was embedded with: what results.json records and the report shows."""

    role: Role
    task: str
    instruction: str | None = None
    text: str
    name: str | None = None  # the model's prompt it is, when it came from the model's config
    source: PromptSource


PROMPT_FLAGS = ("prompt", "prompt_name", "query_prompt", "document_prompt", "model_prompts", "instruction_template")
# the settings that choose prompts: what a prompt-set variant sets, and what tells a model's variants apart

DEFAULT_SETTINGS = EncoderSettings()
