"""KubeAccess.patch on a real API server: conditional JSON Patches that write gcjob's marks.

The server applies a JSON Patch all or nothing: a `test` op that fails (the object changed
since it was read) leaves the object untouched and answers 422, which gcjob reads as a safe
skip. These tests make the changes with real concurrent writes, not with a faked answer.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from gcjob import marks
from gcjob.budget import RunBudget
from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    REFERRERS_ANNOTATION,
)
from gcjob.kube import reduce
from gcjob.kube.access import KubeAccess, Patched
from gcjob.kube.connect import hub_client
from gcjob.kube.errors import KubeError
from gcjob.kube.requests import METADATA
from gcjob.kube.resources import CONFIGMAPS, SECRETS, Resource
from gcjob.kube.transport import RequestStats, RetryPolicy, Transport
from gcjob.model import ObjectRef
from testbed import objects
from testbed.cluster import TestCluster
from testbed.faultproxy import Fault, FaultProxy

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
REFERRERS = ["default/web"]


@pytest.fixture
def access(faults: FaultProxy, hub_kubeconfig: str) -> KubeAccess:
    transport = Transport(
        hub_client(hub_kubeconfig, None),
        "hub",
        stats=RequestStats(),
        budget=RunBudget(None),
        retry=RetryPolicy(base_delay=0.01, max_delay=0.05),
    )
    return KubeAccess(transport)


@pytest.fixture
def ns(hub: TestCluster) -> str:
    return hub.namespace("patch")


def observed(hub: TestCluster, resource: Resource, ns: str, name: str) -> ObjectRef:
    obj = hub.get(resource.kind, ns, name)
    assert obj is not None
    return reduce.object_ref(obj, resource)


def bare_configmap(ns: str, name: str) -> dict[str, Any]:
    """No labels, no annotations: the maps a patch adds keys to are absent."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}


def mark_ops(ref: ObjectRef, evidence: marks.Evidence) -> list[dict[str, Any]]:
    return marks.mark_patch(ref, marks.new_mark(evidence, "orphaned", NOW), evidence)


def written_mark(obj: dict[str, Any] | None) -> tuple[str | None, ...]:
    assert obj is not None
    meta = obj["metadata"]
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    return (
        labels.get(ORPHANED_LABEL),
        notes.get(ORPHANED_SINCE_ANNOTATION),
        notes.get(ORPHANED_REASON_ANNOTATION),
        notes.get(ORPHANED_EVIDENCE_ANNOTATION),
    )


def test_a_mark_creates_the_absent_label_and_annotation_maps(
    hub: TestCluster, access: KubeAccess, ns: str
) -> None:
    hub.create(bare_configmap(ns, "bare"))
    ref = observed(hub, CONFIGMAPS, ns, "bare")
    assert not ref.has_labels and not ref.has_annotations
    evidence = marks.binding_evidence("ConfigMap", "bare")
    # No spec.resource on a ConfigMap: guard on nothing but uid/resourceVersion here.
    evidence = marks.Evidence(evidence.rule, evidence.facts)

    result = access.patch(CONFIGMAPS, ns, "bare", mark_ops(ref, evidence))

    assert result.outcome is Patched.APPLIED
    assert written_mark(hub.get("ConfigMap", ns, "bare")) == (
        "true",
        "2026-11-23T10:00:00Z",
        "orphaned",
        evidence.digest,
    )


def test_a_mark_keeps_every_other_label_and_annotation_and_unmark_removes_only_it(
    hub: TestCluster, access: KubeAccess, ns: str
) -> None:
    hub.create(
        objects.companion("ConfigMap", ns, "app", REFERRERS, annotations={"team": "payments"})
    )
    ref = observed(hub, CONFIGMAPS, ns, "app")
    evidence = marks.companion_evidence(json.dumps(REFERRERS))
    assert access.patch(CONFIGMAPS, ns, "app", mark_ops(ref, evidence)).outcome is Patched.APPLIED

    marked = hub.get("ConfigMap", ns, "app")
    assert marked is not None
    assert marked["metadata"]["annotations"]["team"] == "payments"
    assert marked["metadata"]["annotations"][REFERRERS_ANNOTATION] == json.dumps(REFERRERS)
    assert marked["metadata"]["labels"]["compute.datumapis.com/referenced-data"] == "true"
    assert marked["data"] == {"app.conf": "listen 8080"}

    ref = reduce.object_ref(marked, CONFIGMAPS)
    assert ref.mark is not None and ref.mark.evidence == evidence.digest
    assert access.patch(CONFIGMAPS, ns, "app", marks.unmark_patch(ref)).outcome is Patched.APPLIED

    unmarked = hub.get("ConfigMap", ns, "app")
    assert written_mark(unmarked) == (None, None, None, None)
    assert unmarked is not None
    assert unmarked["metadata"]["annotations"]["team"] == "payments"
    assert unmarked["metadata"]["labels"] == {"compute.datumapis.com/referenced-data": "true"}


def test_an_object_written_since_it_was_read_is_a_conflict_and_stays_untouched(
    hub: TestCluster, access: KubeAccess, ns: str
) -> None:
    hub.create(objects.companion("ConfigMap", ns, "busy", REFERRERS))
    ref = observed(hub, CONFIGMAPS, ns, "busy")
    hub.patch("ConfigMap", ns, "busy", {"metadata": {"annotations": {"team": "x"}}})

    result = access.patch(
        CONFIGMAPS, ns, "busy", mark_ops(ref, marks.companion_evidence(json.dumps(REFERRERS)))
    )

    assert result.outcome is Patched.CONFLICT
    # A real server's answer to a failed test names no op (json-patch's error is not passed on)
    assert result.detail.startswith("HTTP 422: ")
    assert written_mark(hub.get("ConfigMap", ns, "busy")) == (None, None, None, None)


