"""specrun: evaluate sentence-embedding models on benchmarks declared in YAML."""

__version__ = "0.1.0"
