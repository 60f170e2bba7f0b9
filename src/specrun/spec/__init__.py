"""Spec stage: YAML -> validated, typed benchmark spec, one module per job: `model` (the pydantic model, the
single source of truth, and the JSON Schema made from it), `errors` (pydantic's errors in the spec's own words),
`_references` (checks across keys), `_loading` (read a spec file, write its fingerprints back)."""

from specrun.spec._filters import matches, task_types
from specrun.spec._loading import LoadedSpec, load_spec, subset_specs, write_fingerprints
from specrun.spec._references import reads_repo_copy
from specrun.spec.metadata import Metadata
from specrun.spec.model import (
    NAME_PATTERN,
    FileRef,
    GitSource,
    HubDataset,
    Layout,
    Not,
    Spec,
    Uncertainty,
    json_schema,
    schema_text,
    spec_model,
)

__all__ = ["NAME_PATTERN", "FileRef", "GitSource", "HubDataset", "Layout", "LoadedSpec", "Metadata", "Not", "Spec",
           "Uncertainty", "json_schema", "load_spec", "matches", "reads_repo_copy", "schema_text", "spec_model",
           "subset_specs", "task_types", "write_fingerprints"]
