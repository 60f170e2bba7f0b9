"""Prompt robustness: several prompt variants of one model scored on the same items in one process (`specrun SPEC
--prompt-set FILE`). MTEB issues #5167 and #5363 ask for it.

A prompt set is YAML, read like a spec (safe loader, lines kept, unknown keys refused):

    variants:
      none: {model_prompts: false}
      e5: {query_prompt: "query: ", document_prompt: "passage: "}
      instructed: {instruction_template: "Instruct: {instruction}\\nQuery: "}

Each variant sets the prompt flags of a run (`prompt`, `prompt_name`, `query_prompt`, `document_prompt`,
`model_prompts`, `instruction_template`; what it leaves out is the flag's default). The model is loaded once, and
each (role, prompt text) is encoded once whichever variants share it. Every variant writes the very folder and
results a separate run with those flags writes; the set adds, per spec, `prompt-set.md` and `prompt-set.json`:
each variant's score and interval per metric, the spread (best minus worst) and its paired bootstrap interval
(the same resamples for both, as `compare` computes it): written by `board.prompt_spread`, a view of several runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import Field, ValidationError

from specrun.core.errors import SpecError, SpecrunError
from specrun.core.options import RunOptions
from specrun.core.settings import PROMPT_FLAGS, EncoderSettings
from specrun.core.types import Strict
from specrun.spec.errors import first_error
from specrun.spec.model import Name
from specrun.yamlsafe import read_yaml


class PromptVariant(Strict):
    """One variant's prompt flags, by the names of their settings."""

    prompt: str | None = None
    prompt_name: str | None = None
    query_prompt: str | None = None
    document_prompt: str | None = None
    model_prompts: bool = True
    instruction_template: str | None = None


class PromptSet(Strict):
    variants: dict[Name, PromptVariant] = Field(min_length=2, description="Variant name -> its prompt flags.")


PROMPT_FIELDS = PROMPT_FLAGS  # PromptVariant's fields (a test keeps them in step)


@dataclass(frozen=True)
class LoadedPromptSet:
    prompt_set: PromptSet
    path: str
    sha256: str

    @property
    def stem(self) -> str:
        return Path(self.path).stem


def load_prompt_set(path: str) -> LoadedPromptSet:
    located = read_yaml(Path(path), path, "the prompt set (--prompt-set)")
    if not isinstance(located.data, dict):
        raise SpecError("expected a mapping with `variants` at the top level", file=path, line=1)
    try:
        prompt_set = PromptSet.model_validate(located.data)
    except ValidationError as exc:
        raise first_error(exc, located, PromptSet) from None
    for name, variant in prompt_set.variants.items():
        if variant.prompt is not None and variant.prompt_name is not None:
            raise located.error(("variants", name, "prompt_name"), "prompt and prompt_name exclude each other")
        template = variant.instruction_template
        if template is not None and "{instruction}" not in template:
            raise located.error(("variants", name, "instruction_template"),
                                "must hold {instruction}, where the task's instruction goes")
    return LoadedPromptSet(prompt_set=prompt_set, path=path, sha256=located.sha256)


def check_flags(settings: EncoderSettings) -> None:
    """A prompt set gives every prompt: a prompt flag beside it would be silently overridden, so it is refused."""
    given = [name for name in PROMPT_FIELDS
             if getattr(settings, name) != type(settings).model_fields[name].default]
    if given:
        flags = ", ".join("--no-model-prompts" if name == "model_prompts" else f"--{name.replace('_', '-')}"
                          for name in given)
        raise SpecrunError(f"--prompt-set gives every variant's prompts; drop {flags} (or make it a variant)")


def variant_settings(base: EncoderSettings, variant: PromptVariant) -> EncoderSettings:
    return base.with_values(**variant.model_dump())


def variants_of(options: RunOptions) -> tuple[LoadedPromptSet | None, dict[str, RunOptions]]:
    """The run's variants: one (named "") without --prompt-set, else one per variant of the set, each the run's
    options with the variant's prompt flags."""
    if not options.prompt_set:
        return None, {"": options}
    prompt_set = load_prompt_set(options.prompt_set)
    check_flags(options.encoder)
    if options.name:
        raise SpecrunError("--name with --prompt-set: each variant writes its own settings' folder; drop --name")
    return prompt_set, {name: replace(options, encoder=variant_settings(options.encoder, variant))
                        for name, variant in prompt_set.prompt_set.variants.items()}
