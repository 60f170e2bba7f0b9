"""Encoder stage: resolve a model (`models`), choose and build an adapter from the run's settings (`adapters`,
`devices`), embed unique texts in canonical batches (`batching`) in this process or on Ray actors (`executors`),
and keep the vectors in a verified, memory-mapped store (`store`) behind the cached encoder the later stages call
(`cached`). A new adapter is one class plus one registration in `adapters` (or a plugin's entry point)."""

# the package is its modules, each imported by its own name (nothing is re-exported here)
__all__ = ["adapters", "batch_threads", "batching", "cached", "corpus_encoding", "devices", "executors", "metadata",
           "models", "prompts", "ray_map", "reranker", "session", "shards", "store",
           "vectors"]
