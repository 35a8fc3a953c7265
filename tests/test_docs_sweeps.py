"""The README's sweeps table says in one line each what docs/rules.md says in full: the same
sweeps in the same order, and each row names every rule by which its sweep finds an orphan, by
the reason code the rule reports (gcjob/reasons.py), which docs/rules.md names in that sweep's
section too. A rule added to a sweep (the routes sweep's owner-gone) and left out of the README
fails here."""

from __future__ import annotations

import re

from gcjob.model import Sweep
from gcjob.reasons import Reason
from tests.test_docs import DOCS, README

RULES = DOCS / "rules.md"
CODE = re.compile(r"`([a-z0-9-]+)`")


def orphan_reasons(sweep: Sweep) -> set[str]:
    """The reasons by which `sweep` finds an orphan: `orphaned`, or one whose meaning ends in
    "an orphan" (the routes and copies sweeps say which rule found it)."""
    return {
        r.value
        for r in Reason
        if sweep.value in r.sweeps and (r is Reason.ORPHANED or r.meaning.endswith("an orphan"))
    }


def readme_rows() -> dict[str, str]:
    """The README's sweeps table: each sweep's row, whole."""
    text = README.read_text("utf-8")
    table = text[text.index("| sweep | deletes | when |") :].split("\n\n")[0]
    rows = {}
    for line in table.splitlines()[2:]:
        name = re.match(r"\| `([a-z]+)` \|", line)
        assert name is not None, f"a row of the README's sweeps table names no sweep: {line}"
        rows[name[1]] = line
    return rows


def rules_sections() -> dict[str, str]:
    """docs/rules.md's `## Sweep N: ...` sections, by the sweep each is about: the name in
    backticks in its heading, else its heading's name."""
    parts = re.split(r"^## ", RULES.read_text("utf-8"), flags=re.M)
    sections = {}
    for part in parts:
        heading = re.match(r"Sweep (\d+): ([^\n]+)", part)
        if heading is None:
            continue
        named = CODE.search(heading[2])
        sections[named[1] if named else heading[2].strip()] = part
    return sections


def test_the_readme_and_the_rules_list_the_sweeps_in_their_order() -> None:
    sweeps = [s.value for s in Sweep]
    assert list(readme_rows()) == sweeps
    assert list(rules_sections()) == sweeps


def test_each_readme_row_names_every_orphan_rule_of_its_sweep_and_no_other() -> None:
    rows = readme_rows()
    sections = rules_sections()
    for sweep in Sweep:
        expected = orphan_reasons(sweep)
        assert expected, f"{sweep.value}: no orphan reason found in gcjob/reasons.py"
        in_row = {c for c in CODE.findall(rows[sweep.value]) if c in set(Reason)}
        assert in_row == expected, f"README's {sweep.value} row names {in_row}, not {expected}"
        in_rules = set(CODE.findall(sections[sweep.value]))
        assert expected <= in_rules, f"docs/rules.md's {sweep.value} lacks {expected - in_rules}"


def test_the_routes_row_names_the_owner_gone_rule() -> None:
    """The drift that made this file: the row left out the rule that came last."""
    assert "`owner-gone`" in readme_rows()["routes"]
    assert Reason.OWNER_GONE.value in orphan_reasons(Sweep.ROUTES)
