"""gcjob/decide/plan.py: one plan per judgement, which the writers act on and explain says."""

from __future__ import annotations

from datetime import datetime

import pytest

from gcjob.decide.grace import GraceCall, Next
from gcjob.decide.plan import Plan, graced_plan, plan, removal
from gcjob.model import Action, ObjectRef, Verdict
from gcjob.reasons import Reason

REF = ObjectRef("v1", "ConfigMap", "ns", "cm", "uid-1", "1", None)
ORPHAN = Verdict(REF, True, Reason.ORPHANED, "no referrer left")
KEPT = Verdict(REF, False, Reason.REFERRER_LIVE, "WD web exists")
SINCE = datetime(2026, 11, 20, 12, 0)


@pytest.mark.parametrize(
    ("verdict", "step", "expected"),
    [
        (ORPHAN, Next.DELETE, Plan(Next.DELETE, Action.WOULD_DELETE, ORPHAN.reason, ORPHAN.detail)),
        (
            ORPHAN,
            Next.MARK,
            Plan(Next.MARK, Action.WOULD_MARK, ORPHAN.reason, "found orphaned: no referrer left"),
        ),
        (
            ORPHAN,
            Next.WAIT,
            Plan(
                Next.WAIT, Action.SKIPPED, Reason.GRACE_PERIOD, "found orphaned: no referrer left"
            ),
        ),
        (
            KEPT,
            Next.UNMARK,
            Plan(
                Next.UNMARK,
                Action.WOULD_UNMARK,
                KEPT.reason,
                "mark would be removed: WD web exists",
            ),
        ),
        (KEPT, Next.NOTHING, Plan(Next.NOTHING, Action.SKIPPED, KEPT.reason, KEPT.detail)),
        (KEPT, None, Plan(Next.NOTHING, Action.SKIPPED, KEPT.reason, KEPT.detail)),
    ],
)
def test_each_next_step_has_one_plan(verdict: Verdict, step: Next | None, expected: Plan) -> None:
    assert plan(verdict, step, "found orphaned") == expected


def test_a_plan_without_why_says_the_verdicts_detail_alone() -> None:
    assert plan(ORPHAN, Next.MARK).detail == ORPHAN.detail
    assert plan(ORPHAN, Next.WAIT).reason == Reason.GRACE_PERIOD


def test_the_grace_rules_call_is_planned_with_its_own_words() -> None:
    call = GraceCall(Next.WAIT, "orphaned since 2026-11-20T12:00:00Z", SINCE, SINCE)
    assert graced_plan(ORPHAN, call).detail == f"{call.detail}: {ORPHAN.detail}"
    assert graced_plan(ORPHAN, None) == Plan(
        Next.NOTHING, Action.WOULD_DELETE, ORPHAN.reason, ORPHAN.detail
    )


def test_a_removal_says_whether_it_was_made() -> None:
    assert removal("x") == "mark would be removed: x"
    assert removal("x", dry_run=False) == "mark removed: x"
    assert removal("") == "mark would be removed"
