"""`python -m specrun.spec`: print the spec's JSON Schema (what `make schema` writes)."""

import sys

from specrun.spec.model import schema_text

sys.stdout.write(schema_text())
