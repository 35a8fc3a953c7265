"""docs/architecture.md and .importlinter describe the same contracts (issue 21 item 4).

`lint-imports` in .ci/run checks the code against .importlinter; this checks that the page
a newcomer reads names every contract there is, and no contract that is gone."""

from __future__ import annotations

import configparser
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "importlinter:contract:"


def _config() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    assert config.read(ROOT / ".importlinter", encoding="utf-8")
    return config


def _contracts() -> set[str]:
    return {s.removeprefix(PREFIX) for s in _config().sections() if s.startswith(PREFIX)}


def test_the_architecture_page_names_exactly_the_contracts_ci_checks() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    table = page.split("## Which contract holds which arrow", 1)[1]
    contracts = _contracts()
    assert {
        "pipeline",
        "sweep-folders",
        "sweeps-over-shared",
        "pure-judgements",
        "independent-sweeps",
    } <= contracts
    named = set(re.findall(r"\| `([a-z-]+)` \(", table))
    assert named == contracts


SWEEPS = ROOT / "gcjob" / "sweeps"
SWEEP_MODULES = {"judge", "scan", "act", "sweep", "explain"}


def _folders() -> set[str]:
    return {p.parent.name for p in SWEEPS.glob("*/__init__.py")}


def _listed(contract: str, key: str) -> list[str]:
    return re.findall(r"gcjob(?:\.[a-z_]+)+", _config()[PREFIX + contract][key])


def test_every_sweep_folder_is_held_independent_of_the_others() -> None:
    # A new sweep folder must join the independence contract.
    listed = _listed("independent-sweeps", "modules")
    assert {m.removeprefix("gcjob.sweeps.") for m in listed} == _folders()


def test_every_sweep_folder_has_the_same_rooms_and_their_order() -> None:
    """judge, scan, act, sweep, explain in each folder; the folder's layers hold them all,
    its judgement is held pure, and it stands on what the sweeps share."""
    folders = _folders()
    assert {"companions", "bindings", "routes"} <= folders
    layers = set(re.findall(r"[a-z_]+", _config()[PREFIX + "sweep-folders"]["layers"]))
    assert layers == SWEEP_MODULES
    containers = _listed("sweep-folders", "containers")
    assert {m.removeprefix("gcjob.sweeps.") for m in containers} == folders
    pure = set(_listed("pure-judgements", "source_modules"))
    for folder in folders:
        modules = {p.stem for p in (SWEEPS / folder).glob("*.py")} - {"__init__"}
        assert modules == SWEEP_MODULES, folder
        assert f"gcjob.sweeps.{folder}.judge" in pure


def test_what_the_sweeps_share_is_placed_below_every_folder() -> None:
    placed = set(_listed("sweeps-over-shared", "layers"))
    shared = {f"gcjob.sweeps.{p.stem}" for p in SWEEPS.glob("*.py")} - {"gcjob.sweeps.__init__"}
    folders = {f"gcjob.sweeps.{folder}" for folder in _folders()}
    assert placed == shared | folders


def test_every_package_and_module_of_gcjob_has_a_layer() -> None:
    layers = _config()[PREFIX + "pipeline"]["layers"]
    placed = set(re.findall(r"gcjob(?:\.[a-z_]+)+", layers))
    tops = {
        f"gcjob.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "gcjob").iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").exists())
    } - {"gcjob.__init__", "gcjob.__main__"}
    # report is placed by its modules: report.explain_output sits above explain, the rest below run
    covered = {".".join(m.split(".")[:2]) for m in placed}
    assert tops <= covered, sorted(tops - covered)


TESTS = ROOT / "tests" / "sweeps"
HOW_TO = "## How to add a sweep"
FOLDER_CONTRACTS = {
    "sweep-folders": "containers",
    "sweeps-over-shared": "layers",
    "independent-sweeps": "modules",
    "explain-is-a-driver": "forbidden_modules",
}


def test_every_registered_sweep_has_all_a_sweep_has() -> None:
    """The registry and the folders are the same sweeps (a folder without its line, or a line
    without its folder, fails); and each registered sweep has its rooms, its declaration in its
    folder's __init__.py, its place in each contract that holds the folders, its tests, its
    README row and its docs/rules.md section (issue 48 item 4)."""
    from gcjob.sweeps import REGISTRY
    from tests.test_docs_sweeps import readme_rows, rules_sections

    names = [r.name.value for r in REGISTRY]
    assert set(names) == _folders()
    rows, sections = readme_rows(), rules_sections()
    for registered in REGISTRY:
        name = registered.name.value
        folder = SWEEPS / name
        modules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
        assert modules == SWEEP_MODULES, name
        package = importlib.import_module(f"gcjob.sweeps.{name}")
        assert package.REGISTERED is registered, name
        for contract, key in FOLDER_CONTRACTS.items():
            assert f"gcjob.sweeps.{name}" in _listed(contract, key), (name, contract)
        assert f"gcjob.sweeps.{name}.judge" in _listed("pure-judgements", "source_modules")
        assert list((TESTS / name).glob("test_*.py")), f"no tests in tests/sweeps/{name}/"
        assert name in rows, f"{name}: no row in the README's sweeps table"
        assert name in sections, f"{name}: no section in docs/rules.md"


def test_how_to_add_a_sweep_is_the_folder_and_the_registry_line() -> None:
    """The page says what the tests hold: the folder (its rooms and its REGISTERED), its line
    in REGISTRY, and names the tests that hold the rest to the registry."""
    page = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    how_to = page.split(HOW_TO, 1)[1].split("\n## ", 1)[0]
    for needed in (
        *(f"`{module}.py`" for module in sorted(SWEEP_MODULES)),
        "`__init__.py`: `REGISTERED`",
        "`sweeps/__init__.py` `REGISTRY`",
        "tests/sweeps/test_registry.py",
        "test_every_registered_sweep_has_all_a_sweep_has",
        *FOLDER_CONTRACTS,
        "pure-judgements",
    ):
        assert needed in how_to, needed
