"""The vocabularies of MTEB's TaskMetadata (embeddings-benchmark/mteb, mteb/abstasks/TaskMetadata.py: TASK_DOMAIN,
ANNOTATOR_TYPE, SAMPLE_CREATION_METHOD, eval_langs), so a spec's metadata reads as MTEB's task metadata does. The
bottom of the MTEB package: the spec's own model reads it (architecture test: rank of `spec`), so it imports
nothing of specrun."""

from __future__ import annotations

DOMAINS = ("Academic", "Blog", "Constructed", "Encyclopaedic", "Engineering", "Fiction", "Government", "Legal",
           "Medical", "News", "Non-fiction", "Poetry", "Religious", "Reviews", "Scene", "Social", "Spoken",
           "Subtitles", "Web", "Written", "Programming", "Chemistry", "Financial", "Entertainment")
ANNOTATIONS_CREATORS = ("expert-annotated", "human-annotated", "derived", "LM-generated",
                        "LM-generated and reviewed")
SAMPLE_CREATION = ("found", "created", "human-translated and localized", "human-translated", "machine-translated",
                   "machine-translated and verified", "machine-translated and localized",
                   "LM-generated and verified", "rendered", "multiple")
# ISO 639-3 and ISO 15924, as MTEB's eval_langs; or a programming language as MTEB writes one (python-Code, c++-Code)
LANGUAGE_SCRIPT_PATTERN = r"^([a-z]{3}-[A-Z][a-z]{3}|[a-z][a-z+#]*-Code)$"
LANGUAGE_SCRIPT_MEANING = ("an ISO 639-3 code and an ISO 15924 script, e.g. jpn-Jpan, eng-Latn (or MTEB's code "
                           "language, e.g. python-Code)")

__all__ = ["ANNOTATIONS_CREATORS", "DOMAINS", "LANGUAGE_SCRIPT_MEANING", "LANGUAGE_SCRIPT_PATTERN", "SAMPLE_CREATION"]
