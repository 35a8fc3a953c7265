"""gcjob/sweeps/companions/sweep.py: the batch run over the demo's hub, as the lifecycle runs
it: each companion reported as judged and acted on with its binding, and what the bindings
sweep needs handed on."""

from __future__ import annotations

from datetime import timedelta

from gcjob.model import Sweep
from gcjob.sweeps.companions import sweep as companions
from testbed.runs import snapshot_run


def _key(
    outcomes: dict[tuple[str, str, str], tuple[str, str]], kind: str, name: str
) -> tuple[str, str]:
    found = [v for (k, _, n), v in outcomes.items() if (k, n) == (kind, name)]
    assert len(found) == 1, (kind, name, found)
    return found[0]


def test_orphans_are_marked_with_their_bindings_and_the_rest_kept_with_a_reason() -> None:
    ran = snapshot_run(Sweep.COMPANIONS, grace=timedelta(minutes=10))
    swept = companions.sweep(ran.run)
    outcomes = ran.outcomes()
    assert _key(outcomes, "ConfigMap", "orphan-app-config") == ("would-mark", "orphaned")
    assert _key(outcomes, "ResourceBinding", "orphan-app-config-configmap") == (
        "would-mark",
        "companion-orphaned",
    )
    assert _key(outcomes, "Secret", "orphan-db-creds") == ("would-mark", "orphaned")
    assert _key(outcomes, "ConfigMap", "protected-orphan-config") == ("skipped", "protected")
    assert _key(outcomes, "ConfigMap", "young-orphan-config") == ("skipped", "too-young")
    # A binding that binds another object is not taken with the companion.
    assert _key(outcomes, "ResourceBinding", "mismatched-binding-config-configmap") == (
        "skipped",
        "binding-mismatch",
    )
    # Healthy companions are counted, not itemised.
    assert all(reason != "referrer-live" for _, reason in outcomes.values())
    assert ran.run.reporter.tally.counts["companions"]["skipped"]["referrer-live"] == 4
    state = ran.run.tally.sweeps[Sweep.COMPANIONS]
    assert (state.status, state.scanned, state.in_scope) == ("completed", 21, 21)
    # What the bindings sweep needs: every labelled companion's key, and the bindings reported.
    reported = {i["uid"] for i in ran.items() if i["kind"] == "ResourceBinding"}
    assert swept.bindings_reported == reported and len(reported) == 5
    assert swept.keys is not None and len(swept.keys) == 21


def test_without_a_grace_period_orphans_and_their_bindings_would_be_deleted() -> None:
    ran = snapshot_run(Sweep.COMPANIONS)
    companions.sweep(ran.run)
    outcomes = ran.outcomes()
    assert _key(outcomes, "ConfigMap", "orphan-app-config") == ("would-delete", "orphaned")
    assert _key(outcomes, "ResourceBinding", "orphan-app-config-configmap") == (
        "would-delete",
        "companion-deleted",
    )
    deleted = [o for o in outcomes.values() if o[0] == "would-delete"]
    assert len(deleted) == 9  # five companions, four of their bindings
    assert ran.run.tally.deleted == 5  # a companion and its binding count as one


def test_the_marks_brake_holds_every_new_mark_of_the_sweep() -> None:
    ran = snapshot_run(Sweep.COMPANIONS, grace=timedelta(minutes=10), max_marks=2)
    companions.sweep(ran.run)
    held = [i for i in ran.items() if i["reason"] == "brake"]
    assert {i["action"] for i in held} == {"would-mark"} and len(held) == 5
    assert not [i for i in ran.items() if i["action"] == "would-mark" and i["reason"] != "brake"]
    state = ran.run.tally.sweeps[Sweep.COMPANIONS]
    assert state.status == "braked" and state.detail.startswith(
        "marks brake: 10 new marks of 5 new orphans"  # a companion and its binding, each
    )
