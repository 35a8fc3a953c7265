"""Every decision leaves a trace: steps in sweep order, the last one deciding."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gcjob.decide.common import hold_back
from gcjob.decide.trace import StepOutcome, Trace
from gcjob.model import Companion, ObjectRef
from gcjob.sweeps.companions.judge import companion_verdict

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
MIN_AGE = timedelta(minutes=5)


def ref(**kwargs: object) -> ObjectRef:
    fields: dict[str, object] = {
        "api_version": "v1",
        "kind": "ConfigMap",
        "namespace": "ns-a",
        "name": "app-config",
        "uid": "u1",
        "resource_version": "7",
        "created": NOW - timedelta(days=1),
    }
    fields.update(kwargs)
    return ObjectRef(**fields)  # type: ignore[arg-type]


def test_orphan_companion_passes_every_rule_in_sweep_order() -> None:
    trace = Trace()
    verdict = companion_verdict(
        Companion(ref(), '["default/web"]'), frozenset(), NOW, MIN_AGE, trace
    )
    assert verdict.delete
    assert [s.rule for s in trace.steps] == [
        "referrers-readable",
        "referrers-gone",
        "not-owned",
        "not-terminating",
        "pinnable",
        "old-enough",
        "not-protected",
    ]
    assert {s.outcome for s in trace.steps} == {StepOutcome.PASSED}
    assert "WorkloadDeployment web in ns-a not found" in trace.steps[1].evidence


def test_live_referrer_stops_the_trace_at_the_rule_that_held_it() -> None:
    trace = Trace()
    verdict = companion_verdict(
        Companion(ref(), '["default/web"]'), frozenset({"web"}), NOW, MIN_AGE, trace
    )
    assert verdict.reason == "referrer-live"
    assert trace.steps[-1].rule == "referrers-gone"
    assert trace.steps[-1].outcome is StepOutcome.HELD
    assert "WorkloadDeployment web in ns-a exists" in trace.steps[-1].evidence


def test_hold_back_records_the_same_reason_it_returns() -> None:
    trace = Trace()
    held = hold_back(ref(created=NOW - timedelta(seconds=10)), NOW, MIN_AGE, (), trace)
    assert held is not None and held[0] == "too-young"
    assert trace.steps[-1].rule == "old-enough"
    assert trace.steps[-1].evidence == held[1]
