"""gcjob.sweeps.grace_actions.on_its_way: which outcomes of acting on the grace rule say when
the orphan goes (`would_delete_at`), and which never promise a time (issue 23 item 2)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gcjob.model import Action, Outcome, Sweep
from gcjob.reasons import Reason
from gcjob.sweeps.grace_actions import on_its_way
from testbed.model import NOW, ref

AT = NOW + timedelta(minutes=10)


def _outcome(action: Action, reason: str) -> Outcome:
    return Outcome(Sweep.COMPANIONS, ref("ConfigMap", "app-config"), action, reason, "gone")


@pytest.mark.parametrize(
    "action,reason",
    [
        (Action.WOULD_MARK, Reason.ORPHANED),  # a dry run: enforcing marks it now
        (Action.MARKED, Reason.ORPHANED),
        (Action.WOULD_MARK, Reason.COMPANION_ORPHANED),  # a companion's binding, with it
        (Action.SKIPPED, Reason.GRACE_PERIOD),  # marked, waiting
        (Action.WOULD_DELETE, Reason.ORPHANED),  # a dry run, or a sweep not enforced
    ],
)
def test_an_orphan_left_in_place_on_its_way_says_when_it_goes(action: Action, reason: str) -> None:
    [said] = on_its_way([_outcome(action, reason)], AT)
    assert said.would_delete_at == AT


@pytest.mark.parametrize(
    "action,reason",
    [
        (Action.WOULD_DELETE, Reason.BRAKE),  # the deletion brake held it back
        (Action.WOULD_MARK, Reason.BRAKE),  # the marks or write brake
        (Action.DELETED, Reason.ORPHANED),  # gone: nothing left to go
        (Action.ALREADY_GONE, Reason.ALREADY_GONE),
        (Action.FAILED, Reason.DELETE_FAILED),
        (Action.FAILED, Reason.MARK_FAILED),
        (Action.SKIPPED, Reason.REFERRER_APPEARED),  # kept on a second look
        (Action.SKIPPED, Reason.CHANGED_SINCE_OBSERVED),
        (Action.SKIPPED, Reason.STOPPED),
    ],
)
def test_no_time_is_promised_for_what_was_held_back_failed_kept_or_gone(
    action: Action, reason: str
) -> None:
    [said] = on_its_way([_outcome(action, reason)], AT)
    assert said.would_delete_at is None


def test_no_time_from_the_rule_leaves_every_outcome_as_it_was() -> None:
    outcomes = [_outcome(Action.MARKED, Reason.ORPHANED)]
    assert on_its_way(outcomes, None) == outcomes
