"""End to end: lists from the watch cache (`--list-from cache`, the default) on the real server,
and why a list that lags never leads to a wrong deletion (docs/operating.md
"Why a lagging cache is safe").

A stale list is made without timing: a list answer the real server gave earlier is replayed
by the fault proxy after the world changed, so gcjob decides on exactly what a lagging cache
could have said.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest

from gcjob.budget import RunBudget
from gcjob.kube import reduce
from gcjob.kube.access import Collected, KubeAccess
from gcjob.kube.connect import hub_client
from gcjob.kube.errors import ApiError, Unavailable
from gcjob.kube.resources import CONFIGMAPS
from gcjob.kube.transport import RequestStats, Transport
from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import Fault, FaultProxy, RecordedRequest
from testbed.hostile import hostile_transport
from testbed.objects import binding, companion, gateway, route, workload
from testbed.report import run_gcjob

CACHE = {"resourceVersion": ["0"], "resourceVersionMatch": ["NotOlderThan"]}


def lists_of(proxy: FaultProxy, path_end: str) -> list[RecordedRequest]:
    return [r for r in proxy.requests if r.method == "GET" and r.path.endswith(path_end)]


def answer_of(proxy: FaultProxy, path_end: str) -> dict[str, Any]:
    """The last list answer the real server sent for that path (bytes as received)."""
    answers = [r for r in lists_of(proxy, path_end) if r.status == 200]
    assert answers, f"no list of {path_end} was answered"
    body: dict[str, Any] = json.loads(answers[-1].response_body)
    return body


def replay(proxy: FaultProxy, path_end: str, answer: dict[str, Any]) -> Fault:
    """Every list of that path is answered with `answer`, an earlier answer of the server."""
    return proxy.add_fault(
        Fault(
            method="GET",
            path=f"{path_end}$",
            query={"limit": "*"},
            status=200,
            body=answer,
            times=None,
        )
    )


def names(answer: dict[str, Any]) -> list[str]:
    return sorted(item["metadata"]["name"] for item in answer["items"] or [])


# -- reading from the cache -------------------------------------------------------------------


@pytest.fixture
def seven(hub: TestCluster) -> str:
    ns = hub.namespace("cache")
    for i in range(7):
        hub.create(companion("ConfigMap", ns, f"cm-{i}", ["default/gone"]))
    return ns


def make_access(kubeconfig: str, *, from_cache: bool) -> KubeAccess:
    transport = Transport(
        hub_client(kubeconfig, None), "hub", stats=RequestStats(), budget=RunBudget(None)
    )
    return KubeAccess(transport, page_size=2, list_from_cache=from_cache)


def test_a_cache_list_is_one_answer_whatever_the_page_size(
    faults: FaultProxy, hub_kubeconfig: str, seven: str
) -> None:
    path = f"/namespaces/{seven}/configmaps"
    cached = make_access(hub_kubeconfig, from_cache=True).list(
        CONFIGMAPS, reduce.name_of, namespace=seven
    )
    cache_requests = lists_of(faults, path)
    faults.clear_requests()
    paged = make_access(hub_kubeconfig, from_cache=False).list(
        CONFIGMAPS, reduce.name_of, namespace=seven
    )
    etcd_requests = lists_of(faults, path)

    assert sorted(cached) == sorted(paged) == [f"cm-{i}" for i in range(7)]
    # The watch cache ignores limit=2 on a resourceVersion=0 list (1.25 did, and 1.31 - 1.36
    # still do): one answer, everything in it.
    assert len(cache_requests) == 1
    assert {k: cache_requests[0].query[k] for k in CACHE} == CACHE
    assert cache_requests[0].query["limit"] == ["2"]
    # From etcd, page by page, and never a resourceVersion.
    assert len(etcd_requests) == 4
    assert all("resourceVersion" not in r.query for r in etcd_requests)
    assert all("continue" in r.query for r in etcd_requests[1:])


def test_a_server_that_pages_its_cache_is_followed_by_its_continue_token(
    faults: FaultProxy, hub_kubeconfig: str, seven: str
) -> None:
    """Newer servers may paginate a cache list. The first answer here is a real first page of
    the same server (limit=2, with its continue token); gcjob must follow the token alone."""
    path = f"/namespaces/{seven}/configmaps"
    make_access(hub_kubeconfig, from_cache=False).list(CONFIGMAPS, reduce.name_of, namespace=seven)
    first_page = json.loads(lists_of(faults, path)[0].response_body)
    assert first_page["metadata"]["continue"] and len(first_page["items"]) == 2
    faults.clear_requests()
    faults.add_fault(
        Fault(
            method="GET",
            path=f"{path}$",
            query={"resourceVersion": "0"},
            status=200,
            body=first_page,
        )
    )

    listed = make_access(hub_kubeconfig, from_cache=True).list(
        CONFIGMAPS, reduce.name_of, namespace=seven
    )

    assert sorted(listed) == [f"cm-{i}" for i in range(7)]
    sent = lists_of(faults, path)
    assert {k: sent[0].query[k] for k in CACHE} == CACHE
    assert len(sent) == 4  # the paged first answer, then three pages by continue token
    for follow_up in sent[1:]:
        assert "continue" in follow_up.query
        assert "resourceVersion" not in follow_up.query  # the server refuses both together
        assert "resourceVersionMatch" not in follow_up.query


def test_a_too_deep_item_in_a_cache_list_makes_it_incomplete(
    faults: FaultProxy, hub_kubeconfig: str, seven: str
) -> None:
    path = f"/namespaces/{seven}/configmaps"
    answer = {"kind": "List", "metadata": {}, "items": [{"metadata": {"name": "a"}}, "DEEP"]}
    body = json.dumps(answer).replace('"DEEP"', "[" * 5000 + "]" * 5000)
    faults.add_fault(Fault(method="GET", path=f"{path}$", status=200, body=body))
    with pytest.raises(ApiError, match="nested too deeply"):
        make_access(hub_kubeconfig, from_cache=True).list(
            CONFIGMAPS, reduce.name_of, namespace=seven
        )


def test_a_list_answer_that_breaks_off_restarts_the_list_into_a_fresh_sink() -> None:
    """A hostile peer (not Kubernetes): the first answer breaks off after one item, the next is
    whole. What the broken answer gave is thrown away, not counted twice."""
    answers = iter(
        [
            b'{"items":[{"metadata":{"name":"a"}},',  # of a declared 1,000 bytes
            b'{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}',
        ]
    )

    def reply(conn: socket.socket) -> None:
        body = next(answers)
        length = 1000 if not body.endswith(b"}") else len(body)
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}"
        conn.sendall(head.encode() + b"\r\nConnection: close\r\n\r\n" + body)
        time.sleep(0.2)

    transport, peer = hostile_transport(reply, RunBudget(None), read=5.0)
    try:
        sinks: list[Collected[str]] = []

        def start() -> Collected[str]:
            sinks.append(Collected())
            return sinks[-1]

        result = KubeAccess(transport, list_from_cache=True).fold(CONFIGMAPS, reduce.name_of, start)
    finally:
        peer.close()
    assert result.records == ["a", "b"]
    assert [s.records for s in sinks] == [["a"], ["a", "b"]]
    assert transport.stats.total == 2


def test_answers_that_keep_breaking_off_leave_the_list_unavailable() -> None:
    def reply(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n"
            b'{"items":[{"metadata":{"name":"a"}},'
        )
        time.sleep(0.2)

    transport, peer = hostile_transport(reply, RunBudget(None), read=5.0)
    try:
        with pytest.raises(Unavailable, match="restarted 4 times"):
            KubeAccess(transport, list_from_cache=True).list(CONFIGMAPS, reduce.name_of)
    finally:
        peer.close()
    assert transport.stats.total == 4


# -- a stale list never leads to a wrong deletion -----------------------------------------------


# Both reads: a server that says it is 1.34 or newer (or --list-from pages) is read in pages
# without a resourceVersion, and its deletions are re-verified live all the same.
READS = pytest.mark.parametrize("read", ["auto", "pages"])
PAGES_SINCE = (1, 34)  # the release from which auto reads in pages (docs/list-strategy.md)


@READS
def test_a_workload_created_after_the_list_keeps_its_companion(
    hub: TestCluster, faults: FaultProxy, gcjob_hub_args: list[str], read: str
) -> None:
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "app-config", ["default/web"]))
    args = [*gcjob_hub_args, "--namespace", ns, "--sweep", "companions", "--list-from", read]
    before = run_gcjob(*args)
    assert before.outcome("ConfigMap", "app-config") == ("would-delete", "orphaned")
    stale = answer_of(faults, f"/namespaces/{ns}/workloaddeployments")
    assert names(stale) == []

    hub.create(workload(ns, "web"))  # after the list: a lagging cache would not show it
    replay(faults, f"/namespaces/{ns}/workloaddeployments", stale)
    result = run_gcjob(*args, "--delete")

    assert result.outcome("ConfigMap", "app-config") == ("skipped", "referrer-appeared")
    assert hub.present("ConfigMap", ns, "app-config")
    from_cache = any("resourceVersion" in r.query for r in lists_of(faults, "/workloaddeployments"))
    # auto reads the cache below 1.34 (docs/list-strategy.md), pages from 1.34 on
    assert from_cache is (read == "auto" and hub.release() < PAGES_SINCE)


@READS
def test_a_companion_changed_after_the_list_is_not_deleted_on_its_old_state(
    hub: TestCluster, faults: FaultProxy, gcjob_hub_args: list[str], read: str
) -> None:
    ns = hub.namespace()
    hub.create(workload(ns, "web"))
    hub.create(companion("ConfigMap", ns, "app-config", ["default/old"]))
    args = [*gcjob_hub_args, "--namespace", ns, "--sweep", "companions", "--list-from", read]
    run_gcjob(*args)
    stale = answer_of(faults, f"/namespaces/{ns}/configmaps")
    assert names(stale) == ["app-config"]

    # The operator now lists a live referrer: the stale list still says only `old` (absent).
    hub.patch(
        "ConfigMap",
        ns,
        "app-config",
        {"metadata": {"annotations": {"compute.datumapis.com/referenced-by": '["default/web"]'}}},
    )
    replay(faults, f"/namespaces/{ns}/configmaps", stale)
    result = run_gcjob(*args, "--delete")

    # `old` is absent on a live read too; the delete is pinned to the listed resourceVersion.
    assert result.outcome("ConfigMap", "app-config") == ("skipped", "changed-since-observed")
    assert hub.present("ConfigMap", ns, "app-config")


def test_a_configmap_created_after_the_list_keeps_its_binding(
    hub: TestCluster, faults: FaultProxy, gcjob_hub_args: list[str]
) -> None:
    ns = hub.namespace()
    hub.create(binding(ns, "app-config-configmap", kind="ConfigMap", target="app-config"))
    args = [*gcjob_hub_args, "--namespace", ns, "--sweep", "bindings"]
    before = run_gcjob(*args)
    assert before.outcome("ResourceBinding", "app-config-configmap") == ("would-delete", "orphaned")
    stale = answer_of(faults, f"/namespaces/{ns}/configmaps")
    assert names(stale) == []

    hub.create(companion("ConfigMap", ns, "app-config", ["default/web"]))
    replay(faults, f"/namespaces/{ns}/configmaps", stale)
    result = run_gcjob(*args, "--delete")

    # The live read by name found it: the binding is healthy (a count, not an item).
    assert result.item("ResourceBinding", "app-config-configmap") is None
    assert result.summary["counts"]["bindings"]["skipped"] == {"object-exists": 1}
    assert result.exit_code == 0
    assert hub.present("ResourceBinding", ns, "app-config-configmap")


def test_a_gateway_created_after_the_upstream_list_keeps_its_route(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_faults: FaultProxy,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
) -> None:
    """Two Gateways in one namespace: the upstream is asked by a (cache) list, not a GET."""
    project = upstream.project()
    ns = hub.namespace()
    hub.create(
        route(
            ns,
            "web",
            cluster_label=f"cluster-{UPSTREAM_CLUSTER}",
            upstream_namespace=project,
            parents=[{"name": "gw-a"}, {"name": "gw-b"}],
        )
    )
    args = [
        *gcjob_hub_args,
        "--upstream-kubeconfig",
        upstream_kubeconfig,
        "--sweep",
        "routes",
        "--namespace",
        ns,
    ]
    before = run_gcjob(*args)
    assert before.outcome("HTTPRoute", "web") == ("would-delete", "upstream-gateways-gone")
    stale = answer_of(upstream_faults, f"/namespaces/{project}/gateways")
    assert names(stale) == []

    upstream.create(gateway(project, "gw-b"))
    replay(upstream_faults, f"/namespaces/{project}/gateways", stale)
    result = run_gcjob(*args, "--delete")

    assert result.outcome("HTTPRoute", "web") == ("skipped", "gateway-appeared")
    assert hub.present("HTTPRoute", ns, "web")


# -- the strategy: --list-from auto asks the server its version (docs/list-strategy.md) --------


def version_gets(proxy: FaultProxy) -> list[RecordedRequest]:
    return [r for r in proxy.requests if r.method == "GET" and r.path == "/version"]


def companions_run(gcjob_hub_args: list[str], ns: str, *flags: str) -> Any:
    result = run_gcjob(*gcjob_hub_args, "--namespace", ns, "--sweep", "companions", *flags)
    assert result.exit_code == 0, result.stderr
    assert result.outcome("ConfigMap", "cm-0") == ("would-delete", "orphaned")
    return result


def test_auto_reads_as_the_servers_release_says_and_says_so(
    hub: TestCluster, faults: FaultProxy, gcjob_hub_args: list[str], seven: str
) -> None:
    """Below 1.34 each collection is read whole from the watch cache; from 1.34 on in pages
    without a resourceVersion (served from the cache, consistent)."""
    result = companions_run(gcjob_hub_args, seven)  # --list-from auto: the default

    [asked] = version_gets(faults)
    said = json.loads(asked.response_body)
    assert (int(said["major"]), int(said["minor"])) == hub.release()
    strategy = result.summary["list_strategy"]
    assert strategy["requested"] == "auto"
    assert strategy["server_version"] == said["gitVersion"]
    sent = lists_of(faults, f"/namespaces/{seven}/configmaps")
    assert sent
    if hub.release() < PAGES_SINCE:
        assert strategy["read"] == "cache" and "< 1.34" in strategy["why"]
        assert all({k: r.query[k] for k in CACHE} == CACHE for r in sent)
    else:
        assert strategy["read"] == "pages" and ">= 1.34" in strategy["why"]
        assert all("resourceVersion" not in r.query for r in sent)


@pytest.mark.parametrize(
    ("git_version", "minor", "read"),
    [("v1.34.1", "34", "pages"), ("v1.33.5", "33", "cache"), ("v1.31.14", "31", "cache")],
)
def test_auto_reads_as_the_version_the_server_says(
    faults: FaultProxy,
    gcjob_hub_args: list[str],
    seven: str,
    git_version: str,
    minor: str,
    read: str,
) -> None:
    """The real server's /version answer, with another release in it: the lists go out as
    that release is read (any server serves both reads: the same objects, at another cost),
    and the sweep decides the same."""
    companions_run(gcjob_hub_args, seven)
    real = json.loads(version_gets(faults)[-1].response_body)
    said = {**real, "gitVersion": git_version, "minor": minor}
    for field in ("emulationMinor", "minCompatibilityMinor"):
        said.pop(field, None)
    faults.clear_requests()
    faults.add_fault(Fault(method="GET", path="^/version$", status=200, body=said))

    result = companions_run(gcjob_hub_args, seven, "--page-size", "3")

    strategy = result.summary["list_strategy"]
    assert (strategy["read"], strategy["server_version"]) == (read, git_version)
    sent = lists_of(faults, f"/namespaces/{seven}/configmaps")
    assert all(("resourceVersion" in r.query) is (read == "cache") for r in sent)
    # seven ConfigMaps, three a page: pages are followed by continue tokens, and a
    # resourceVersion=0 list comes whole
    assert any("continue" in r.query for r in sent) is (read == "pages")


@pytest.mark.parametrize("status", [403, 404])
def test_a_version_the_server_does_not_tell_is_read_the_known_way(
    faults: FaultProxy, gcjob_hub_args: list[str], seven: str, status: int
) -> None:
    faults.add_fault(Fault(method="GET", path="^/version$", status=status))

    result = companions_run(gcjob_hub_args, seven)

    strategy = result.summary["list_strategy"]
    assert (strategy["read"], strategy["server_version"]) == ("cache", None)
    assert "no version" in strategy["why"]
    assert len(version_gets(faults)) == 1


@pytest.mark.parametrize(
    ("flag", "read"), [("cache", "cache"), ("pages", "pages"), ("etcd", "pages")]
)
def test_a_forced_read_does_not_ask_the_version(
    faults: FaultProxy, gcjob_hub_args: list[str], seven: str, flag: str, read: str
) -> None:
    result = companions_run(gcjob_hub_args, seven, "--list-from", flag, "--page-size", "3")

    assert version_gets(faults) == []
    assert result.summary["list_strategy"] == {
        "read": read,
        "requested": read,
        "server_version": None,
        "why": f"--list-from {read}",
    }
    sent = lists_of(faults, f"/namespaces/{seven}/configmaps")
    assert sent and all(("resourceVersion" in r.query) is (read == "cache") for r in sent)
    # Seven ConfigMaps, three a page: only pages are followed by continue tokens (the watch
    # cache ignores limit on a resourceVersion=0 list and sends it whole).
    assert any("continue" in r.query for r in sent) is (read == "pages")
