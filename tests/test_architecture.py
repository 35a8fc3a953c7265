"""docs/architecture.md and .importlinter describe the same contracts (issue 21 item 4).

`lint-imports` in .ci/run checks the code against .importlinter; this checks that the page
a newcomer reads names every contract there is, and no contract that is gone."""

from __future__ import annotations

import configparser
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
    assert {"pipeline", "pure-judgements", "independent-sweeps"} <= contracts
    named = set(re.findall(r"\| `([a-z-]+)` \(", table))
    assert named == contracts


def test_every_sweep_module_is_held_independent_of_the_others() -> None:
    # A new sweep folder must join the independence contract.
    sweeps = {p.parent.name for p in (ROOT / "gcjob" / "sweeps").glob("*/__init__.py")}
    listed = _config()[PREFIX + "independent-sweeps"]["modules"].split()
    assert {m.removeprefix("gcjob.sweeps.") for m in listed} == sweeps


def test_every_package_and_module_of_gcjob_has_a_layer() -> None:
    layers = _config()[PREFIX + "pipeline"]["layers"]
    placed = set(re.findall(r"gcjob(?:\.[a-z_]+)+", layers))
    tops = {
        f"gcjob.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "gcjob").iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").exists())
    } - {"gcjob.__init__", "gcjob.__main__"}
    # report is placed by its modules: report.explain sits above explain, the rest below run
    covered = {".".join(m.split(".")[:2]) for m in placed}
    assert tops <= covered, sorted(tops - covered)
