"""The namespaces sweep's batch run: what it counts in its gauge, and that a run refuses to
judge from a snapshot (it lists what a namespace holds through the hub's discovery). Its runs
on the real hub: tests/e2e/test_namespaces_e2e.py."""

from __future__ import annotations

import pytest

from gcjob.reasons import Reason
from gcjob.sweeps.namespaces.sweep import STATES, state_of


def test_a_leftover_that_would_go_is_empty() -> None:
    assert state_of(Reason.PROJECT_GONE, True) == "empty"


@pytest.mark.parametrize(
    ("reason", "state"),
    [(Reason.NAMESPACE_HOLDS, "holding"), (Reason.NAMESPACE_NOT_LISTABLE, "not-listable")],
)
def test_a_leftover_kept_is_holding_or_not_listable(reason: Reason, state: str) -> None:
    assert state_of(reason, False) == state
    assert state in STATES


@pytest.mark.parametrize(
    "reason", [Reason.UPSTREAM_UNAVAILABLE, Reason.TERMINATING, Reason.DELETION_PROTECTED]
)
def test_what_is_not_a_proven_leftover_is_in_no_state(reason: Reason) -> None:
    assert state_of(reason, False) is None
