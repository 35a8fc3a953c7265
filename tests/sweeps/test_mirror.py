"""Tests mirror the sweep folders: every module of every sweep folder has a test file of its
name (tests/sweeps/<sweep>/test_<module>.py), so a sweep's new room cannot land untested."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_sweep_module_has_its_test_file() -> None:
    sweeps = ROOT / "gcjob" / "sweeps"
    folders = [p for p in sweeps.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert {p.name for p in folders} >= {"companions", "bindings", "routes", "copies"}
    missing = [
        f"tests/sweeps/{folder.name}/test_{module.stem}.py"
        for folder in folders
        for module in folder.glob("*.py")
        if module.name != "__init__.py"
        and not (ROOT / "tests" / "sweeps" / folder.name / f"test_{module.stem}.py").exists()
    ]
    assert not missing, missing