def test_changed_evidence_fails_its_own_test_even_at_the_same_resource_version(
    hub: TestCluster, access: KubeAccess, ns: str
) -> None:
    """The referrers annotation is tested by value: a patch built on other evidence is refused
    by the server whatever the resourceVersion says."""
    hub.create(objects.companion("ConfigMap", ns, "moved", ["default/web", "default/api"]))
    ref = observed(hub, CONFIGMAPS, ns, "moved")

    stale = marks.companion_evidence(json.dumps(REFERRERS))  # not what the object holds
    result = access.patch(CONFIGMAPS, ns, "moved", mark_ops(ref, stale))

    assert result.outcome is Patched.CONFLICT
    assert written_mark(hub.get("ConfigMap", ns, "moved")) == (None, None, None, None)


def test_another_uid_under_the_same_name_is_a_conflict(
    hub: TestCluster, access: KubeAccess, ns: str
) -> None:
    hub.create(objects.companion("ConfigMap", ns, "reborn", REFERRERS))
    ref = observed(hub, CONFIGMAPS, ns, "reborn")
    hub.delete("ConfigMap", ns, "reborn")
    hub.create(objects.companion("ConfigMap", ns, "reborn", REFERRERS))

    result = access.patch(
        CONFIGMAPS, ns, "reborn", mark_ops(ref, marks.companion_evidence(json.dumps(REFERRERS)))
    )

    assert result.outcome is Patched.CONFLICT
    assert written_mark(hub.get("ConfigMap", ns, "reborn")) == (None, None, None, None)


def test_a_deleted_object_is_already_gone(hub: TestCluster, access: KubeAccess, ns: str) -> None:
    hub.create(objects.companion("ConfigMap", ns, "gone", REFERRERS))
    ref = observed(hub, CONFIGMAPS, ns, "gone")
    hub.delete("ConfigMap", ns, "gone")

    result = access.patch(
        CONFIGMAPS, ns, "gone", mark_ops(ref, marks.companion_evidence(json.dumps(REFERRERS)))
    )

    assert result.outcome is Patched.GONE


def test_a_secret_is_marked_with_no_payload_received(
    hub: TestCluster, faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    hub.create(objects.companion("Secret", ns, "db-creds", REFERRERS))
    ref = access.get(SECRETS, ns, "db-creds", reduce.ref_of(SECRETS))
    assert ref is not None
    faults.clear_requests()

    evidence = marks.companion_evidence(json.dumps(REFERRERS))
    assert access.patch(SECRETS, ns, "db-creds", mark_ops(ref, evidence)).outcome is (
        Patched.APPLIED
    )

    [patch] = [r for r in faults.requests if r.method == "PATCH"]
    assert patch.accept == METADATA  # no JSON fallback: a server that cannot strip says 406
    assert patch.headers["content-type"] == "application/json-patch+json"
    assert patch.status == 200
    answer = json.loads(patch.response_body)
    assert answer["kind"] == "PartialObjectMetadata"
    assert "data" not in answer
    assert objects.SECRET_VALUE.encode() not in patch.response_body
    # ...and the Secret itself was marked, its payload untouched
    secret = hub.get("Secret", ns, "db-creds")
    assert written_mark(secret)[3] == evidence.digest
    assert secret is not None and secret["data"] == {"password": objects.SECRET_VALUE}


def test_a_patch_applied_whose_answer_was_lost_is_applied_not_a_conflict(
    hub: TestCluster, faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    """The first attempt reaches the server, its answer is lost; the retry then fails its own
    resourceVersion test. Reading it back tells "my earlier attempt" from "someone else"."""
    hub.create(objects.companion("ConfigMap", ns, "lost", REFERRERS))
    ref = observed(hub, CONFIGMAPS, ns, "lost")
    faults.add_fault(Fault(method="PATCH", path="/configmaps/lost$", apply_first=True, drop=True))

    evidence = marks.companion_evidence(json.dumps(REFERRERS))
    result = access.patch(CONFIGMAPS, ns, "lost", mark_ops(ref, evidence))

    assert result.outcome is Patched.APPLIED
    patches = [r for r in faults.requests if r.method == "PATCH"]
    assert [r.status for r in patches] == [None, 422]  # reset, then the failed test
    assert written_mark(hub.get("ConfigMap", ns, "lost"))[3] == evidence.digest


def test_a_lost_answer_and_someone_elses_write_is_a_conflict(
    hub: TestCluster, faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    """Both attempts refused: the read-back finds no mark, so it is not counted as written."""
    hub.create(objects.companion("ConfigMap", ns, "raced", REFERRERS))
    ref = observed(hub, CONFIGMAPS, ns, "raced")
    hub.patch("ConfigMap", ns, "raced", {"metadata": {"annotations": {"team": "x"}}})
    faults.add_fault(Fault(method="PATCH", path="/configmaps/raced$", apply_first=True, drop=True))

    result = access.patch(
        CONFIGMAPS, ns, "raced", mark_ops(ref, marks.companion_evidence(json.dumps(REFERRERS)))
    )

    assert result.outcome is Patched.CONFLICT
    assert written_mark(hub.get("ConfigMap", ns, "raced")) == (None, None, None, None)


def test_any_other_answer_raises(faults: FaultProxy, access: KubeAccess, ns: str) -> None:
    faults.add_fault(Fault(method="PATCH", path="/configmaps/denied$", status=403))
    ref = ObjectRef("v1", "ConfigMap", ns, "denied", "u", "1", None)
    with pytest.raises(KubeError, match="forbidden: grant 'patch'"):
        access.patch(CONFIGMAPS, ns, "denied", marks.unmark_patch(ref))
