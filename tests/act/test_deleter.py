"""gcjob/act/deleter.py: dry run, stop requests and the delete rate limit."""

from __future__ import annotations

from gcjob.act.deleter import Deleter
from gcjob.budget import RunBudget
from gcjob.kube.resources import CONFIGMAPS
from gcjob.model import Action, Sweep, Verdict
from testbed.model import ref

VERDICT = Verdict(ref(), True, "orphaned", "gone")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept += seconds
        self.now += seconds


def test_dry_run_never_needs_an_api() -> None:
    outcome = Deleter(None, dry_run=True, budget=RunBudget(None), qps=5).delete(
        Sweep.COMPANIONS, VERDICT, CONFIGMAPS
    )
    assert (outcome.action, outcome.reason) == (Action.WOULD_DELETE, "orphaned")


def test_a_stopped_run_deletes_nothing_and_says_so() -> None:
    budget = RunBudget(None)
    budget.request_stop("deadline")
    outcome = Deleter(None, dry_run=False, budget=budget, qps=0).delete(
        Sweep.COMPANIONS, VERDICT, CONFIGMAPS
    )
    assert (outcome.action, outcome.reason) == (Action.SKIPPED, "stopped")
    assert "deadline" in outcome.detail


def test_the_rate_limit_spaces_deletions() -> None:
    clock = Clock()
    deleter = Deleter(
        None,
        dry_run=True,
        budget=RunBudget(None, clock=clock),
        qps=2,
        clock=clock,
        sleep=clock.sleep,
    )

    for _ in range(5):
        assert deleter.writes.take(send=True) is None

    assert clock.slept == 2.0  # four gaps of 0.5 s


def test_no_rate_limit_never_sleeps() -> None:
    clock = Clock()
    deleter = Deleter(
        None,
        dry_run=True,
        budget=RunBudget(None, clock=clock),
        qps=0,
        clock=clock,
        sleep=clock.sleep,
    )
    for _ in range(5):
        assert deleter.writes.take(send=True) is None
    assert clock.slept == 0.0
