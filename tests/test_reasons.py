"""gcjob.reasons: the one list of reason codes, and what is generated from or tested against it
(docs/reasons.md, the report schema's `reason` enum, docs/report.md's reasons table)."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from gcjob.model import Action, Outcome, Sweep, Verdict
from gcjob.reasons import (
    ALL,
    BRAKE_REASONS,
    ERROR_REASONS,
    EXPLAIN,
    MEANINGS,
    REPORT_REASONS,
    SCOPES,
    Reason,
    reasons_page,
)
from gcjob.report.records import Tally, item_record
from testbed.model import NOW, ref
from testbed.schemas import REPORT

ROOT = Path(__file__).parents[1]
CODE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")  # lowercase-hyphenated


def _report_schema() -> dict[str, object]:
    text = resources.files("gcjob.report").joinpath("schema.json").read_text("utf-8")
    schema: dict[str, object] = json.loads(text)
    return schema


def _item_reason_schema() -> dict[str, object]:
    defs = _report_schema()["$defs"]
    assert isinstance(defs, dict)
    reason: dict[str, object] = defs["item"]["properties"]["reason"]
    return reason


REPORT_PAGE = ROOT / "docs" / "report.md"


def _report_page_reasons_table() -> dict[str, set[str]]:
    """docs/report.md's reasons table: sweep (first cell) -> the codes its row names."""
    page = REPORT_PAGE.read_text("utf-8")
    start = page.index("| sweep | reasons |")
    rows: dict[str, set[str]] = {}
    for line in page[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        sweep, cell = (part.strip() for part in line.strip("|").split("|", 1))
        # The codes are the backticked words outside parentheses; inside them is prose
        # (`true`/`false`, a name like `anchor-<uuid>`).
        while (bare := re.sub(r"\([^()]*\)", "", cell)) != cell:
            cell = bare
        rows[sweep] = set(re.findall(r"`([^`]+)`", cell))
    return rows


@pytest.mark.parametrize("reason", list(Reason))
def test_every_reason_is_a_code_with_a_one_line_meaning_and_a_scope(reason: Reason) -> None:
    assert CODE.match(reason.value), reason
    assert reason.meaning.strip() and "\n" not in reason.meaning
    assert reason.sweeps and set(reason.sweeps) <= set(SCOPES)
    # A code any sweep reports is not listed again under one sweep.
    assert ALL not in reason.sweeps or reason.sweeps == (ALL,)


def test_meanings_hold_exactly_the_members() -> None:
    assert set(MEANINGS) == set(Reason)
    assert len({r.value for r in Reason}) == len(Reason)


def test_report_reasons_leave_out_only_explains_own() -> None:
    explain_only = {r for r in Reason if r.sweeps == (EXPLAIN,)}
    assert explain_only == {Reason.NOT_FOUND}
    assert set(REPORT_REASONS) == set(Reason) - explain_only
    assert set(ERROR_REASONS) <= set(REPORT_REASONS)
    assert set(BRAKE_REASONS) <= set(REPORT_REASONS)


def test_docs_reasons_page_is_what_the_code_generates() -> None:
    """Regenerate with `python -m gcjob.reasons > docs/reasons.md`."""
    committed = (ROOT / "docs" / "reasons.md").read_text("utf-8")
    assert committed == reasons_page()


def test_docs_reasons_page_has_one_row_per_reason() -> None:
    page = reasons_page()
    for reason in Reason:
        row = f"| `{reason.value}` | {', '.join(reason.sweeps)} | "
        assert page.count(row) == 1, reason
    assert page.count("\n| `") == len(Reason)


def test_report_schema_reason_enum_is_the_enum() -> None:
    reason = _item_reason_schema()
    assert reason["enum"] == [r.value for r in REPORT_REASONS]
    pattern = reason["pattern"]
    assert isinstance(pattern, str)
    assert all(re.match(pattern, r.value) for r in Reason)


def test_report_schema_refuses_a_reason_not_in_the_enum() -> None:
    verdict = Verdict(ref("ConfigMap"), True, Reason.ORPHANED, "no WorkloadDeployment")
    record = item_record(
        Outcome.of(Sweep.COMPANIONS, verdict, Action.MARKED), "run", NOW, False, NOW
    )
    REPORT.validate(record)
    for unknown in ("orphaned-maybe", Reason.NOT_FOUND.value):
        assert not REPORT.is_valid({**record, "reason": unknown})


def test_records_carry_the_plain_code() -> None:
    """The report's strings are the codes themselves, not the members' repr."""
    verdict = Verdict(ref("ConfigMap"), False, Reason.GRACE_PERIOD, "marked 1m ago")
    outcome = Outcome.of(Sweep.COMPANIONS, verdict, Action.SKIPPED)
    record = item_record(outcome, "run", NOW, False, NOW)
    assert type(record["reason"]) is str
    assert json.loads(json.dumps(record))["reason"] == "grace-period"
    tally = Tally()
    tally.add(outcome)
    assert json.dumps(tally.as_dict()) == '{"companions": {"skipped": {"grace-period": 1}}}'


def test_report_page_reasons_table_names_only_codes_of_the_enum() -> None:
    rows = _report_page_reasons_table()
    assert set(rows) == {ALL, "companions", "bindings", "routes"}
    named = set().union(*rows.values())
    assert named, "docs/report.md's reasons table names no code"
    assert named <= {r.value for r in Reason}, named - {r.value for r in Reason}


def test_report_page_reasons_table_agrees_with_each_codes_sweeps() -> None:
    for sweep, codes in _report_page_reasons_table().items():
        for code in codes:
            sweeps = Reason(code).sweeps
            assert sweep in sweeps or ALL in sweeps, (sweep, code, sweeps)


def test_report_page_points_at_the_reasons_page() -> None:
    page = REPORT_PAGE.read_text("utf-8")
    table = page.index("| sweep | reasons |")
    assert "](reasons.md)" in page[table - 600 : table]
    assert (ROOT / "docs" / "reasons.md").is_file()


# The literals equal to a code that are no reason, and how often each file holds them: an
# action, a sweep's status, explain's action.
NOT_REASONS = {
    ("gcjob/model.py", "already-gone"): 1,  # Action.ALREADY_GONE
    ("gcjob/kube/access.py", "already-gone"): 2,  # DeleteResult.GONE, Patched.GONE
    ("gcjob/run.py", "stopped"): 2,  # a sweep's status
    ("gcjob/sweeps/__init__.py", "stopped"): 1,  # a sweep's status
    ("gcjob/decide/explanation.py", "not-found"): 1,  # explain's action
    ("gcjob/model.py", "terminating"): 1,  # a project's state in the summary's projects
    ("gcjob/lifecycle.py", "backlog"): 1,  # the drain summary's count of it
}


def test_no_reason_is_a_bare_string_outside_the_enum() -> None:
    """Typing makes Verdict, Outcome and Trace.hold take a Reason; this catches the rest (a
    comparison such as `outcome.reason == "brake"`, a set of codes)."""
    codes = {r.value for r in Reason}
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted((ROOT / "gcjob").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name == "gcjob/reasons.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and node.value in codes:
                found[(name, node.value)] += 1
    extra = {at: n for at, n in found.items() if n > NOT_REASONS.get(at, 0)}
    assert not extra, f"a bare reason code (use gcjob.reasons.Reason): {extra}"


def test_explain_schema_reason_enum_is_every_code() -> None:
    text = resources.files("gcjob.report").joinpath("explain.schema.json").read_text("utf-8")
    reason = json.loads(text)["$defs"]["conclusion"]["properties"]["reason"]
    assert reason["enum"] == [r.value for r in Reason]
