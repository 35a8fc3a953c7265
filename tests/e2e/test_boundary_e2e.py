"""End to end (issue 20 item 5): nothing in one object's content ends a run, on the real hub.

The issue's own inputs (marks at the ends of time, with their evidence) go through `--delete`
runs and `gcjob explain`; a rule made to raise for one object shows the boundary itself: that
object is kept (`internal-error`), its neighbour is deleted, and the run exits 3, never 70.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob import marks
from gcjob.cli import cli
from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
)
from gcjob.model import Companion, Verdict
from testbed.cluster import TestCluster
from testbed.objects import binding, companion
from testbed.report import HubSweep

REFERRERS = ["default/web-gone"]


def _orphan(hub: TestCluster, ns: str, name: str, since: str | None) -> None:
    notes: dict[str, str] = {}
    if since is not None:
        raw = json.dumps(sorted(REFERRERS))
        notes = {
            ORPHANED_SINCE_ANNOTATION: since,
            ORPHANED_REASON_ANNOTATION: "orphaned",
            ORPHANED_EVIDENCE_ANNOTATION: marks.companion_evidence(raw).digest,
        }
    obj = companion("ConfigMap", ns, name, REFERRERS, annotations=notes)
    if since is not None:
        obj["metadata"]["labels"][ORPHANED_LABEL] = "true"
    created = hub.create(obj)
    uid = created["metadata"]["uid"]
    hub.create(binding(ns, f"{name}-configmap", kind="ConfigMap", target=name, target_uid=uid))


@pytest.mark.parametrize(
    "since", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-23:59"]
)
@pytest.mark.parametrize("grace", ["10m", "0s"])
def test_a_mark_at_the_ends_of_time_never_ends_a_run(
    hub: TestCluster, gcjob_hub_args: list[str], since: str, grace: str, sweep: HubSweep
) -> None:
    ns = hub.namespace("boundary")
    _orphan(hub, ns, "end-of-time", since)

    result = sweep(ns, "--grace", grace, "--delete")

    assert result.exit_code not in (70, 1), result.stderr
    sweeps = result.summary["sweeps"]
    assert all(state["status"] != "not-run" for state in sweeps.values()), sweeps
    item = result.item("ConfigMap", "end-of-time")
    assert item is not None  # accounted for
    if grace != "0s":  # never deleted on a mark it did not write
        assert hub.present("ConfigMap", ns, "end-of-time")
    explained = CliRunner().invoke(
        cli,
        ["explain", f"cm/{ns}/end-of-time", "--hub-kubeconfig", gcjob_hub_args[1]],
        standalone_mode=False,
    )
    assert explained.exception is None or isinstance(explained.exception, SystemExit)
    assert explained.return_value in (0, 3), explained.stderr
    assert "Traceback" not in explained.stderr
    assert len(explained.stderr.strip().splitlines()) <= 1


def test_a_rule_that_raises_for_one_object_keeps_it_and_deletes_its_neighbour(
    hub: TestCluster, sweep: HubSweep, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gcjob.sweeps.companions import judge

    ns = hub.namespace("boundary")
    _orphan(hub, ns, "unlucky", None)
    _orphan(hub, ns, "plain-orphan", None)
    real = judge.companion_verdict

    def decide(companion_: Companion, *args: Any) -> Verdict:
        if companion_.ref.name == "unlucky":
            raise RuntimeError("injected: one object's bad luck")
        return real(companion_, *args)

    monkeypatch.setattr(judge, "companion_verdict", decide)
    result = sweep(ns, "--delete")

    assert result.exit_code == 3, result.stderr
    assert result.outcome("ConfigMap", "unlucky") == ("skipped", "internal-error")
    detail = result.item("ConfigMap", "unlucky")["detail"]  # type: ignore[index]
    assert "RuntimeError: injected: one object's bad luck" in detail
    assert result.outcome("ConfigMap", "plain-orphan") == ("deleted", "orphaned")
    assert hub.present("ConfigMap", ns, "unlucky")
    assert hub.present("ResourceBinding", ns, "unlucky-configmap")
    assert hub.gone("ConfigMap", ns, "plain-orphan")
    assert result.summary["sweeps"]["companions"]["status"] == "incomplete"
    assert result.summary["sweeps"]["bindings"]["status"] == "completed"
