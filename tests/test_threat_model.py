"""docs/threat-model.md names the tests that hold each promise: every one it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "threat-model.md"


def named_tests() -> list[tuple[str, str | None]]:
    """(file, test or None) for every `tests/...py` and `::test_...` the page names; a bare
    `::test` belongs to the file named before it in the same table cell."""
    found: list[tuple[str, str | None]] = []
    for line in DOC.read_text("utf-8").splitlines():
        for cell in line.split(" | "):
            current: str | None = None
            for match in re.finditer(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`", cell):
                path, test = match.groups()
                if path:
                    current = path
                if current is None or (path is None and test is None):
                    continue
                found.append((current, test))
    return found


def test_every_test_the_threat_model_names_exists() -> None:
    named = named_tests()
    assert len(named) > 50
    missing = []
    for path, test in named:
        source = ROOT / path
        if not source.is_file():
            missing.append(path)
        elif test is not None and not re.search(
            rf"^(async )?def {test}\(", source.read_text("utf-8"), re.M
        ):
            missing.append(f"{path}::{test}")
    assert missing == []
