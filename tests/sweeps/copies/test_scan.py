"""gcjob/sweeps/copies/scan.py, against a real hub: which kinds it sweeps (the one table of
kinds, intersected with the hub's discovery), and each kind's metadata-only scan of the
objects carrying NSO's labels."""

from __future__ import annotations

import uuid

from gcjob.budget import RunBudget
from gcjob.domain import REPLICATED_KINDS, kind_name
from gcjob.enumerate.scope import Scope
from gcjob.kube.access import Collected, KubeAccess
from gcjob.kube.transport import RequestStats
from gcjob.lifecycle import open_sources
from gcjob.model import Replica
from gcjob.settings import Settings
from gcjob.sweeps.copies.scan import hub_kinds, scan_kind
from testbed.cluster import TestCluster
from testbed.milo import CONNECTORS, NET, copy, labels
from tests.e2e.test_copies_e2e import served  # noqa: F401  (fixture: the CRDs)


def _access(kubeconfig: str) -> KubeAccess:
    sources = open_sources(Settings(hub_kubeconfig=kubeconfig), RunBudget(None), RequestStats())
    assert sources.access is not None
    return sources.access


def test_the_kinds_swept_are_the_tables_that_the_hub_serves(
    hub: TestCluster,
    hub_kubeconfig: str,
    served: None,  # noqa: F811
) -> None:
    kinds = hub_kinds(_access(hub_kubeconfig), dropped=[kind_name(NET, "HTTPProxy")])
    swept = {r.kind for r in kinds.swept}
    assert {"ConfigMap", "Secret", "Gateway", "Connector"} <= swept
    # Dropped by the flag, or the routes sweep's: read only for the anchors they name.
    assert {r.kind for r in kinds.owners_only} == {"HTTPProxy", "HTTPRoute"}
    # Every kind of the table is swept, read for its anchors, or said not served, once.
    said = {name for name, _ in kinds.not_served}
    named = {kind_name(r.group, r.kind) for r in (*kinds.swept, *kinds.owners_only)}
    assert said | named >= {kind_name(g, k) for g, k in REPLICATED_KINDS}
    assert not said & named
    assert kind_name("gateway.envoyproxy.io", "Backend") in said  # no such CRD on this hub


def test_a_kinds_scan_takes_only_what_carries_the_upstream_labels(
    hub: TestCluster,
    hub_kubeconfig: str,
    served: None,  # noqa: F811
) -> None:
    ns = hub.namespace("copies-scan")
    project = f"p-{uuid.uuid4().hex[:8]}"
    found = labels(project, NET, "Connector", "app", "web")
    copy(hub, ns, CONNECTORS, f"{NET}/v1alpha1", "Connector", "web", found, None)
    copy(hub, ns, CONNECTORS, f"{NET}/v1alpha1", "Connector", "local", {}, None)
    access = _access(hub_kubeconfig)
    connectors = next(r for r in hub_kinds(access, []).swept if r.kind == "Connector")
    sinks: list[Collected[Replica]] = scan_kind(access, connectors, Scope((ns,)), Collected)
    replicas = [r for sink in sinks for r in sink.records]
    assert [r.ref.name for r in replicas] == ["web"]
    (web,) = replicas
    assert web.group == NET and web.ref.kind == "Connector" and web.ref.uid
    assert web.labels == found  # only the labels the copy rule reads
