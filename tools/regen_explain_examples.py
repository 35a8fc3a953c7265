"""Rewrite the `$ gcjob explain ...` example blocks of docs/explain.md with what the current code
prints. tests/test_explain.py fails when they drift; run this, then read the diff.

    .venv/bin/python tools/regen_explain_examples.py
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "explain.md"
# The same pattern tests/test_explain.py reads the blocks with.
EXAMPLE = re.compile(r"```\n\$ gcjob (explain [^\n]*)\n(.*?)\n```", re.S)


def printed(command: str) -> str:
    gcjob = Path(sys.executable).parent / "gcjob"
    done = subprocess.run(
        [str(gcjob), *command.split()], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"gcjob {command}: exit {done.returncode}\n{done.stderr}")
    return done.stdout.rstrip("\n")


def main() -> None:
    text = PAGE.read_text("utf-8")
    new = EXAMPLE.sub(lambda m: f"```\n$ gcjob {m[1]}\n{printed(m[1])}\n```", text)
    PAGE.write_text(new, "utf-8")
    print(f"{PAGE.relative_to(ROOT)}: {'changed' if new != text else 'unchanged'}")


if __name__ == "__main__":
    main()
