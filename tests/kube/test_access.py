"""gcjob/kube/access.py over real HTTP: folding pages, proving absence, pinned deletes."""

from __future__ import annotations

import gc
import json
import threading
import time
import weakref

import pytest

from gcjob.budget import RunBudget
from gcjob.domain import COMPANION_LABEL, REFERRERS_ANNOTATION, VALUE_NOT_KEPT
from gcjob.kube import access as access_module
from gcjob.kube import discovery, reduce
from gcjob.kube.access import DeleteResult, KubeAccess, ReadBudget, ReadLimits
from gcjob.kube.connect import hub_client
from gcjob.kube.errors import ApiError, KubeError
from gcjob.kube.resources import CONFIGMAPS, GATEWAYS, RESOURCEBINDINGS, SECRETS
from gcjob.kube.transport import RequestStats, Transport
from testbed.cluster import TestCluster
from testbed.faultproxy import Fault, FaultProxy, Served, hostile_list

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture
def ns(hub: TestCluster) -> str:
    """A namespace holding ConfigMaps cm-0 .. cm-6."""
    name = hub.namespace("access")
    for i in range(7):
        hub.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i}", "namespace": name},
            }
        )
    return name


@pytest.fixture
def access(faults: FaultProxy, hub_kubeconfig: str) -> KubeAccess:
    transport = Transport(
        hub_client(hub_kubeconfig, None), "hub", stats=RequestStats(), budget=RunBudget(None)
    )
    return KubeAccess(transport, page_size=2)


class Counting:
    started = 0

    def __init__(self) -> None:
        Counting.started += 1
        self.names: list[str] = []

    def add(self, name: str) -> None:
        self.names.append(name)


def test_fold_restarts_into_a_fresh_sink_on_an_expired_continue_token(
    faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    faults.add_fault(
        Fault(
            method="GET", path=f"/namespaces/{ns}/configmaps$", status=410, query={"continue": "*"}
        )
    )
    Counting.started = 0

    sink = access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=ns)

    assert Counting.started == 2  # the partial pages went with the first sink
    assert sink.names == [f"cm-{i}" for i in range(7)]


class WaitsForTheNextPage:
    """A sink whose first record waits (5 s at most) until the proxy has been asked for a
    page after the first: whether that page was asked for while this one was decoded."""

    def __init__(self, faults: FaultProxy) -> None:
        self.faults = faults
        self.names: list[str] = []
        self.asked_ahead: bool | None = None

    def add(self, name: str) -> None:
        if self.asked_ahead is None:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not self._continued():
                time.sleep(0.02)
            self.asked_ahead = self._continued()
        self.names.append(name)

    def _continued(self) -> bool:
        return any("continue" in r.query for r in self.faults.requests)


def test_the_hub_asks_for_the_next_page_while_it_decodes_this_one(
    faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    sink = access.fold(
        CONFIGMAPS, reduce.name_of, lambda: WaitsForTheNextPage(faults), namespace=ns
    )

    assert sink.asked_ahead is True
    assert sink.names == [f"cm-{i}" for i in range(7)]  # four pages of two, each once
    pages = [
        r
        for r in faults.requests
        if r.method == "GET" and r.path.endswith(f"/namespaces/{ns}/configmaps")
    ]
    assert len(pages) == 4
    assert len({tuple(r.query.get("continue", [])) for r in pages}) == 4


def test_an_upstream_cluster_with_a_budget_reads_one_page_at_a_time(
    faults: FaultProxy, hub_kubeconfig: str, ns: str
) -> None:
    """Its budget counts the time spent waiting on each answer, which pages in flight
    together would blur."""
    transport = Transport(
        hub_client(hub_kubeconfig, None), "up", stats=RequestStats(), budget=RunBudget(None)
    )
    budget = ReadBudget(ReadLimits(), "up")
    access = KubeAccess(transport, page_size=2, budget=budget)

    sink = access.fold(
        CONFIGMAPS, reduce.name_of, lambda: WaitsForTheNextPage(faults), namespace=ns
    )

    assert sink.asked_ahead is False
    assert sink.names == [f"cm-{i}" for i in range(7)]
    assert budget.pages == 3


def test_a_page_asked_ahead_that_fails_is_retried_and_what_it_raises_is_the_lists(
    faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    path = f"/namespaces/{ns}/configmaps$"
    faults.add_fault(Fault(method="GET", path=path, status=503, query={"continue": "*"}))
    assert access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=ns).names == [
        f"cm-{i}" for i in range(7)
    ]

    faults.add_fault(
        Fault(method="GET", path=path, status=403, query={"continue": "*"}, times=None)
    )
    with pytest.raises(ApiError) as refused:
        access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=ns)
    assert refused.value.status == 403


