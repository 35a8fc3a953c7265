"""gcjob/kube/transport.py over real HTTP (the real hub behind the fault proxy): retries,
backoff, deadlines."""

from __future__ import annotations

import pytest

from gcjob.budget import RunBudget
from gcjob.kube import requests
from gcjob.kube.connect import hub_client
from gcjob.kube.errors import Stopped, Unavailable
from gcjob.kube.resources import CONFIGMAPS
from gcjob.kube.transport import RequestStats, RetryPolicy, Timeouts, Transport
from tests.e2e.faultproxy import Fault, FaultProxy

LIST = requests.list_page(
    CONFIGMAPS,
    namespace=None,
    label_selector=None,
    limit=10,
    continue_token=None,
    metadata_only=True,
)


@pytest.fixture
def kubeconfig(faults: FaultProxy, hub_kubeconfig: str) -> str:
    return hub_kubeconfig


class Clock:
    """Fake time shared by the budget and the sleeps, so backoffs cost nothing."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def make(kubeconfig: str, *, budget: RunBudget | None = None, attempts: int = 5):
    clock = Clock()
    stats = RequestStats()
    transport = Transport(
        hub_client(kubeconfig, None),
        "hub",
        stats=stats,
        budget=budget or RunBudget(None, clock=clock),
        timeouts=Timeouts(1.0, 1.0),
        retry=RetryPolicy(attempts=attempts),
        sleep=clock.sleep,
    )
    return transport, clock, stats


def test_transient_errors_are_retried_with_growing_backoff(
    faults: FaultProxy, kubeconfig: str
) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=503, times=2))
    transport, clock, stats = make(kubeconfig)

    response = transport.send(LIST)

    assert response.status == 200
    assert stats.by_target["hub"] == 3
    # Two backoffs with jitter: 0.125-0.25 s, then 0.25-0.5 s.
    assert 0.375 <= sum(clock.slept) <= 0.75


def test_retry_after_is_honoured(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(
        Fault(method="GET", path="/api/v1/configmaps$", status=429, headers={"Retry-After": "3"})
    )
    transport, clock, _ = make(kubeconfig)

    assert transport.send(LIST).status == 200
    assert sum(clock.slept) == pytest.approx(3.0)


def test_retries_are_bounded(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=500, times=None))
    transport, _, stats = make(kubeconfig, attempts=3)

    with pytest.raises(Unavailable, match="after 3 attempts: HTTP 500"):
        transport.send(LIST)
    assert stats.total == 3


def test_forbidden_is_answered_not_retried(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=403, times=None))
    transport, clock, stats = make(kubeconfig)

    assert transport.send(LIST).status == 403
    assert stats.total == 1 and clock.slept == []


def test_a_dropped_connection_is_resent_and_says_so(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", drop=True))
    transport, _, stats = make(kubeconfig)

    response = transport.send(LIST)

    assert response.status == 200
    assert response.resent_after_maybe_applied is True
    assert stats.total == 2


def test_no_request_after_the_deadline(faults: FaultProxy, kubeconfig: str) -> None:
    now = [100.0]
    budget = RunBudget(5.0, clock=lambda: now[0])
    now[0] = 106.0
    transport, _, stats = make(kubeconfig, budget=budget)

    with pytest.raises(Stopped, match="deadline"):
        transport.send(LIST)
    assert stats.total == 0


def test_a_stop_request_ends_retrying(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=503, times=None))
    budget = RunBudget(None)
    transport, _, stats = make(kubeconfig, budget=budget)
    transport._sleep = lambda _seconds: budget.request_stop("SIGTERM")

    with pytest.raises(Stopped, match="SIGTERM"):
        transport.send(LIST)
    assert stats.total == 1
