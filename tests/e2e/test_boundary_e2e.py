"""End to end (issue 20 item 5): nothing in one object's content ends a run, on the real hub.

The issue's own inputs (marks at the ends of time, with their evidence) go through `--delete`
runs and `gcjob explain`; a rule made to raise for one object shows the boundary itself: that
object is kept (`internal-error`), its neighbour is deleted, and the run exits 3, never 70.
Generated companions go through whole CLI runs on a snapshot here too: slow for the unit tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gcjob import marks
from gcjob.cli import cli
from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    PROTECT_ANNOTATION,
)
from gcjob.model import Companion, Verdict
from testbed.cluster import TestCluster
from testbed.objects import binding, companion
from testbed.report import HubSweep, sweep_snapshot
from tests.test_boundary import NAMES, with_configmaps
from tests.test_boundary import companions as generated_companions

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


# A snapshot, no server: once, on 1.36 (docs/testing.md).
@pytest.mark.version_independent
@settings(
    # A whole CLI run per example (on a snapshot, no server): costlier than a pure function,
    # so fewer of them, and here with the end-to-end tests rather than the unit tests.
    max_examples=max(10, settings().max_examples // 4),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    objects=st.lists(generated_companions(), min_size=1, max_size=6),
    names=st.lists(NAMES, min_size=6, max_size=6, unique=True),
    grace=st.sampled_from(["0", "1h"]),
)
def test_generated_companions_never_end_a_run(
    tmp_path: Path, objects: list[dict[str, Any]], names: list[str], grace: str
) -> None:
    for obj, name in zip(objects, names, strict=False):
        obj["metadata"]["name"] = f"gen-{name}"
    snapshot = with_configmaps(tmp_path, objects)
    run = sweep_snapshot(snapshot, tmp_path / "r.json", "--grace", grace, "--report-healthy")
    code, report = run.exit_code, run.report
    assert code != 70, report["summary"]["exit_reason"]
    assert all(s["status"] != "not-run" for s in report["summary"]["sweeps"].values())
    # Every generated object is accounted for: one record of its own in the companions sweep.
    for obj in objects:
        meta = obj["metadata"]
        found = [
            i
            for i in report["items"]
            if i["sweep"] == "companions"
            and i["kind"] == "ConfigMap"
            and (i["namespace"], i["name"]) == (meta["namespace"], meta["name"])
        ]
        assert len(found) == 1, (meta, found)
        protect = meta["annotations"].get(
            PROTECT_ANNOTATION, meta["labels"].get(PROTECT_ANNOTATION)
        )
        if protect is not None and protect != "false":
            assert found[0]["action"] not in ("would-delete", "deleted"), found[0]
