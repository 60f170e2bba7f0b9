"""Which prompt each view of a text gets, decided before any model is loaded and recorded with the results.

A view (core.types.View) is a role (query, document, symmetric), the task type its protocol declares and the
spec's task instruction. Its prompt is, in this order:

1. `--query-prompt` / `--document-prompt` for their role, then `--prompt` (or `--prompt-name`) for every role;
2. the protocol's instruction through `--instruction-template` (queries and symmetric texts, never documents);
3. the model's own prompts (its `config_sentence_transformers.json`), unless `--no-model-prompts`, looked up as
   MTEB looks them up: `{task}-{role}`, `{task}`, then the role (`query`; `document`, `passage`, `corpus` in the
   order sentence-transformers' `encode_document` documents); a symmetric text with none of those gets the
   model's `default_prompt_name`, as sentence-transformers' `encode` would apply it;
4. none.

The adapter is always handed the text (an empty one included, which stops sentence-transformers from applying a
default of its own), so what is recorded is what was applied.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from specrun.core.errors import ModelError
from specrun.core.settings import AppliedPrompt, EncoderSettings
from specrun.core.types import View

NAMED = "name:"  # --query-prompt name:NAME: a prompt of the model's config, by name
ROLE_KEYS = {"query": ("query",), "document": ("document", "passage", "corpus"), "symmetric": ()}


@dataclass(frozen=True)
class ModelPrompts:
    """What a model folder declares: its prompts by name and its default prompt's name (none without a folder)."""

    prompts: dict[str, str] = field(default_factory=dict)
    default_name: str | None = None

    @classmethod
    def of(cls, path: str | None) -> ModelPrompts:
        """Read from the sentence-transformers config, without torch; a folder without one declares nothing."""
        config = Path(path) / "config_sentence_transformers.json" if path else None
        if config is None or not config.is_file():
            return cls()
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ModelError(f"{config.name} in {path} is not readable JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ModelError(f"{config.name} in {path}: expected a JSON object")
        prompts = data.get("prompts") or {}
        if not isinstance(prompts, dict) or not all(isinstance(k, str) and isinstance(v, str | None)
                                                    for k, v in prompts.items()):
            raise ModelError(f"{config.name} in {path}: `prompts` must map names to texts")
        default = data.get("default_prompt_name")
        prompts = {name: text or "" for name, text in prompts.items()}
        if default is not None and default not in prompts:
            raise ModelError(f"{config.name} in {path}: default_prompt_name {default!r} is not one of its prompts "
                             f"({', '.join(prompts) or 'none'})")
        return cls(prompts=prompts, default_name=default)

    def named(self, name: str, flag: str) -> str:
        if name not in self.prompts:
            raise ModelError(f"{flag} {name}: the model defines "
                             f"{', '.join(sorted(self.prompts)) if self.prompts else 'no prompts'}")
        return self.prompts[name]


def resolve_flags(settings: EncoderSettings, declared: ModelPrompts, has_model: bool) -> EncoderSettings:
    """The prompt flags resolved: --prompt-name's text looked up, every `name:NAME` checked against the model's
    prompts (looked up per view, so its name is recorded), a shell's `\\n` in the template a newline, a template
    without {instruction} refused."""
    if settings.prompt_name is not None and settings.prompt is not None:
        raise ModelError("--prompt and --prompt-name exclude each other")
    named = settings.prompt_name is not None or any(
        (value or "").startswith(NAMED) for value in (settings.query_prompt, settings.document_prompt))
    if named and not has_model:
        raise ModelError("a prompt given by name needs a model folder; pass the prompt's text instead")
    template = settings.instruction_template
    template = template.replace("\\n", "\n") if template is not None else None  # a shell's '\n' is a newline
    if template is not None and "{instruction}" not in template:
        raise ModelError("--instruction-template must hold {instruction}, where the task's instruction goes")

    for value, flag in ((settings.query_prompt, "--query-prompt"), (settings.document_prompt, "--document-prompt")):
        if value and value.startswith(NAMED):  # checked now, looked up per view (so its name is recorded)
            declared.named(value.removeprefix(NAMED), flag)
    prompt = declared.named(settings.prompt_name, "--prompt-name") if settings.prompt_name else settings.prompt
    return settings.with_values(prompt=prompt, instruction_template=template)


def applied_prompt(view: View, settings: EncoderSettings, declared: ModelPrompts) -> AppliedPrompt:
    """The prompt of one view, from settings as `resolve_flags` gives them (the order in the module docstring)."""
    base = {"role": view.role, "task": view.task, "instruction": view.instruction}
    own = {"query": settings.query_prompt, "document": settings.document_prompt}.get(view.role)
    if own is not None and own.startswith(NAMED):
        name = own.removeprefix(NAMED)
        return AppliedPrompt(**base, text=declared.prompts[name], source="flag", name=name)
    for given, name in ((own, None), (settings.prompt, settings.prompt_name)):
        if given is not None:
            return AppliedPrompt(**base, text=given, source="flag", name=name)
    if view.instruction and settings.instruction_template and view.role != "document":
        return AppliedPrompt(**base, text=settings.instruction_template.replace("{instruction}", view.instruction),
                             source="instruction")
    if settings.model_prompts:
        role_keys = ROLE_KEYS[view.role]
        keys = [f"{view.task}-{key}" for key in role_keys[:1]] + [view.task] + list(role_keys)
        for key in keys:
            if key and key in declared.prompts:
                return AppliedPrompt(**base, text=declared.prompts[key], name=key, source="model")
        if view.role == "symmetric" and declared.default_name is not None:
            return AppliedPrompt(**base, text=declared.prompts[declared.default_name], name=declared.default_name,
                                 source="model default")
    return AppliedPrompt(**base, text="", source="none")
