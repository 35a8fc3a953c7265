"""testbed/workers.py: under `-n`, a module with servers of its own runs whole on one worker."""

from __future__ import annotations

import ast
from pathlib import Path

from testbed.workers import ONE_WORKER, work_unit

ROOT = Path(__file__).resolve().parents[2]


def _module_scoped(path: Path) -> bool:
    """Whether the module defines a fixture of its own with scope="module"."""
    return any(
        isinstance(node, ast.FunctionDef)
        and any("scope='module'" in ast.unparse(d) for d in node.decorator_list)
        for node in ast.parse(path.read_text("utf-8")).body
    )


def test_every_module_with_fixtures_once_a_module_runs_on_one_worker() -> None:
    """Their fixtures start servers (a pair with the rendered RBAC, the install's three, a
    Milo, a Prometheus): scheduled test by test, each worker that drew one of a module's tests
    started them again (in a measured 1.31 pass, the RBAC pair twice, 96 s and 83 s, and the
    install's twice, 68 s and 33 s)."""
    found = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests" / "e2e").glob("test_*.py")
        if _module_scoped(path)
    }
    assert "tests/e2e/test_rbac_e2e.py" in found  # not vacuous
    assert found == ONE_WORKER


def test_a_module_is_one_unit_and_every_other_test_its_own() -> None:
    rbac = "tests/e2e/test_rbac_e2e.py"
    assert work_unit(f"{rbac}::test_a") == work_unit(f"{rbac}::test_b[hub-x@y]") == rbac
    other = "tests/e2e/test_grace_e2e.py::test_a"
    assert work_unit(other) == other
    assert work_unit("tests/e2e/test_grace_e2e.py::test_b") != work_unit(other)


def test_the_karmada_hubs_tests_are_one_unit_whatever_their_module() -> None:
    """tests/karmada/ starts a Karmada hub on each worker that runs one of its tests: the
    folder is one unit, so it starts once."""
    units = {
        work_unit("tests/karmada/test_karmada_bindings.py::test_a"),
        work_unit("tests/karmada/test_karmada_webhook.py::test_b"),
    }
    assert units == {"tests/karmada/"}
