"""Older specs stay valid: reader options that specs written before `options:` gave at a source's top level (or
its mirror's) are moved under `options` before the model validates them; the loader says where."""

from __future__ import annotations

from typing import Any

# Reader options that specs written before `options:` gave at a source's top level (or its mirror's).
TOP_LEVEL_READER_OPTIONS = ("quoting", "names", "optional_names", "extra_fields")


def move_reader_options(data: Any, moved: list[tuple[str, ...]] | None = None) -> Any:
    """A spec's reader options given at a source's top level, moved under its `options` (a copy: `data` is not
    changed), each moved key's path appended to `moved` for the deprecation line. A key given in both places
    stays where it is and is refused as unknown there."""
    if not isinstance(data, dict) or not isinstance(data.get("sources"), dict):
        return data
    sources = dict(data["sources"])
    for name, source in sources.items():
        if not isinstance(source, dict):
            continue
        if source.get("type") == "git_file":
            sources[name] = _moved(source, ("sources", name), moved)
        elif isinstance(source.get("mirror"), dict):
            sources[name] = {**source, "mirror": _moved(source["mirror"], ("sources", name, "mirror"), moved)}
    return {**data, "sources": sources}


def _moved(layout: dict[str, Any], path: tuple[str, ...], moved: list[tuple[str, ...]] | None) -> dict[str, Any]:
    options = layout.get("options", {})
    if not isinstance(options, dict):
        return layout
    out, options = dict(layout), dict(options)
    for key in TOP_LEVEL_READER_OPTIONS:
        if key in out and key not in options:
            options[key] = out.pop(key)
            if moved is not None:
                moved.append((*path, key))
    if options:
        out["options"] = options
    return out


__all__ = ["TOP_LEVEL_READER_OPTIONS", "move_reader_options"]
