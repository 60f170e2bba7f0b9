"""The bottom layer: shared types, contracts, registries, errors, settings and disk state. It imports no stage,
and no stage writes into it except through a registry's checked `register`."""

# the package is its modules, each imported by its own name (nothing is re-exported here)
__all__ = ["contracts", "corpus", "derived", "errors", "fields", "files", "mapping", "markdown", "network",
           "options", "recent", "registry", "settings", "types", "workspace"]