def test_a_page_asked_on_a_token_the_answer_did_not_end_with_is_not_used(
    faults: FaultProxy, access: KubeAccess, hub: TestCluster, ns: str
) -> None:
    """A first page naming two continue tokens (two `metadata` fields): the page asked ahead
    on the first is dropped, and the list goes on from the one the answer ended with."""
    status, first = hub._call("GET", f"/api/v1/namespaces/{ns}/configmaps?limit=2")
    assert status == 200
    real = first["metadata"]["continue"]

    def two_tokens(rec: object) -> Served:
        items = json.dumps(first["items"])
        body = (
            '{"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"continue": "decoy"}, '
            f'"items": {items}, "metadata": {json.dumps({"continue": real})}}}'
        )
        return Served(200, [("Content-Type", "application/json")], iter([body.encode()]))

    faults.add_fault(Fault(method="GET", path=f"/namespaces/{ns}/configmaps$", serve=two_tokens))

    sink = access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=ns)

    assert sink.names == [f"cm-{i}" for i in range(7)]
    tokens = [
        r.query["continue"][0]
        for r in faults.requests
        if r.path.endswith(f"/namespaces/{ns}/configmaps") and "continue" in r.query
    ]
    assert tokens.count("decoy") == 1  # asked ahead, never used
    assert tokens.count(real) == 1


def test_a_page_asked_ahead_holds_at_most_its_bound_then_streams_on(
    faults: FaultProxy, access: KubeAccess, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(access_module, "AHEAD_BYTES", 1)  # every chunk waits to be taken on

    sink = access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=ns)

    assert sink.names == [f"cm-{i}" for i in range(7)]


