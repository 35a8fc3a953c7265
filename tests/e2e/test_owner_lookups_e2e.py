"""gcjob/enumerate/owners.py on a real API server: owners resolved through discovery, one list
per (resource, namespace), absence proven by a NotFound naming the owner, and projects read
from a real Project API (Milo's Project CRD). Faults come from the proxy in front of it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import yaml

from gcjob.budget import RunBudget
from gcjob.enumerate.owners import OwnerLookups, ProjectReads
from gcjob.kube.access import KubeAccess, ReadBudget, ReadLimits
from gcjob.kube.connect import hub_client
from gcjob.kube.errors import UnknownCluster
from gcjob.kube.transport import RequestStats, Transport
from gcjob.model import Looked, Presence, ProjectAnswer, UpstreamOwner
from testbed.cluster import TestCluster
from testbed.faultproxy import Fault, FaultProxy, Target
from testbed.servers import ADMIN_TOKEN, ApiServer, crds_dir, write_kubeconfig

GROUP = "networking.datumapis.com"
CONNECTORS = f"/apis/{GROUP}/v1alpha1/namespaces/{{namespace}}/connectors"
PROJECTS = "/apis/resourcemanager.miloapis.com/v1alpha1/projects"


@pytest.fixture(scope="module")
def milo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestCluster, FaultProxy, str]]:
    """One real server standing for a project's control plane and Milo's Project API."""
    work = tmp_path_factory.mktemp("owners")
    paths = []
    for name in (
        "minimal-networking.datumapis.com_connectors-httpproxies.yaml",
        "minimal-resourcemanager.miloapis.com_projects.yaml",
    ):
        for i, doc in enumerate(yaml.safe_load_all((crds_dir() / name).read_text())):
            path = work / f"{i}-{name}"
            path.write_text(yaml.safe_dump(doc))
            paths.append(path)
    with ApiServer("owners") as server:
        server.install_crds(paths)
        proxy = FaultProxy(Target(server.url, server.ssl_context())).start(work)
        kubeconfig = work / "kubeconfig"
        write_kubeconfig(
            kubeconfig,
            context="p1",
            server=proxy.url,
            ca_file=proxy.ca_file,
            user={"token": ADMIN_TOKEN},
        )
        cluster = TestCluster(str(kubeconfig), "p1")
        try:
            yield cluster, proxy, str(kubeconfig)
        finally:
            proxy.stop()


def access(kubeconfig: str, budget: ReadBudget | None = None) -> KubeAccess:
    transport = Transport(
        hub_client(kubeconfig, "p1"), "upstream/p1", stats=RequestStats(), budget=RunBudget(None)
    )
    return KubeAccess(transport, budget=budget)


def read_projects(api: KubeAccess, names: list[str]) -> dict[str, ProjectAnswer]:
    return ProjectReads(api, lambda _: True).answers(names)


class OneCluster:
    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig

    def reader_for(self, cluster: str) -> KubeAccess:
        if cluster != "p1":
            raise UnknownCluster(f"no endpoint for {cluster}")
        return access(self.kubeconfig)


def connector(namespace: str, name: str) -> dict:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Connector",
        "metadata": {"name": name, "namespace": namespace},
    }


def owner(namespace: str, name: str, kind: str = "Connector", group: str = GROUP) -> UpstreamOwner:
    return UpstreamOwner("p1", group, kind, namespace, name)


@pytest.fixture
def world(milo):
    cluster, proxy, kubeconfig = milo
    ns = cluster.namespace("owners")
    made = cluster.create_at(CONNECTORS.format(namespace=ns), connector(ns, "live"))
    yield cluster, proxy, kubeconfig, ns, made["metadata"]["uid"]
    proxy.clear_faults()


def test_present_gone_and_namespace_gone_owners_in_one_list(world):
    _, proxy, kubeconfig, ns, uid = world
    proxy.clear_requests()
    lookups = OwnerLookups(OneCluster(kubeconfig))
    wanted = [owner(ns, "live"), owner(ns, "gone-a"), owner(ns, "gone-b"), owner("no-such-ns", "x")]
    lookups.load(wanted)
    live = lookups.read(owner(ns, "live"))
    assert live.owner is Presence.PRESENT and live.owner_uid == uid and live.owner_created
    assert lookups.read(owner(ns, "gone-a")).owner is Presence.GONE
    assert lookups.read(owner(ns, "gone-a")).namespace is Presence.PRESENT
    assert lookups.read(owner("no-such-ns", "x")).namespace is Presence.GONE
    lists = [
        r
        for r in proxy.requests
        if r.method == "GET" and r.path.endswith(f"/namespaces/{ns}/connectors")
    ]
    assert len(lists) == 1, "one list per (resource, namespace), not one GET per owner"
    assert lookups.answered() == ["p1"]


def test_a_kind_the_upstream_does_not_serve_is_unresolved_not_gone(world):
    _, _, kubeconfig, ns, _ = world
    lookups = OwnerLookups(OneCluster(kubeconfig))
    missing = owner(ns, "web", kind="Backend", group="gateway.envoyproxy.io")
    wrong_kind = owner(ns, "web", kind="Tunnel")
    lookups.load([missing, wrong_kind])
    for read in (lookups.read(missing), lookups.read(wrong_kind)):
        assert read.cluster_available and not read.resolved and read.owner is Presence.UNKNOWN


def test_a_forbidden_list_makes_the_whole_cluster_unavailable(world):
    _, proxy, kubeconfig, ns, _ = world
    proxy.add_fault(Fault(method="GET", path=r"/connectors$", status=403, times=None))
    lookups = OwnerLookups(OneCluster(kubeconfig))
    lookups.load([owner(ns, "live"), owner(ns, "gone")])
    for name in ("live", "gone"):
        read = lookups.read(owner(ns, name))
        assert not read.cluster_available and read.owner is Presence.UNKNOWN
    assert lookups.answered() == []


def test_a_404_that_names_nothing_proves_nothing(world):
    _, proxy, kubeconfig, ns, _ = world
    # A proxy or a wrong URL: 404 for the path, not a NotFound naming the owner.
    proxy.add_fault(
        Fault(
            method="GET",
            path=r"/connectors/gone$",
            status=404,
            body="404 page not found",
            times=None,
        )
    )
    lookups = OwnerLookups(OneCluster(kubeconfig))
    lookups.load([owner(ns, "gone")])
    assert lookups.read(owner(ns, "gone")).owner is not Presence.GONE


def test_an_unknown_cluster_is_unavailable(world):
    _, _, kubeconfig, ns, _ = world
    lookups = OwnerLookups(OneCluster(kubeconfig))
    other = UpstreamOwner("p2", GROUP, "Connector", ns, "live")
    lookups.load([other])
    assert not lookups.read(other).cluster_available


def test_recheck_reads_the_owner_again_live(world):
    cluster, _, kubeconfig, ns, _ = world
    lookups = OwnerLookups(OneCluster(kubeconfig))
    lookups.load([owner(ns, "later")])
    assert lookups.read(owner(ns, "later")).owner is Presence.GONE
    cluster.create_at(CONNECTORS.format(namespace=ns), connector(ns, "later"))
    assert lookups.recheck(owner(ns, "later")).owner is Presence.PRESENT


def project(name: str) -> dict:
    return {
        "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
        "kind": "Project",
        "metadata": {"name": name},
    }


def test_projects_found_not_found_and_unread(milo):
    cluster, proxy, kubeconfig = milo
    live = f"p-{uuid.uuid4().hex[:8]}"
    cluster.create_at(PROJECTS, project(live))
    gone = f"p-{uuid.uuid4().hex[:8]}"
    answers = read_projects(access(kubeconfig), [live, gone])
    assert answers == {live: ProjectAnswer.FOUND, gone: ProjectAnswer.NOT_FOUND}
    proxy.add_fault(Fault(method="GET", path=PROJECTS + "/", status=403, times=None))
    try:
        answers = read_projects(access(kubeconfig), [live, gone])
    finally:
        proxy.clear_faults()
    assert answers == {live: ProjectAnswer.FOUND, gone: ProjectAnswer.UNREAD}


def test_a_project_api_answering_404_for_every_path_proves_no_project_gone(milo):
    _, proxy, kubeconfig = milo
    proxy.add_fault(Fault(path=r"/projects", status=404, body="404 page not found", times=None))
    try:
        answers = read_projects(access(kubeconfig), ["p-a", "p-b"])
    finally:
        proxy.clear_faults()
    assert set(answers.values()) == {ProjectAnswer.UNREAD}


def test_a_project_name_that_needs_encoding_is_asked_for_encoded(milo):
    _, proxy, kubeconfig = milo
    proxy.clear_requests()
    answers = read_projects(access(kubeconfig), ["a b/c"])
    # The server answers 404 for a name it cannot hold; whatever it says names no such project.
    assert answers["a b/c"] in (ProjectAnswer.UNREAD, ProjectAnswer.NOT_FOUND)
    asked = [r.path for r in proxy.requests if "projects/" in r.path]
    assert asked and all(path.endswith("/projects/a%20b%2Fc") for path in asked), asked


def project_lists(proxy: FaultProxy) -> list[str]:
    return [r.path for r in proxy.requests if r.method == "GET" and r.path == PROJECTS]


def test_the_project_api_is_listed_once_whoever_asks_and_looked_at_again_by_one_get(milo):
    """Issue 30 item 4: one list for every sweep that asks (not one per re-check), and the
    live second look before a delete is one GET of that one project."""
    cluster, proxy, kubeconfig = milo
    live, gone = f"p-{uuid.uuid4().hex[:8]}", f"p-{uuid.uuid4().hex[:8]}"
    cluster.create_at(PROJECTS, project(live))
    proxy.clear_requests()
    projects = ProjectReads(access(kubeconfig), lambda _: True)
    assert projects.answers([live]) == {live: ProjectAnswer.FOUND}  # the routes sweep asks
    assert projects.answers([live, gone]) == {  # then the copies sweep
        live: ProjectAnswer.FOUND,
        gone: ProjectAnswer.NOT_FOUND,
    }
    for _ in range(3):
        assert projects.still_gone(gone).found is Looked.PROVEN
    assert projects.still_gone(live).found is Looked.NO_LONGER
    assert len(project_lists(proxy)) == 1
    gets = [r.path for r in proxy.requests if r.path.startswith(PROJECTS + "/")]
    assert gets == [f"{PROJECTS}/{gone}"] * 4 + [f"{PROJECTS}/{live}"]
    assert projects.failed([live, gone]) == ""


def test_a_second_look_that_fails_or_runs_out_of_budget_is_no_answer(milo):
    """Issue 30 item 3: a 503 on the second look, or a read budget that runs out, is a read
    that failed (never "found", never "still gone"), and says why."""
    cluster, proxy, kubeconfig = milo
    gone = f"p-{uuid.uuid4().hex[:8]}"
    cluster_projects = [f"p-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for name in cluster_projects:
        cluster.create_at(PROJECTS, project(name))
    projects = ProjectReads(access(kubeconfig), lambda _: True)
    assert projects.answers([gone]) == {gone: ProjectAnswer.NOT_FOUND}
    proxy.add_fault(Fault(method="GET", path=f"{PROJECTS}/{gone}$", status=503, times=None))
    try:
        look = projects.still_gone(gone)
    finally:
        proxy.clear_faults()
    assert look.found is Looked.FAILED and "503" in look.detail, look
    # A budget of 1 list item: the list of 2 or more runs it out, and every read after.
    limits = ReadLimits(pages=20, items=1, bytes=1 << 20, seconds=60.0)
    tight = ProjectReads(access(kubeconfig, ReadBudget(limits, "projects")), lambda _: True)
    assert set(tight.answers(cluster_projects).values()) == {ProjectAnswer.UNREAD}
    assert "read budget ran out" in tight.failed(cluster_projects)
    assert "--upstream-max-items" in tight.failed(cluster_projects)
    after = tight.still_gone(gone)
    assert after.found is Looked.FAILED and "read budget ran out" in after.detail
