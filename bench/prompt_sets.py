"""The README's prompt-set tables: all-MiniLM-L6-v2 on BIOSSES with docs/prompt-sets/biosses.yaml and on the
corpus-retrieval test fixture (17 documents, 5 graded queries: tests/protocols/corpus_beir.yaml) with
docs/prompt-sets/retrieval.yaml; prints each prompt-set.md table.

    .venv/bin/python bench/prompt_sets.py [--data-dir ../shared/data]"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from specrun.cli import main as specrun
    from tests.protocols.test_corpus_retrieval import corpus_spec, make_graded_beir

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fixture = root / "fixture"
        make_graded_beir(fixture)
        spec = corpus_spec(root, fixture)
        for path, data, prompts in ((ROOT / "specs" / "biosses.yaml", args.data_dir, "biosses.yaml"),
                                    (spec, fixture, "retrieval.yaml")):
            out = root / "out"
            code = specrun([str(path), "-q", "--data-dir", str(data), "--no-cache", "--output", str(out),
                            "--prompt-set", str(ROOT / "docs" / "prompt-sets" / prompts)])
            if code:
                raise SystemExit(code)
            for table in sorted(out.rglob("prompt-set.md")):
                print(table.read_text(encoding="utf-8"))
            for child in sorted(out.rglob("*"), reverse=True):
                child.unlink() if child.is_file() else child.rmdir()


if __name__ == "__main__":
    main()
