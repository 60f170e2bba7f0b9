"""The bottom layer: shared types, contracts, registries, errors, settings and disk state. It imports no stage,
and no stage writes into it except through a registry's checked `register`."""