def test_a_list_that_fails_ends_the_page_it_asked_ahead(
    faults: FaultProxy,
    access: KubeAccess,
    hub: TestCluster,
    ns: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first page names a real continue token, then breaks (malformed): the list fails,
    and the page asked ahead, waiting to be taken on, is ended, not left in its thread."""
    monkeypatch.setattr(access_module, "AHEAD_BYTES", 1)
    status, first = hub._call("GET", f"/api/v1/namespaces/{ns}/configmaps?limit=2")
    assert status == 200
    real = first["metadata"]["continue"]

    def broken(rec: object) -> Served:
        body = (
            '{"kind": "ConfigMapList", "apiVersion": "v1", '
            f'"metadata": {json.dumps({"continue": real})}, "items": [{{"metadata": ]]]'
        )
        return Served(200, [("Content-Type", "application/json")], iter([body.encode()]))

    faults.add_fault(Fault(method="GET", path=f"/namespaces/{ns}/configmaps$", serve=broken))
    # The page asked ahead: many chunks, so that it waits to be taken on when the list fails.
    faults.add_fault(
        Fault(
            method="GET",
            path=f"/namespaces/{ns}/configmaps$",
            query={"continue": "*"},
            serve=hostile_list(200_000),
        )
    )

    with pytest.raises(ApiError) as failed:
        access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=ns)

    assert failed.value.reason == "Malformed"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (_pages_ahead() or not _asked(faults, real)):
        time.sleep(0.05)
    assert _asked(faults, real)  # the page was asked ahead (its answer is what was ended)
    assert _pages_ahead() == []


def _asked(faults: FaultProxy, token: str) -> bool:
    return any(r.query.get("continue") == [token] for r in faults.requests)


def _pages_ahead() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gcjob-page-ahead"]


def test_absence_is_proven_only_by_a_not_found_for_that_name(
    faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    assert access.get(CONFIGMAPS, ns, "missing", reduce.name_of) is None
    assert access.get(CONFIGMAPS, ns, "cm-1", reduce.name_of) == "cm-1"

    faults.add_fault(
        Fault(
            method="GET",
            path="/configmaps/other$",
            status=404,
            body={
                "kind": "Status",
                "reason": "NotFound",
                "details": {"name": "someone-else", "kind": "configmaps"},
            },
        )
    )
    with pytest.raises(ApiError):
        access.get(CONFIGMAPS, ns, "other", reduce.name_of)

    faults.add_fault(
        Fault(method="GET", path="/configmaps/plain$", status=404, body="404 page not found")
    )
    with pytest.raises(ApiError):
        access.get(CONFIGMAPS, ns, "plain", reduce.name_of)


@pytest.mark.parametrize(
    "details",
    [
        {"name": "other", "kind": "configmaps", "group": "evil.example"},  # another group's
        {"name": "other", "kind": "gateways", "group": "gateway.networking.k8s.io"},
        {"name": "other", "kind": "secrets"},
        {"name": "other"},  # names no resource at all
        {"name": "other", "kind": ""},
    ],
)
def test_a_not_found_for_another_resource_of_that_name_is_no_proof(
    faults: FaultProxy, access: KubeAccess, ns: str, details: dict[str, str]
) -> None:
    """The real server names the resource and, outside the core group, its group."""
    faults.add_fault(
        Fault(
            method="GET",
            path="/configmaps/other$",
            status=404,
            body={"kind": "Status", "reason": "NotFound", "details": details},
        )
    )
    with pytest.raises(ApiError):
        access.get(CONFIGMAPS, ns, "other", reduce.name_of)


def test_a_resource_that_is_not_served_is_not_served(
    faults: FaultProxy, access: KubeAccess
) -> None:
    assert access.served(RESOURCEBINDINGS) is True
    assert access.served(CONFIGMAPS) is True
    faults.unserve("gateway.networking.k8s.io", "v1")
    assert access.served(GATEWAYS) is False


def test_deletes_are_pinned_and_refused_without_a_pin(
    hub: TestCluster, access: KubeAccess, ns: str
) -> None:
    obj = hub.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pinned", "namespace": ns}}
    )
    meta = obj["metadata"]

    assert access.delete(CONFIGMAPS, ns, "pinned", "other-uid", meta["resourceVersion"]) is (
        DeleteResult.CONFLICT
    )
    assert access.delete(CONFIGMAPS, ns, "pinned", meta["uid"], meta["resourceVersion"]) is (
        DeleteResult.DELETED
    )
    # The delete orphans: until the hub's garbage collector takes its `orphan` finalizer off
    # (at its client's pace, slow on a busy hub) the object is there, terminating, with a new
    # resourceVersion, and a repeat is a conflict. Once the collector finished, it is gone.
    assert hub.gone("ConfigMap", ns, "pinned")
    if hub.collects_garbage:
        assert access.delete(CONFIGMAPS, ns, "pinned", meta["uid"], meta["resourceVersion"]) is (
            DeleteResult.GONE
        )
    with pytest.raises(KubeError, match="no uid/resourceVersion"):
        access.delete(CONFIGMAPS, ns, "cm-0", "", "")


def test_an_answer_naming_another_object_is_no_answer(
    faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    faults.add_fault(
        Fault(
            method="GET",
            path="/configmaps/wanted$",
            status=200,
            body={"kind": "ConfigMapList", "metadata": {}, "items": []},
        )
    )
    with pytest.raises(ApiError, match="answer names None"):
        access.get(CONFIGMAPS, ns, "wanted", reduce.name_of)


def test_an_empty_list_from_a_real_server_is_empty(
    faults: FaultProxy, access: KubeAccess, hub: TestCluster
) -> None:
    """A real server answers an empty metadata-only list with `"items": null`."""
    empty = hub.namespace("empty")

    for resource in (RESOURCEBINDINGS, SECRETS, CONFIGMAPS):
        sink = access.fold(resource, reduce.name_of, Counting, namespace=empty)
        assert sink.names == [], resource.plural

    answers = [r.response_body for r in faults.requests if r.path.endswith("/resourcebindings")]
    assert answers and b'"items":null' in answers[-1]  # what this test is about


def test_a_list_answer_without_items_is_malformed(
    faults: FaultProxy, access: KubeAccess, ns: str
) -> None:
    faults.add_fault(
        Fault(method="GET", path=f"/namespaces/{ns}/configmaps$", status=200, body={"kind": "List"})
    )
    with pytest.raises(ApiError, match="list without items"):
        access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=ns)


def test_a_secret_is_read_as_gcjob_keeps_it_whatever_resource_names_it(
    hub: TestCluster, faults: FaultProxy, access: KubeAccess
) -> None:
    """A Secret applied with `kubectl apply` carries its data in an annotation that a
    metadata-only answer holds: a get or a list of it, by gcjob's own resource or as a hub's
    discovery names one, asks for metadata only and gives its reader the keys of its labels
    and annotations but no value a rule of gcjob's does not read."""
    ns = hub.namespace("access")
    password = "Pw-not-to-be-read-9f3c"
    applied = json.dumps({"kind": "Secret", "stringData": {"password": password}})
    hub.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "db-creds",
                "namespace": ns,
                "labels": {"app.example.com/token": password, COMPANION_LABEL: "true"},
                "annotations": {LAST_APPLIED: applied, REFERRERS_ANNOTATION: '["default/web"]'},
            },
            "stringData": {"password": password},
        }
    )
    discovered = discovery.resources_by_kind(
        "", "v1", {"resources": [{"name": "secrets", "kind": "Secret", "namespaced": True}]}
    )["Secret"][0]
    faults.clear_requests()

    seen = [
        access.get(resource, ns, "db-creds", lambda obj: obj, metadata_only=False)
        for resource in (SECRETS, discovered)
    ]
    seen += access.list(discovered, lambda obj: obj, namespace=ns, metadata_only=False)

    assert len(seen) == 3
    for obj in seen:
        assert password not in json.dumps(obj)
        meta = obj["metadata"]
        assert meta["annotations"][LAST_APPLIED] == VALUE_NOT_KEPT
        assert meta["annotations"][REFERRERS_ANNOTATION] == '["default/web"]'  # a rule reads it
        assert meta["labels"] == {"app.example.com/token": VALUE_NOT_KEPT, COMPANION_LABEL: "true"}
        assert "managedFields" not in meta
    for request in faults.requests:
        assert "as=PartialObjectMetadata" in request.accept and "," not in request.accept


@pytest.mark.parametrize("page_size", [2, 500])
def test_a_finished_list_lets_its_sink_go_without_the_cyclic_collector(
    hub_kubeconfig: str, ns: str, page_size: int
) -> None:
    """Once the caller drops what a list filled, it is freed at once: nothing of the list
    (a page's stream, the page asked ahead) holds it in a cycle. A cycle kept each scan of
    the copies' first read (20,000 owners at 10,000 projects) until the collector ran."""
    transport = Transport(
        hub_client(hub_kubeconfig, None), "hub", stats=RequestStats(), budget=RunBudget(None)
    )
    access = KubeAccess(transport, page_size=page_size)
    gc.collect()
    gc.disable()
    try:
        sink = access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=ns)
        assert len(sink.names) == 7
        left = weakref.ref(sink)
        del sink
        assert left() is None
    finally:
        gc.enable()
