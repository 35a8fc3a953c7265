"""docs/testing.md's table of the end-to-end tests that run once (on 1.36, not again on 1.31)
is exactly the tests marked `version_independent`, and CI's 1.31 pass leaves out those and
nothing else."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
E2E = ROOT / "tests" / "e2e"
MARK = "pytest.mark.version_independent"


def _marked(path: Path) -> set[str]:
    """`tests/e2e/FILE.py` when the module carries the mark, else each marked test's id."""
    tree = ast.parse(path.read_text("utf-8"))
    module = path.relative_to(ROOT).as_posix()
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        named = any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        if named and MARK in ast.unparse(node.value):
            return {module}
    return {
        f"{module}::{node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d) == MARK for d in node.decorator_list)
    }


def test_the_table_of_tests_run_once_is_the_marked_tests() -> None:
    marked = set().union(*(_marked(p) for p in sorted(E2E.glob("test_*.py"))))
    text = (ROOT / "docs" / "testing.md").read_text("utf-8")
    table = text.split("| marked `version_independent` |", 1)[1].split("\n\n", 1)[0]
    listed = set(re.findall(r"^\| `(tests/[^`]+)` \|", table, re.M))
    assert marked, "no test is marked: the table is not vacuous"
    assert listed == marked


def test_no_unit_test_carries_the_mark() -> None:
    """The mark means "run once, on 1.36": only the 1.31 pass (tests/e2e) reads it."""
    for path in (ROOT / "tests").rglob("test_*.py"):
        if E2E not in path.parents and path != Path(__file__):
            assert MARK not in path.read_text("utf-8"), path


def test_ci_runs_the_end_to_end_tests_on_1_31_but_the_marked() -> None:
    lines = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    runs = [line for line in lines if "GCJOB_KUBE_VERSION=1.31" in line]
    assert len(runs) == 1, runs
    command = runs[0].split(" && ", 1)[1]
    expected = "GCJOB_KUBE_VERSION=1.31 .venv/bin/pytest -q -n 4 -m 'not version_independent'"
    assert command == f"{expected} tests/e2e"


def test_ci_keeps_mypys_cache_outside_the_clone() -> None:
    """A clean clone's mypy ran cold, 67 s of CI; with the machine's cache, 3 s (mypy checks
    each file against the cache by its hash when its path or time differs)."""
    lines = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    runs = [line for line in lines if line.endswith(".venv/bin/mypy")]
    assert runs == ['MYPY_CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/gcjob/mypy" .venv/bin/mypy']
