"""The pytest fixtures of the test bed (tests/conftest.py registers them): a hub and an
upstream, each started once a session when a test first asks for it, and what a test uses
of them.

Each session starts two real kube-apiserver + etcd pairs (testbed/servers.py): a hub
serving the Karmada, compute and Gateway API CRDs, with the kube-controller-manager a Karmada
hub runs beside it (deleted namespaces finish, ownerReferences cascade), and an upstream
serving Gateway API, a bare API server as a project's control plane is. With
GCJOB_E2E_HUB_KUBECONFIG (and GCJOB_E2E_UPSTREAM_KUBECONFIG) the same tests run against those
clusters instead (testbed/endpoints.py).

The Karmada hub (`karmada`, tests/karmada/) is a third pair of servers, started once a session
by the first test that asks for it, with Karmada's own controllers and webhook beside it
(testbed/karmada.py): on the 1.36 servers only, skipped with that reason on any other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from testbed.cluster import TestCluster, wait_for
from testbed.endpoints import HUB_CONTEXT, UPSTREAM_CLUSTER, Endpoint, from_environment
from testbed.faultproxy import FaultProxy, Target
from testbed.karmada import POLICIES, KarmadaHub, city_policy, karmada_files, unavailable
from testbed.report import HubSweep
from testbed.servers import HUB_CRDS, UPSTREAM_CRDS, AssetsMissing, binaries, crds_dir

NO_CONTROLLERS = (
    "the hub runs no controllers: KUBEBUILDER_ASSETS holds no kube-controller-manager, and "
    "this test needs its garbage collector, namespace or token controller (docs/testing.md)"
)
Collect = Callable[..., None]


def _endpoint(
    work_factory: pytest.TempPathFactory,
    name: str,
    context: str,
    crds: tuple[str, ...],
    env_prefix: str,
    *,
    controllers: bool = False,
) -> Iterator[Endpoint]:
    if not os.environ.get(f"{env_prefix}_KUBECONFIG"):
        try:
            binaries()
            crds_dir()
        except AssetsMissing as missing:
            # A short failure, not a traceback (the whole suite stops before it starts:
            # tests/conftest.py).
            pytest.fail(str(missing), pytrace=False)
    work = work_factory.mktemp(name)
    with from_environment(work, name, context, crds, env_prefix, controllers=controllers) as found:
        yield found


@pytest.fixture(scope="session")
def hub_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from _endpoint(
        tmp_path_factory, "hub", HUB_CONTEXT, HUB_CRDS, "GCJOB_E2E_HUB", controllers=True
    )


@pytest.fixture(scope="session")
def upstream_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from _endpoint(
        tmp_path_factory, "upstream", UPSTREAM_CLUSTER, UPSTREAM_CRDS, "GCJOB_E2E_UPSTREAM"
    )


@pytest.fixture(scope="session")
def hub_kubeconfig(hub_endpoint: Endpoint) -> str:
    return hub_endpoint.kubeconfig


@pytest.fixture(scope="session")
def upstream_kubeconfig(upstream_endpoint: Endpoint) -> str:
    """Its context is named UPSTREAM_CLUSTER, so route labels can name it."""
    return upstream_endpoint.kubeconfig


@pytest.fixture
def hub(hub_endpoint: Endpoint) -> Iterator[TestCluster]:
    cluster = TestCluster(
        hub_endpoint.kubeconfig,
        hub_endpoint.context,
        collects_garbage=hub_endpoint.collects_garbage,
    )
    yield cluster
    cluster.cleanup()


@pytest.fixture
def upstream(upstream_endpoint: Endpoint) -> Iterator[TestCluster]:
    cluster = TestCluster(
        upstream_endpoint.kubeconfig,
        upstream_endpoint.context,
        collects_garbage=upstream_endpoint.collects_garbage,
    )
    yield cluster
    cluster.cleanup()


@pytest.fixture
def hub_controllers(hub_endpoint: Endpoint) -> None:
    """For a test that needs the hub's controllers (garbage collector, namespace, tokens): on
    a hub without them (KUBEBUILDER_ASSETS holding no kube-controller-manager) it is skipped,
    saying so, never passed."""
    if not hub_endpoint.collects_garbage:
        pytest.skip(NO_CONTROLLERS)


@pytest.fixture
def hub_collects_garbage(hub: TestCluster, hub_controllers: None) -> Collect:
    """`hub_collects_garbage(owner, *dependents)`: the hub's garbage collector deletes each of
    `dependents` once `owner` is deleted with propagationPolicy Background (TestCluster
    collected()): the positive control of a test that shows something was *not* collected,
    and the proof that the hub cascades as a Karmada hub does."""
    return hub.collected


@pytest.fixture
def faults(hub: TestCluster, hub_endpoint: Endpoint) -> Iterator[FaultProxy]:
    """The proxy in front of the hub, its faults cleared afterwards (before `hub` cleans up)
    and its request log starting empty."""
    hub_endpoint.proxy.clear_requests()
    yield hub_endpoint.proxy
    hub_endpoint.proxy.clear_faults()


@pytest.fixture
def upstream_faults(upstream: TestCluster, upstream_endpoint: Endpoint) -> Iterator[FaultProxy]:
    upstream_endpoint.proxy.clear_requests()
    yield upstream_endpoint.proxy
    upstream_endpoint.proxy.clear_faults()


@pytest.fixture
def gcjob_hub_args(hub_kubeconfig: str, hub: TestCluster) -> list[str]:
    """`gcjob sweep` against the hub, deciding at once: no lock, no minimum age, no grace."""
    return ["--hub-kubeconfig", hub_kubeconfig, "--no-lock", "--min-age", "0s", "--grace", "0s"]


@pytest.fixture
def sweep(gcjob_hub_args: list[str]) -> HubSweep:
    """`sweep(ns, *args)`: gcjob against the hub, kept to the namespace `ns` a test made."""
    return HubSweep(tuple(gcjob_hub_args))


@pytest.fixture
def routes_args(gcjob_hub_args: list[str], upstream_kubeconfig: str) -> list[str]:
    """The routes sweep against the hub, its upstream cluster the upstream server."""
    return [*gcjob_hub_args, "--upstream-kubeconfig", upstream_kubeconfig, "--sweep", "routes"]


# -- the Karmada hub (testbed/karmada.py) ------------------------------------------------------


@dataclass
class KarmadaEndpoint:
    """The Karmada hub behind its own fault proxy, and the processes beside it."""

    endpoint: Endpoint
    hub: KarmadaHub


@pytest.fixture(scope="session")
def karmada_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KarmadaEndpoint]:
    why = unavailable()
    if why is not None:
        pytest.skip(why)
    try:
        binaries()
        crds_dir()
        karmada_files()
    except AssetsMissing as missing:
        pytest.fail(str(missing), pytrace=False)
    work = tmp_path_factory.mktemp("karmada")
    with KarmadaHub() as hub:
        server = hub.server
        proxy = FaultProxy(Target(server.url, server.ssl_context())).start(work)
        try:
            kubeconfig = server.write_kubeconfig(
                work / "karmada-hub-kubeconfig",
                context=HUB_CONTEXT,
                server=proxy.url,
                ca_file=proxy.ca_file,
            )
            yield KarmadaEndpoint(Endpoint(proxy, str(kubeconfig), HUB_CONTEXT, server), hub)
        finally:
            proxy.stop()


@dataclass
class Karmada:
    """A test's view of the Karmada hub: `cluster` (objects in namespaces of its own, cleaned
    up after the test; its requests go straight to the server, not through the proxy), `hub`
    (karmada-controller-manager: `hub.controllers_stopped()`), `faults` (the proxy in front of
    it: gcjob's requests, its faults cleared after the test), `args` (gcjob against it,
    deciding at once), `sweep(ns, ...)`, `propagate(ns)` and `bound(template)`."""

    cluster: TestCluster
    hub: KarmadaHub
    faults: FaultProxy
    args: tuple[str, ...]

    @property
    def sweep(self) -> HubSweep:
        return HubSweep(self.args)

    @property
    def kubeconfig(self) -> str:
        """gcjob's, through the proxy."""
        return self.args[1]

    def propagate(self, namespace: str, policy: str = "city-dfw") -> dict[str, Any]:
        """A city's PropagationPolicy in `namespace` (testbed/karmada.py city_policy): Karmada
        claims the companions there and makes their bindings."""
        return self.cluster.create_at(
            POLICIES.format(namespace=namespace), city_policy(namespace, policy)
        )

    def bound(self, template: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        """The binding Karmada made for `template` (as created), once the world has settled:
        Karmada has claimed the template (its policy's label and annotations: a new
        resourceVersion) and made the binding of that very version, owned by it; nothing of
        Karmada's writes either again."""
        meta = template["metadata"]
        kind, namespace, name = template["kind"], meta["namespace"], meta["name"]
        binding_name = f"{name}-{kind.lower()}"
        found: dict[str, Any] = {}

        def settled() -> bool:
            now = self.cluster.get(kind, namespace, name)
            made = self.cluster.get("ResourceBinding", namespace, binding_name)
            if now is None or made is None:
                return False
            claimed = "propagationpolicy.karmada.io/name" in (
                now["metadata"].get("annotations") or {}
            )
            resource = made["spec"]["resource"]
            owners = [r["uid"] for r in made["metadata"].get("ownerReferences") or ()]
            found.update(made)
            return (
                claimed
                and resource.get("resourceVersion") == now["metadata"]["resourceVersion"]
                and owners == [meta["uid"]]
            )

        wait_for(settled, timeout, f"for Karmada to bind {kind} {namespace}/{name}")
        return found


@pytest.fixture
def karmada(karmada_endpoint: KarmadaEndpoint) -> Iterator[Karmada]:
    """The Karmada hub, for one test. karmada-controller-manager is running when the test
    starts and is running again after it (a test that stopped it and failed)."""
    endpoint, hub = karmada_endpoint.endpoint, karmada_endpoint.hub
    if not hub.controllers_running:
        hub.start_controllers()
    # Straight to the server: the proxy's request log holds gcjob's requests alone.
    cluster = TestCluster(str(hub.kubeconfig), None)
    args = (
        "--hub-kubeconfig",
        endpoint.kubeconfig,
        "--no-lock",
        "--min-age",
        "0s",
        "--grace",
        "0s",
    )
    endpoint.proxy.clear_requests()
    yield Karmada(cluster, hub, endpoint.proxy, args)
    endpoint.proxy.clear_faults()
    if not hub.controllers_running:
        hub.start_controllers()
    cluster.cleanup()
