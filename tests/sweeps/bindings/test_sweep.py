"""gcjob/sweeps/bindings/sweep.py: the batch run over the demo's hub, after the companions
sweep (whose keys and reported bindings it takes), and on its own (every candidate then
confirmed by a read of its object)."""

from __future__ import annotations

from datetime import timedelta

from gcjob.enumerate.keyset import KeySet
from gcjob.model import Sweep
from gcjob.sweeps.bindings import sweep as bindings
from gcjob.sweeps.companions import sweep as companions
from testbed.runs import SnapshotRun, snapshot_run

ORPHANS = {
    "gone-config-configmap": ("would-mark", "orphaned"),
    "gone-creds-secret": ("would-mark", "orphaned"),
    "terminating-gone-config-configmap": ("skipped", "terminating"),
    "young-gone-config-configmap": ("skipped", "too-young"),
}


def _bindings_sweep_items(ran: SnapshotRun) -> dict[str, tuple[str, str]]:
    items = ran.items()
    return {i["name"]: (i["action"], i["reason"]) for i in items if i["sweep"] == "bindings"}


def test_after_the_companions_sweep_only_bindings_of_missing_objects_are_reported() -> None:
    ran = snapshot_run(Sweep.COMPANIONS, Sweep.BINDINGS, grace=timedelta(minutes=10))
    swept = companions.sweep(ran.run)
    assert swept.keys is not None
    bindings.sweep(ran.run, swept.keys, swept.bindings_reported)
    assert _bindings_sweep_items(ran) == ORPHANS
    # Not one binding the companions sweep reported is reported again.
    reported = [i["uid"] for i in ran.items() if i["kind"] == "ResourceBinding"]
    assert len(reported) == len(set(reported))
    state = ran.run.tally.sweeps[Sweep.BINDINGS]
    assert (state.status, state.scanned, state.in_scope) == ("completed", 20, 11)
    assert ran.run.reporter.tally.counts["bindings"]["skipped"]["object-exists"] == 7


def test_without_the_companions_keys_each_candidate_is_confirmed_by_its_own_read() -> None:
    """No labelled companion known (their list failed): a binding's object is read by name,
    labelled or not, and only a NotFound makes it an orphan. The verdicts are the same."""
    ran = snapshot_run(Sweep.BINDINGS, grace=timedelta(minutes=10))
    bindings.sweep(ran.run, KeySet().freeze(), frozenset())
    found = _bindings_sweep_items(ran)
    assert {name: found[name] for name in ORPHANS} == ORPHANS
    # The companions' bindings are this sweep's now: kept while their object exists.
    assert all(reason != "orphaned" for name, (_, reason) in found.items() if name not in ORPHANS)
    assert ran.run.tally.sweeps[Sweep.BINDINGS].status == "completed"


def test_without_a_grace_period_the_orphaned_bindings_would_be_deleted() -> None:
    ran = snapshot_run(Sweep.COMPANIONS, Sweep.BINDINGS)
    swept = companions.sweep(ran.run)
    assert swept.keys is not None
    bindings.sweep(ran.run, swept.keys, swept.bindings_reported)
    found = _bindings_sweep_items(ran)
    assert found["gone-config-configmap"] == ("would-delete", "orphaned")
    assert found["gone-creds-secret"] == ("would-delete", "orphaned")
