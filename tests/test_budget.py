"""gcjob/budget.py: deadlines, stop requests, and sleeps that wake on them."""

from __future__ import annotations

from gcjob.budget import RunBudget


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_no_timeout_never_stops_by_itself() -> None:
    budget = RunBudget(None)
    assert budget.remaining() is None
    assert budget.stop_reason() is None


def test_deadline_passes() -> None:
    clock = Clock()
    budget = RunBudget(10, clock=clock)
    clock.now += 9.5
    assert budget.stop_reason() is None
    assert budget.remaining() == 0.5
    clock.now += 0.5
    assert budget.stop_reason() == "deadline"


def test_first_stop_request_wins() -> None:
    budget = RunBudget(None)
    budget.request_stop("SIGTERM")
    budget.request_stop("SIGINT")
    assert budget.stop_reason() == "SIGTERM"


def test_sleep_sleeps_the_whole_time_when_nothing_happens() -> None:
    clock = Clock()
    RunBudget(None, clock=clock).sleep(2.0, clock.sleep)
    assert clock.now == 1002.0


def test_sleep_wakes_on_a_stop_request() -> None:
    clock = Clock()
    budget = RunBudget(None, clock=clock)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.sleep(seconds)
        if len(slept) == 3:
            budget.request_stop("SIGTERM")

    budget.sleep(30.0, sleep)

    assert len(slept) == 3
    assert clock.now < 1001.0


def test_sleep_never_outlasts_the_deadline() -> None:
    clock = Clock()
    budget = RunBudget(1.0, clock=clock)
    budget.sleep(60.0, clock.sleep)
    assert clock.now <= 1001.0 + RunBudget.TICK
